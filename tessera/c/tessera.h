/* The Tessera C ABI: load a program, configure backends with options at every scope, run a
 * method, read what the runtime did. C11; no C++ types cross it.
 *
 * Conventions:
 * - Handles (tessera_program, tessera_method, tessera_load_options, tessera_execute_options) are
 *   opaque; each has a *_free function, which accepts NULL.
 * - Every fallible function returns a tessera_status*: NULL means success; otherwise the caller
 *   owns the status and frees it with tessera_status_free. Its code and message are those of the
 *   C++ API (docs/usage.md), e.g. OptionUnknownKey with
 *   "xnnpack: unknown option 'num_thread' (did you mean 'num_threads'?)".
 * - Output parameters are written only on success.
 * - Strings returned through out-parameters are owned by the handle they came from and stay valid
 *   until it is freed (or, for outputs and delegate reports, as documented per function).
 * - Option values are text and are typed by the backend's schema: "4", "true", "0.5", "gpu".
 *   They go through the same validation as C++ (unknown key with a suggestion, wrong type, out of
 *   range, wrong scope, too long).
 * - A tessera_method is used by one thread at a time; programs and global options are
 *   thread-safe.
 */
#ifndef TESSERA_C_TESSERA_H_
#define TESSERA_C_TESSERA_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TESSERA_C_EXPORT __attribute__((visibility("default")))
#else
#define TESSERA_C_EXPORT
#endif

/** Bumped when a function or struct of this header changes incompatibly. */
#define TESSERA_C_ABI_VERSION 1
/** Most dims a tensor has. */
#define TESSERA_C_MAX_DIMS 8

/* ---- errors ---------------------------------------------------------------------------- */

/** Error codes; the values are those of tessera::Error (tessera/core/error.h). */
typedef enum tessera_error_code {
  TESSERA_OK = 0x00,
  TESSERA_ERROR_INTERNAL = 0x01,
  TESSERA_ERROR_INVALID_STATE = 0x02,
  TESSERA_ERROR_END_OF_METHOD = 0x03,
  TESSERA_ERROR_NOT_SUPPORTED = 0x10,
  TESSERA_ERROR_NOT_IMPLEMENTED = 0x11,
  TESSERA_ERROR_INVALID_ARGUMENT = 0x12,
  TESSERA_ERROR_INVALID_TYPE = 0x13,
  TESSERA_ERROR_OPERATOR_MISSING = 0x14,
  TESSERA_ERROR_INVALID_PROGRAM = 0x15,
  TESSERA_ERROR_SHAPE_MISMATCH = 0x16,
  TESSERA_ERROR_NOT_FOUND = 0x20,
  TESSERA_ERROR_MEMORY_ALLOCATION_FAILED = 0x21,
  TESSERA_ERROR_ACCESS_FAILED = 0x22,
  TESSERA_ERROR_TRUNCATED = 0x23,
  TESSERA_ERROR_ALREADY_EXISTS = 0x24,
  TESSERA_ERROR_DELEGATE_INVALID_COMPATIBILITY = 0x30,
  TESSERA_ERROR_DELEGATE_MEMORY_ALLOCATION_FAILED = 0x31,
  TESSERA_ERROR_DELEGATE_INVALID_HANDLE = 0x32,
  TESSERA_ERROR_DELEGATE_UNAVAILABLE = 0x33,
  TESSERA_ERROR_DELEGATE_EXECUTION_FAILED = 0x34,
  TESSERA_ERROR_OPTION_UNKNOWN_BACKEND = 0x40,
  TESSERA_ERROR_OPTION_UNKNOWN_KEY = 0x41,
  TESSERA_ERROR_OPTION_TYPE_MISMATCH = 0x42,
  TESSERA_ERROR_OPTION_OUT_OF_RANGE = 0x43,
  TESSERA_ERROR_OPTION_INVALID_CHOICE = 0x44,
  TESSERA_ERROR_OPTION_WRONG_SCOPE = 0x45,
  TESSERA_ERROR_OPTION_TOO_LONG = 0x46,
  TESSERA_ERROR_OPTION_PARSE_ERROR = 0x47,
  TESSERA_ERROR_MAX_ENUM = 0x7fffffff /* makes any int a valid value (codes added later) */
} tessera_error_code;

/** An error: a code and a message. NULL stands for success everywhere. */
typedef struct tessera_status tessera_status;

/** The code of `status`; TESSERA_OK for NULL. */
TESSERA_C_EXPORT tessera_error_code tessera_status_code(const tessera_status* status);
/** The message of `status` ("" for NULL); owned by the status. */
TESSERA_C_EXPORT const char* tessera_status_message(const tessera_status* status);
/** Frees a status; NULL is fine. */
TESSERA_C_EXPORT void tessera_status_free(tessera_status* status);
/** Stable name of a code ("OptionUnknownKey"); "Unknown" for a value that is not a code. */
TESSERA_C_EXPORT const char* tessera_error_name(tessera_error_code code);

/** The library version, "0.2.0". */
TESSERA_C_EXPORT const char* tessera_version(void);
/** TESSERA_C_ABI_VERSION of the library (compare with the header's). */
TESSERA_C_EXPORT int tessera_c_abi_version(void);

/* ---- tensors --------------------------------------------------------------------------- */

/** Element types; the values are those of tessera::ScalarType. */
typedef enum tessera_dtype {
  TESSERA_DTYPE_FLOAT32 = 0,
  TESSERA_DTYPE_FLOAT16 = 1,
  TESSERA_DTYPE_INT64 = 2,
  TESSERA_DTYPE_INT32 = 3,
  TESSERA_DTYPE_INT8 = 4,
  TESSERA_DTYPE_UINT8 = 5,
  TESSERA_DTYPE_BOOL = 6,
  TESSERA_DTYPE_MAX_ENUM = 0x7fffffff /* makes any int a valid value (checked at run time) */
} tessera_dtype;

/** Lower-case name of a dtype ("float32"); "unknown" for a value that is not one. */
TESSERA_C_EXPORT const char* tessera_dtype_name(tessera_dtype dtype);

/** An input or output of a loaded method: dtype and resolved shape (symbolic dims fixed). */
typedef struct tessera_tensor_info {
  const char* name; /* owned by the method */
  tessera_dtype dtype;
  size_t rank;
  int64_t dims[TESSERA_C_MAX_DIMS];
  size_t nbytes;
} tessera_tensor_info;

/* ---- backends and their option schemas ------------------------------------------------- */

typedef enum tessera_option_type {
  TESSERA_OPTION_BOOL = 0,
  TESSERA_OPTION_INT = 1,
  TESSERA_OPTION_DOUBLE = 2,
  TESSERA_OPTION_STRING = 3,
  TESSERA_OPTION_ENUM = 4,
  TESSERA_OPTION_MAX_ENUM = 0x7fffffff
} tessera_option_type;

/** Scope bits of tessera_option_spec.scopes (tessera::Scopes: one bit per settable level). */
#define TESSERA_SCOPE_COMPILE_SPEC 0x01u
#define TESSERA_SCOPE_GLOBAL 0x02u
#define TESSERA_SCOPE_LOAD 0x04u
#define TESSERA_SCOPE_DELEGATE 0x08u
#define TESSERA_SCOPE_EXECUTE 0x10u

/** One option a backend declares. Every pointer is static (lives as long as the process). */
typedef struct tessera_option_spec {
  const char* key;
  tessera_option_type type;
  const char* default_value;     /* as text: "0", "false", "gpu" */
  int64_t min_int, max_int;      /* TESSERA_OPTION_INT */
  double min_double, max_double; /* TESSERA_OPTION_DOUBLE */
  size_t max_length;             /* TESSERA_OPTION_STRING */
  const char* const* choices;    /* TESSERA_OPTION_ENUM; num_choices entries */
  size_t num_choices;
  unsigned scopes; /* TESSERA_SCOPE_* bits */
  int init_only;   /* 1: fixed once the backend initialised its shared state */
  const char* doc;
} tessera_option_spec;

/** Number of registered backends. */
TESSERA_C_EXPORT tessera_status* tessera_backend_count(size_t* count);
/** Name of backend `index` (sorted by name); static storage. NotFound past the end. */
TESSERA_C_EXPORT tessera_status* tessera_backend_name(size_t index, const char** name);
/** Loads the backend library at `path` and registers its backends (tessera::load_backend_library).
 * `num_registered` (may be NULL) gets how many it registered: 0 if it was already loaded. Errors:
 * NotFound (no such file), AccessFailed (the dynamic loader refused it), NotSupported (not a
 * Tessera backend library), DelegateInvalidCompatibility (another backend ABI version),
 * AlreadyExists (a backend name taken). Nothing is registered on error. */
TESSERA_C_EXPORT tessera_status* tessera_load_backend_library(const char* path,
                                                              size_t* num_registered);
/** Loads every libtessera_<name>.so in the ':'-separated `directories`
 * (tessera::load_backend_libraries); tries them all and returns the first error. */
TESSERA_C_EXPORT tessera_status* tessera_load_backend_libraries(const char* directories,
                                                                size_t* num_registered);
/** Whether `backend` can run here (device present); `reason` (may be NULL) says why not, ""
 * otherwise (static storage). OptionUnknownBackend for a name that is not registered. */
TESSERA_C_EXPORT tessera_status* tessera_backend_available(const char* backend, int* available,
                                                           const char** reason);
/** Number of options `backend` declares. */
TESSERA_C_EXPORT tessera_status* tessera_backend_option_count(const char* backend, size_t* count);
/** Option `index` of `backend`'s schema. NotFound past the end. */
TESSERA_C_EXPORT tessera_status* tessera_backend_option_spec(const char* backend, size_t index,
                                                             tessera_option_spec* spec);

/* ---- global options (the global level of tessera::OptionLevel) ------------------------- */

/** Sets one global option of `backend` (tessera::set_option). Init-only options fail with
 * InvalidState once the backend has initialised. */
TESSERA_C_EXPORT tessera_status* tessera_set_global_option(const char* backend, const char* key,
                                                           const char* value);
/** Writes the global value of `key` (or its default) as text into `buffer` of `size` bytes,
 * terminated. InvalidArgument if it does not fit (nothing written). */
TESSERA_C_EXPORT tessera_status* tessera_get_global_option(const char* backend, const char* key,
                                                           char* buffer, size_t size);
/** Forgets `backend`'s global options and unlocks its init-only options (for an application
 * that freed every method using the backend). */
TESSERA_C_EXPORT tessera_status* tessera_reset_global_options(const char* backend);

/* ---- device ---------------------------------------------------------------------------- */

/** This machine as one JSON object (tessera-run --device-info --json): CPUs, clusters, caches,
 * memory, ISA, power, thermal state, load and, with `with_opencl` non-zero, OpenCL devices.
 * Free `*json` with tessera_string_free. */
TESSERA_C_EXPORT tessera_status* tessera_device_info_json(int with_opencl, char** json);
/** Frees a string this library allocated; NULL is fine. */
TESSERA_C_EXPORT void tessera_string_free(char* string);

/* ---- programs -------------------------------------------------------------------------- */

typedef struct tessera_program tessera_program;

/** Maps and verifies a program file (.tsr). Errors: NotFound, AccessFailed, InvalidProgram,
 * Truncated, NotSupported, with the check that failed. */
TESSERA_C_EXPORT tessera_status* tessera_program_load_file(const char* path,
                                                           tessera_program** program);
/** Verifies a program held in memory. The bytes are copied (into 64-byte aligned storage), so
 * `data` may be freed on return. */
TESSERA_C_EXPORT tessera_status* tessera_program_load_memory(const void* data, size_t size,
                                                             tessera_program** program);
/** Frees a program. Every method loaded from it must be freed first. */
TESSERA_C_EXPORT void tessera_program_free(tessera_program* program);
TESSERA_C_EXPORT tessera_status* tessera_program_method_count(const tessera_program* program,
                                                              size_t* count);
/** Name of method `index`; owned by the program. NotFound past the end. */
TESSERA_C_EXPORT tessera_status* tessera_program_method_name(const tessera_program* program,
                                                             size_t index, const char** name);

/* ---- load options (load and delegate levels, dims, retargeting, fallback, policy) -------- */

typedef struct tessera_load_options tessera_load_options;

TESSERA_C_EXPORT tessera_status* tessera_load_options_create(tessera_load_options** options);
TESSERA_C_EXPORT void tessera_load_options_free(tessera_load_options* options);
/** A load-scope option for every delegate of `backend`; validated now against its schema. */
TESSERA_C_EXPORT tessera_status* tessera_load_options_set_option(tessera_load_options* options,
                                                                 const char* backend,
                                                                 const char* key,
                                                                 const char* value);
/** A delegate-scope option for one delegate, by id ("xnnpack#1"); validated against the schema
 * of the backend the id names. */
TESSERA_C_EXPORT tessera_status* tessera_load_options_set_delegate_option(
    tessera_load_options* options, const char* delegate_id, const char* key, const char* value);
/** Gives symbolic dim `name` its value ("batch", 4); checked against the program at load. */
TESSERA_C_EXPORT tessera_status* tessera_load_options_set_dim(tessera_load_options* options,
                                                              const char* name, int64_t value);
/** Declares the shape input `name` will have; symbolic dims it fixes are taken from it. */
TESSERA_C_EXPORT tessera_status* tessera_load_options_set_input_shape(tessera_load_options* options,
                                                                      const char* name,
                                                                      const int64_t* dims,
                                                                      size_t rank);
/** Runs delegates compiled for backend `from` on backend `to`. */
TESSERA_C_EXPORT tessera_status* tessera_load_options_add_retarget(tessera_load_options* options,
                                                                   const char* from,
                                                                   const char* to);
/** Backends to try in order when a delegate's backend fails: "opencl,xnnpack,portable". */
TESSERA_C_EXPORT tessera_status* tessera_load_options_set_fallback(tessera_load_options* options,
                                                                   const char* chain);
/** Runs delegates whose backend would compile device code at load (an OpenCL delegate whose
 * programs are not cached) on CPU backend `backend` ("xnnpack", "onednn", "auto"; "" = off)
 * while their own backend initialises in the background; they move to it between two
 * executes. InvalidArgument for an over-long name; an unknown backend fails the load. */
TESSERA_C_EXPORT tessera_status* tessera_load_options_set_startup_backend(
    tessera_load_options* options, const char* backend);
/** "auto", "latency", "balanced" or "power_saver". */
TESSERA_C_EXPORT tessera_status* tessera_load_options_set_policy(tessera_load_options* options,
                                                                 const char* policy);
/** Non-zero: from now on, an unknown backend or key given to the two setters above (and any
 * met at load) logs a warning and is skipped instead of failing, to survive version skew.
 * Every other error (type, range, scope) stays an error. */
TESSERA_C_EXPORT tessera_status* tessera_load_options_set_lenient(tessera_load_options* options,
                                                                  int lenient);
/** What execute does when a delegate's backend fails: "fail" (the default: the error goes to
 * the caller) or "fallback" (the delegate moves to the next backend of the fallback chain that
 * is available and supports its ops, and runs again once in the same call; the move is reported
 * in tessera_delegate_info). InvalidArgument naming both for another value. */
TESSERA_C_EXPORT tessera_status* tessera_load_options_set_on_execute_failure(
    tessera_load_options* options, const char* mode);
/** How each delegate's backend is chosen: "auto" (the default: a choice remembered in the
 * selection cache, else measured and remembered when the cache is usable, else the program's
 * backends), "fixed" (the program's backends) or "measure" (always measured, then remembered).
 * InvalidArgument naming the three for another value. */
TESSERA_C_EXPORT tessera_status* tessera_load_options_set_selection(tessera_load_options* options,
                                                                    const char* mode);
/** Directory of the selection cache (copied; created when missing). "" disables the cache
 * ("auto" then runs the program's backends); NULL restores the default,
 * $XDG_CACHE_HOME/tessera/selection, else $HOME/.cache/tessera/selection. */
TESSERA_C_EXPORT tessera_status* tessera_load_options_set_selection_cache_dir(
    tessera_load_options* options, const char* dir);
/** Size bound of the selection cache's entries in KiB (default 16384; 0 = none): after a load
 * writes an entry, the least recently used (written or read) are removed until the entries
 * fit; one another load is using stays. InvalidArgument outside 0 to 2^30; nothing changes
 * then. */
TESSERA_C_EXPORT tessera_status* tessera_load_options_set_selection_cache_max_kb(
    tessera_load_options* options, int64_t max_kb);
/** A measured candidate whose outputs differ from the reference's by more than `tolerance` times
 * the reference's max |value| is rejected (default 1e-4). InvalidArgument unless a finite
 * number >= 0; nothing changes then. */
TESSERA_C_EXPORT tessera_status* tessera_load_options_set_selection_tolerance(
    tessera_load_options* options, double tolerance);
/** The default selection budget: derived at load (see below). */
#define TESSERA_SELECTION_BUDGET_AUTO (-1.0)
/** Time one delegate's measurement may spend, inits and runs, before option variants and
 * backends nobody listed are skipped, in ms; or TESSERA_SELECTION_BUDGET_AUTO (the default):
 * the runs may take twice the first candidate's init, which is what a fixed load spends on the
 * delegate. InvalidArgument unless a finite number >= 0 or TESSERA_SELECTION_BUDGET_AUTO;
 * nothing changes then. */
TESSERA_C_EXPORT tessera_status* tessera_load_options_set_selection_budget_ms(
    tessera_load_options* options, double budget_ms);
/** How many runs the application expects to make per load (default 100): the fastest backend
 * is kept unless another one's init plus this many runs comes to at least 3% less, and an
 * option variant whose init takes
 * longer than the chosen configuration's must repay the difference within these runs, by what
 * it saves per run, or it is not taken (every load from the selection cache initialises the
 * chosen configuration again). A service that loads once and runs for hours
 * sets far more. InvalidArgument outside 1 to 2^40; nothing changes then. */
TESSERA_C_EXPORT tessera_status* tessera_load_options_set_selection_runs_per_load(
    tessera_load_options* options, int64_t runs);
/** Non-zero: option values that lower precision (oneDNN precision=bf16) are measured too; they
 * must still pass the tolerance, so raise it as well (bf16: about 1e-2). */
TESSERA_C_EXPORT tessera_status* tessera_load_options_set_selection_lower_precision(
    tessera_load_options* options, int allow);

/* ---- execute options (the execute level) ---------------------------------------------- */

typedef struct tessera_execute_options tessera_execute_options;

TESSERA_C_EXPORT tessera_status* tessera_execute_options_create(tessera_execute_options** options);
TESSERA_C_EXPORT void tessera_execute_options_free(tessera_execute_options* options);
/** A per-call option; only keys the schema marks execute-scoped (OptionWrongScope otherwise). */
TESSERA_C_EXPORT tessera_status* tessera_execute_options_set_option(
    tessera_execute_options* options, const char* backend, const char* key, const char* value);

/* ---- methods --------------------------------------------------------------------------- */

typedef struct tessera_method tessera_method;

/** Loads method `name` of `program`; `options` may be NULL (defaults). The options are read
 * during the call only. */
TESSERA_C_EXPORT tessera_status* tessera_method_load(const tessera_program* program,
                                                     const char* name,
                                                     const tessera_load_options* options,
                                                     tessera_method** method);
TESSERA_C_EXPORT void tessera_method_free(tessera_method* method);

TESSERA_C_EXPORT tessera_status* tessera_method_input_count(const tessera_method* method,
                                                            size_t* count);
TESSERA_C_EXPORT tessera_status* tessera_method_output_count(const tessera_method* method,
                                                             size_t* count);
/** Name, dtype and resolved shape of input `index`. NotFound past the end. */
TESSERA_C_EXPORT tessera_status* tessera_method_input_info(const tessera_method* method,
                                                           size_t index, tessera_tensor_info* info);
TESSERA_C_EXPORT tessera_status* tessera_method_output_info(const tessera_method* method,
                                                            size_t index,
                                                            tessera_tensor_info* info);
/** Copies `data` into input `index`. `dtype`, `dims` and `rank` must match the input
 * (InvalidType, ShapeMismatch naming both) and `nbytes` its size (InvalidArgument). */
TESSERA_C_EXPORT tessera_status* tessera_method_set_input(tessera_method* method, size_t index,
                                                          tessera_dtype dtype, const int64_t* dims,
                                                          size_t rank, const void* data,
                                                          size_t nbytes);
/** Zero copy: the method's own buffer of input `index` (`*nbytes` bytes), to fill in place.
 * Valid until the method is freed. */
TESSERA_C_EXPORT tessera_status* tessera_method_input_buffer(tessera_method* method, size_t index,
                                                             void** data, size_t* nbytes);
/** Runs the method; `options` (per-call options) may be NULL. */
TESSERA_C_EXPORT tessera_status* tessera_method_execute(tessera_method* method,
                                                        const tessera_execute_options* options);
/** Output `index` in place; valid until the next execute or tessera_method_free. */
TESSERA_C_EXPORT tessera_status* tessera_method_output(const tessera_method* method, size_t index,
                                                       const void** data, size_t* nbytes);
/** Copies output `index` into `buffer`; InvalidArgument if `size` is smaller than the output. */
TESSERA_C_EXPORT tessera_status* tessera_method_copy_output(const tessera_method* method,
                                                            size_t index, void* buffer,
                                                            size_t size);
/** Value of symbolic dim `name` this method was loaded with. NotFound for another name. */
TESSERA_C_EXPORT tessera_status* tessera_method_symbol_value(const tessera_method* method,
                                                             const char* name, int64_t* value);

/* ---- what the load did ----------------------------------------------------------------- */

/** One delegate: the backend that runs it, the one the program named, and why it moved ("" if
 * it did not). Strings are owned by the method and stay valid until it is freed or an execute
 * moves one of its delegates to another backend (on_execute_failure "fallback"). */
typedef struct tessera_delegate_info {
  const char* id; /* "xnnpack#0" */
  const char* backend;
  const char* requested_backend;
  const char* reason;
  size_t num_nodes;
  size_t num_options; /* entries for tessera_method_delegate_option */
  /* Moves at execute time (on_execute_failure "fallback") and why the last one happened ("" if
   * none). */
  int execute_fallbacks;
  const char* execute_fallback_reason;
} tessera_delegate_info;

/** One effective option of a delegate. Strings are owned by the method. */
typedef struct tessera_delegate_option {
  const char* key;
  const char* value;  /* the requested (effective) value as text */
  const char* source; /* "default", "compile_spec", "global", "load", "delegate", "selection" */
  const char* origin; /* label of the front end that set it, "" if none */
  /* The value the backend derived when the option was left at auto, and why; NULL if the
   * backend derived nothing for this key. */
  const char* resolved_value;
  const char* resolved_reason;
} tessera_delegate_option;

/** Policy the method was loaded under: effective policy name and the reason. Owned by the
 * method. */
TESSERA_C_EXPORT tessera_status* tessera_method_policy(const tessera_method* method,
                                                       const char** policy, const char** reason);
TESSERA_C_EXPORT tessera_status* tessera_method_delegate_count(const tessera_method* method,
                                                               size_t* count);
TESSERA_C_EXPORT tessera_status* tessera_method_delegate_info(const tessera_method* method,
                                                              size_t index,
                                                              tessera_delegate_info* info);
/** What a startup backend did for one delegate (tessera_load_options_set_startup_backend).
 * Strings are owned by the method and change with the next execute or wait. */
typedef struct tessera_delegate_startup {
  const char* backend;         /* the startup backend; "" when none served the delegate */
  const char* target;          /* the delegate's own backend, initialised in the background */
  const char* state;           /* "building", "switched", "failed" or "" */
  const char* reason;          /* why a startup backend was or was not used */
  const char* failure;         /* why the background init failed ("" otherwise) */
  uint64_t startup_executes;   /* executes served by `backend` */
  uint64_t target_executes;    /* executes served by `target` */
  int64_t switched_at_execute; /* first execute on `target`, -1 before the switch */
  double switched_after_ms;    /* after the background init started */
  double build_ms;             /* the background init's duration (0 while building) */
} tessera_delegate_startup;

TESSERA_C_EXPORT tessera_status* tessera_method_delegate_startup(const tessera_method* method,
                                                                 size_t index,
                                                                 tessera_delegate_startup* info);
/** Waits for the background inits of a startup backend's delegates, at most `timeout_ms` (< 0:
 * no limit), and moves those that are ready to their own backend; `*done` (may be NULL) is 1
 * when none is pending any more, else 0. */
TESSERA_C_EXPORT tessera_status* tessera_method_wait_for_startup(tessera_method* method,
                                                                 double timeout_ms, int* done);
/** How a delegate's backend was chosen at load (tessera_load_options_set_selection). Strings
 * are owned by the method and stay valid until it is freed or an execute moves one of its
 * delegates to another backend. */
typedef struct tessera_delegate_selection {
  const char* mode;           /* "fixed" or "measure" (also for a choice read from the cache) */
  int cached;                 /* read from the selection cache (made by an earlier load) */
  int disturbed_measurements; /* see DelegateInfo::selection in docs/usage.md; 0 when clean */
  const char* summary;        /* "measured: onednn 2.10 ms (chosen), xnnpack 3.02 ms", or why
                                 auto did not measure */
  size_t num_candidates;      /* entries for tessera_method_delegate_selection_candidate */
} tessera_delegate_selection;

/** One candidate of a measured selection. Strings are owned by the method. */
typedef struct tessera_selection_candidate {
  const char* backend;
  const char* options; /* the option value tried on top of the load's ("num_threads=1"), or "" */
  double median_ms;    /* of its timed runs; 0 when it did not run */
  int runs;            /* timed runs the median is of */
  int disturbed_runs;  /* timed runs left out: the measuring thread was off its CPU */
  double init_ms;      /* initialising it on the delegate; 0 when it was not initialised */
  int accepted;        /* ran, and its outputs matched the reference within the tolerance */
  int chosen;
  const char* reason; /* why it was rejected or skipped; "reference" or "" when accepted */
  double alone_init_ms; /* its init made again alone, to weigh a variant's against; 0: not made */
} tessera_selection_candidate;

TESSERA_C_EXPORT tessera_status* tessera_method_delegate_selection(
    const tessera_method* method, size_t index, tessera_delegate_selection* info);
/** Candidate `candidate` (0 .. num_candidates-1) of delegate `delegate`'s selection. NotFound
 * past either end. */
TESSERA_C_EXPORT tessera_status* tessera_method_delegate_selection_candidate(
    const tessera_method* method, size_t delegate, size_t candidate,
    tessera_selection_candidate* info);
/** Option `option` (0 .. num_options-1) of delegate `delegate`. NotFound past either end. */
TESSERA_C_EXPORT tessera_status* tessera_method_delegate_option(const tessera_method* method,
                                                                size_t delegate, size_t option,
                                                                tessera_delegate_option* info);

/* ---- traces ---------------------------------------------------------------------------- */

/** The events of a stopped trace (tessera::Trace): spans of program and method loads, delegate
 * inits, executes, delegate calls and the operators or kernels backends report with their
 * profiling option on. */
typedef struct tessera_trace tessera_trace;

/** One span. Strings are owned by the trace. */
typedef struct tessera_trace_event {
  const char* name;     /* "execute forward", "xnnpack#0", an operator's name, ... */
  const char* category; /* "load", "init", "execute", "delegate", "kernel", "operator" */
  double start_us;      /* microseconds since the trace started */
  double dur_us;
  uint32_t tid;       /* the recording thread (Linux thread id) */
  const char* detail; /* e.g. "backend=xnnpack"; "" if none */
} tessera_trace_event;

/** Starts recording a trace, process-wide. InvalidState if one is running already. */
TESSERA_C_EXPORT tessera_status* tessera_trace_start(void);
/** Non-zero while a trace is running. */
TESSERA_C_EXPORT int tessera_trace_running(void);
/** Stops the running trace; `*trace` receives its events in the order they ended (free with
 * tessera_trace_free). InvalidState if no trace is running. */
TESSERA_C_EXPORT tessera_status* tessera_trace_stop(tessera_trace** trace);
TESSERA_C_EXPORT void tessera_trace_free(tessera_trace* trace);
TESSERA_C_EXPORT tessera_status* tessera_trace_event_count(const tessera_trace* trace,
                                                           size_t* count);
/** Event `index` of the trace. NotFound past the end. */
TESSERA_C_EXPORT tessera_status* tessera_trace_get_event(const tessera_trace* trace, size_t index,
                                                         tessera_trace_event* event);
/** Writes the trace as Chrome trace-event JSON (opens in Perfetto) to `path`, replacing it.
 * AccessFailed naming the path when it cannot be written. */
TESSERA_C_EXPORT tessera_status* tessera_trace_write_chrome_json(const tessera_trace* trace,
                                                                 const char* path);
/** The same JSON as a string, malloc'ed: free with tessera_string_free. */
TESSERA_C_EXPORT tessera_status* tessera_trace_chrome_json(const tessera_trace* trace, char** json);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_C_TESSERA_H_ */
