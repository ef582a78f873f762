// BackendInterface: what every backend implements (docs/architecture.md, "The order of calls a
// backend sees", says when the compiler and the runtime call each method).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/backend/compile_spec.h"
#include "tessera/backend/freeable_buffer.h"
#include "tessera/backend/op_view.h"
#include "tessera/backend/option_schema.h"
#include "tessera/backend/option_value.h"
#include "tessera/core/evalue.h"
#include "tessera/core/result.h"
#include "tessera/core/span.h"
#include "tessera/core/status.h"

namespace tessera {

class BackendInitContext;
class BackendExecutionContext;
class BackendOptionContext;

/// A backend's per-delegate state, opaque to the runtime: the backend allocates it, converts
/// with to_handle/from_handle, and destroys it in destroy().
struct DelegateHandle;

template <typename T>
DelegateHandle* to_handle(T* state) {
  return reinterpret_cast<DelegateHandle*>(state);
}
template <typename T>
T* from_handle(DelegateHandle* handle) {
  return reinterpret_cast<T*>(handle);
}
template <typename T>
const T* from_handle(const DelegateHandle* handle) {
  return reinterpret_cast<const T*>(handle);
}

/// A delegate's compiled bytes, produced AOT by preprocess (heap allowed: compiler side).
using Payload = std::vector<uint8_t>;

/// A backend. Const methods may be called from several threads at once (different delegates
/// load and execute concurrently); set_option/get_option are serialised per backend by the
/// framework.
/// An option value measured selection (LoadOptions::selection) may try on a delegate besides
/// the value the load resolved, when no scope set the option (its source is the default).
struct SelectionVariant {
  const char* key;    // an option of the backend's schema
  const char* value;  // as text, parsed against the schema ("winograd", "bf16", "1")
  /// Changes results beyond float32 rounding (bf16 arithmetic): tried only when the load allows
  /// lower precision (LoadOptions::selection_lower_precision), and still checked against
  /// selection_tolerance. Otherwise the value must change speed only.
  bool lowers_precision = false;
};

class BackendInterface {
 public:
  virtual ~BackendInterface();

  /// Whether the backend can run on this machine (device present, library loadable).
  virtual bool is_available() const = 0;

  /// Why is_available() is false, for error messages ("no OpenCL platform (clGetPlatformIDs:
  /// -1001)"); "" when there is nothing more to say. Storage must outlive the backend. Default: "".
  virtual const char* unavailable_reason() const;

  /// How the backend derives the options left at `auto` from the load's policy and DeviceInfo,
  /// in a sentence or a few (docs/options.md prints it under the backend's table). Must be
  /// static text. Default: "" (nothing derived).
  virtual const char* derivation_doc() const;

  /// What identifies the build of the library the backend runs on ("oneDNN 3.0.0 (hash ...)"),
  /// so that caches of measured results (the selection cache) are not reused after an upgrade.
  /// Storage must outlive the backend. Default: "" (nothing beyond Tessera's own version).
  virtual const char* build_id() const;

  /// Option values measured selection may try on a delegate (see SelectionVariant); a static
  /// array. Besides these, a backend with uses_cpu_thread_pool() and an integer `num_threads`
  /// option gets num_threads=1 tried when the policy gives it more threads (small delegates
  /// often run faster on one). Default: none.
  virtual Span<const SelectionVariant> selection_variants() const;

  /// Whether `key`=`value` (one of selection_variants()) would build the delegate `handle`,
  /// initialised with the load's options, any differently. Measured selection does not
  /// initialise and time a variant the backend says changes nothing for this delegate (oneDNN's
  /// conv_algorithm=winograd where no convolution is one Winograd takes). Default: true.
  virtual bool variant_changes(const DelegateHandle* handle, std::string_view key,
                               std::string_view value) const;

  /// Every option the backend accepts. Must return the same static array on every call.
  /// Default: no options.
  virtual Span<const OptionSpec> option_schema() const;

  /// Whether the backend can run `op` (used by the AOT partitioner). Default: false.
  virtual bool supports_op(const OpView& op) const;

  /// Why supports_op(op) is false, in one line for reports (the conformance suite's skipped
  /// cases, docs/ops-support.md). "" when the op is supported. Default: "" when supports_op
  /// accepts `op`, else "not supported" (no more detail).
  virtual std::string unsupported_reason(const OpView& op) const;

  /// AOT: encodes a subgraph into this backend's payload. Default: NotSupported (the compiler
  /// then stores the portable graph IR).
  virtual Result<Payload> preprocess(const SubgraphView& subgraph,
                                     Span<const CompileSpec> compile_specs) const;

  /// Creates the state for one delegate. `context` carries the validated, resolved options
  /// (compile specs already applied) and must not be kept after return; `payload` may be freed
  /// by the backend once it no longer needs it. Compile specs are passed raw for backends that
  /// read keys outside their schema.
  virtual Result<DelegateHandle*> init(BackendInitContext& context, FreeableBuffer* payload,
                                       Span<const CompileSpec> compile_specs) const = 0;

  /// Whether init of this delegate with these options would now do slow one-time work that a
  /// cache of the backend spares later loads (compiling device code not in its program cache).
  /// A load with LoadOptions::startup_backend then runs the delegate on a CPU backend while init
  /// runs on a background thread. `context` is as for init, except that its method allocator is
  /// null; the query changes nothing (no init-only lock, no cache write) and must be much
  /// cheaper than a cold init. An error (such as a bad option value) is reported by the load.
  /// Default: false (init costs the same every time).
  virtual Result<bool> init_would_be_cold(const BackendInitContext& context,
                                          const FreeableBuffer& payload,
                                          Span<const CompileSpec> compile_specs) const;

  /// Runs one delegate. `args` are the delegate's inputs followed by its outputs; the runtime
  /// has set their data and sizes and the backend writes outputs in place.
  virtual Status execute(BackendExecutionContext& context, DelegateHandle* handle,
                         Span<EValue*> args) const = 0;

  /// Releases a handle returned by init. Default: nothing.
  virtual void destroy(DelegateHandle* handle) const;

  /// Whether the backend runs its delegates on CPU worker threads of its own (a thread pool or
  /// an OpenMP team). When a Method has delegates on two such backends, the runtime names the
  /// others to each at init (BackendInitContext::cpu_pool_peers) so that their pools do not
  /// oversubscribe the CPUs. Default: false.
  virtual bool uses_cpu_thread_pool() const;

  /// Whether the thread that calls execute does the delegate's work (all of it, or its share
  /// beside the backend's workers) and stays on its CPU until the run ends, instead of waiting
  /// for a device or other threads asleep. Measured selection then counts any time that thread
  /// spent off its CPU during a timed run as disturbance (see RunTimer). Default: false.
  virtual bool runs_on_calling_thread() const;

  /// Whether init may run on one thread while another backend's init runs on another. Measured
  /// selection then initialises two candidates of a delegate at once on a machine with two or
  /// more usable CPUs (both must say so), the second on a thread of its own; the first's warm-up
  /// (an untimed run) may start beside the second's init, and every timed run comes after both.
  /// A backend that says so promises that its init takes no timings of its own (a tuner timing
  /// kernels would read the other's work), that whatever process-wide state its init, execute
  /// and destroy touch is thread-safe, and that it needs no method allocator (the context's
  /// refuses every allocation on the second thread). Default: false.
  virtual bool init_beside_other_backends() const;

  /// Sends this backend's idle CPU workers to sleep (or ends them) now if they busy-wait for
  /// more work after a run, so that another backend run next has the CPUs. Measured selection
  /// calls it on the thread that runs the candidates, before it runs a candidate of another
  /// backend (never before this backend's own runs). Safe from any thread at any time; it may
  /// wait for a run in progress, and may reach only the calling thread's workers (an OpenMP
  /// team belongs to the thread that started it: oneDNN's). Default: nothing (no pool).
  virtual void park_idle_workers() const;

  /// Hook called with global options after the framework validated them (Global scope, all of
  /// one set_option call). Return an error to reject the whole set. Called with the backend's
  /// option lock held: must not call set_option/get_option. Default: accept.
  virtual Status set_option(BackendOptionContext& context, Span<const BackendOption> options);

  /// Hook called after the framework filled `options` with the stored global values (or
  /// defaults); a backend may overwrite them with live values. Default: nothing.
  virtual Status get_option(BackendOptionContext& context, Span<BackendOption> options);
};

}  // namespace tessera
