// The C ABI (tessera/c/tessera.h) over the C++ runtime API. Every entry point converts a
// tessera::Status into a heap tessera_status (NULL for OK) and catches every exception: none
// may cross into C.
#include "tessera/c/tessera.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/backend/backend_entry.h"
#include "tessera/backend/backend_library.h"
#include "tessera/backend/derived_values.h"
#include "tessera/backend/device_info.h"
#include "tessera/backend/execute_options.h"
#include "tessera/backend/global_options.h"
#include "tessera/backend/option_schema.h"
#include "tessera/backend/options_map.h"
#include "tessera/backend/policy.h"
#include "tessera/backend/registry.h"
#include "tessera/backend/resolved_options.h"
#include "tessera/core/error.h"
#include "tessera/core/log.h"
#include "tessera/core/scalar_type.h"
#include "tessera/core/status.h"
#include "tessera/core/trace.h"
#include "tessera/runtime/data_loader.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/on_execute_failure.h"
#include "tessera/runtime/program.h"

#ifndef TESSERA_VERSION_STRING
#error "TESSERA_VERSION_STRING is set by CMakeLists.txt (the project version)"
#endif

using tessera::Error;
using tessera::Status;

struct tessera_status {
  tessera_error_code code;
  char message[Status::kMaxMessage];
};

struct tessera_program {
  std::optional<tessera::MmapDataLoader> mmap;
  std::optional<tessera::BufferDataLoader> buffer;
  void* aligned = nullptr;  // the copy tessera_program_load_memory made; freed with the program
  std::optional<tessera::Program> program;
  std::vector<std::string> method_names;
  ~tessera_program() {
    program.reset();
    std::free(aligned);
  }
};

struct tessera_load_options {
  tessera::LoadOptions load;
  tessera::LoadBackendOptionsMap per_backend;
  tessera::DelegateOptionsMap per_delegate;
  std::string selection_cache_dir;  // what load.selection_cache_dir points at, when set
};

struct tessera_execute_options {
  tessera::ExecuteOptions options;
};

namespace {

struct DelegateReport {
  std::string id, backend, requested_backend, reason;
  size_t num_nodes = 0;
  int execute_fallbacks = 0;
  std::string execute_fallback_reason;
  struct Option {
    std::string key, value, source, origin;
    bool has_resolved = false;
    std::string resolved_value, resolved_reason;
  };
  std::vector<Option> options;
};

}  // namespace

struct tessera_method {
  explicit tessera_method(tessera::Method m) : method(std::move(m)) {}
  tessera::Method method;
  std::vector<std::string> input_names, output_names;
  // Rebuilt from the Method's DelegateInfo when a delegate moved since (a startup backend's
  // switch, an execute fallback), by the accessors below.
  mutable std::vector<DelegateReport> delegates;
  std::string policy, policy_reason;
};

struct tessera_trace {
  std::vector<tessera::TraceEvent> events;
};

namespace {

// The codes of the C header must be those of tessera::Error.
static_assert(TESSERA_ERROR_INTERNAL == static_cast<int>(Error::Internal));
static_assert(TESSERA_ERROR_SHAPE_MISMATCH == static_cast<int>(Error::ShapeMismatch));
static_assert(TESSERA_ERROR_ALREADY_EXISTS == static_cast<int>(Error::AlreadyExists));
static_assert(TESSERA_SELECTION_BUDGET_AUTO == tessera::LoadOptions::kSelectionBudgetAuto);
static_assert(TESSERA_ERROR_DELEGATE_EXECUTION_FAILED ==
              static_cast<int>(Error::DelegateExecutionFailed));
static_assert(TESSERA_ERROR_OPTION_PARSE_ERROR == static_cast<int>(Error::OptionParseError));
static_assert(TESSERA_DTYPE_BOOL == static_cast<int>(tessera::ScalarType::Bool));
static_assert(TESSERA_C_MAX_DIMS == tessera::kMaxDims);
// The scope bits of the C header are those of tessera::Scopes (tessera_option_spec.scopes copies
// the mask).
static_assert(TESSERA_SCOPE_COMPILE_SPEC ==
              tessera::Scopes(tessera::OptionLevel::CompileSpec).bits);
static_assert(TESSERA_SCOPE_GLOBAL == tessera::Scopes(tessera::OptionLevel::Global).bits);
static_assert(TESSERA_SCOPE_LOAD == tessera::Scopes(tessera::OptionLevel::Load).bits);
static_assert(TESSERA_SCOPE_DELEGATE == tessera::Scopes(tessera::OptionLevel::Delegate).bits);
static_assert(TESSERA_SCOPE_EXECUTE == tessera::Scopes(tessera::OptionLevel::Execute).bits);

// Returned when a status cannot be allocated; tessera_status_free leaves it alone.
tessera_status g_out_of_memory = {TESSERA_ERROR_MEMORY_ALLOCATION_FAILED,
                                  "out of memory allocating a tessera_status"};

tessera_status* make_status(Error code, const char* message) {
  auto* s = new (std::nothrow) tessera_status;
  if (s == nullptr) return &g_out_of_memory;
  s->code = static_cast<tessera_error_code>(code);
  std::snprintf(s->message, sizeof s->message, "%s", message);
  return s;
}

tessera_status* to_c(const Status& status) {
  if (status.is_ok()) return nullptr;
  return make_status(status.code(), status.message());
}

// Runs `body` (returning a Status), turning exceptions into Internal/MemoryAllocationFailed.
template <typename Body>
tessera_status* guarded(const char* function, Body&& body) {
  try {
    return to_c(body(function));
  } catch (const std::bad_alloc&) {
    return to_c(Status::error(Error::MemoryAllocationFailed, "%s: out of memory", function));
  } catch (const std::exception& e) {
    return to_c(Status::error(Error::Internal, "%s: %s", function, e.what()));
  } catch (...) {
    return to_c(Status::error(Error::Internal, "%s: unknown exception", function));
  }
}

Status null_argument(const char* function, const char* name) {
  return Status::error(Error::InvalidArgument, "%s: %s is NULL", function, name);
}

#define TESSERA_C_REQUIRE(arg)                            \
  do {                                                    \
    if ((arg) == nullptr) return null_argument(fn, #arg); \
  } while (false)

// Strings that must outlive every call (option defaults as text): kept for the process.
const char* intern(std::string text) {
  static std::mutex mutex;
  static std::set<std::string>* pool = new std::set<std::string>;  // never freed: static storage
  std::lock_guard<std::mutex> lock(mutex);
  return pool->insert(std::move(text)).first->c_str();
}

tessera::Result<tessera::Span<const tessera::OptionSpec>> schema_of(std::string_view backend) {
  std::shared_ptr<tessera::detail::BackendEntry> entry =
      tessera::detail::find_backend_entry(backend);
  if (!entry) return tessera::detail::unknown_backend_status(backend, Error::OptionUnknownBackend);
  TESSERA_ASSIGN_OR_RETURN(tessera::BackendInterface * b, tessera::get_backend(backend));
  return b->option_schema();
}

// Parses `value` for `backend`.`key` and checks it at `scope`: the errors of the C++ front ends
// (unknown key with a suggestion, wrong type, range, choices, scope, length).
Status make_option(std::string_view backend, const char* key, const char* value,
                   tessera::OptionLevel scope, tessera::BackendOption* out) {
  TESSERA_ASSIGN_OR_RETURN(tessera::Span<const tessera::OptionSpec> schema, schema_of(backend));
  int index = tessera::find_option_spec(schema, key);
  if (index < 0) {
    // "backend_option.GpuAcc.TuningLevel": one entry of an option that takes entries; the value
    // text is the entry's.
    const int entries = tessera::find_entry_spec(schema, key);
    if (entries < 0) return tessera::unknown_option_status(backend, schema, key);
    tessera::BackendOption entry;
    TESSERA_RETURN_IF_ERROR(entry.set_key(key));
    TESSERA_RETURN_IF_ERROR(entry.set_string(value));
    TESSERA_RETURN_IF_ERROR(tessera::validate_entry_option(
        backend, schema[static_cast<size_t>(entries)], entry, scope));
    *out = entry;
    return Status::ok();
  }
  const tessera::OptionSpec& spec = schema[static_cast<size_t>(index)];
  tessera::BackendOption option;
  TESSERA_RETURN_IF_ERROR(tessera::parse_option_value(backend, spec, value, &option));
  TESSERA_RETURN_IF_ERROR(tessera::validate_option_for(backend, spec, option, scope));
  *out = option;
  return Status::ok();
}

// Lenient load options skip an unknown backend or key with a warning, as the C++ front ends do
// under Validation::Lenient. True if `status` was such a skip.
bool skipped_leniently(const tessera_load_options* options, const Status& status) {
  if (!options->load.lenient_options) return false;
  if (status.code() != Error::OptionUnknownKey && status.code() != Error::OptionUnknownBackend) {
    return false;
  }
  TESSERA_LOG_WARNING("%s (skipped: lenient load options)", status.message());
  return true;
}

std::string format_value(const tessera::BackendOption& option) {
  char buf[tessera::kMaxOptionStringLength + 8];
  return option.format_value(buf, sizeof buf);
}

void fill_info(const tessera::Tensor& t, const std::string& name, tessera_tensor_info* info) {
  info->name = name.c_str();
  info->dtype = static_cast<tessera_dtype>(t.dtype());
  info->rank = static_cast<size_t>(t.dim());
  for (size_t d = 0; d < TESSERA_C_MAX_DIMS; ++d) {
    info->dims[d] = d < info->rank ? t.size(static_cast<int>(d)) : 0;
  }
  info->nbytes = t.nbytes();
}

DelegateReport delegate_report(const tessera::DelegateInfo& d) {
  DelegateReport r;
  r.id = d.id;
  r.backend = d.backend;
  r.requested_backend = d.requested_backend;
  r.reason = d.reason;
  r.num_nodes = d.num_nodes;
  r.execute_fallbacks = d.execute_fallbacks;
  r.execute_fallback_reason = d.execute_fallback_reason;
  for (size_t k = 0; d.options != nullptr && k < d.options->size(); ++k) {
    DelegateReport::Option o;
    o.key = std::string(d.options->option(k).key());
    o.value = format_value(d.options->option(k));
    o.source = tessera::option_level_name(d.options->source(k));
    o.origin = std::string(d.options->origin(k));
    if (const tessera::DerivedValue* v = d.derived ? d.derived->find(o.key) : nullptr) {
      o.has_resolved = true;
      o.resolved_value = v->value;
      o.resolved_reason = v->reason;
    }
    r.options.push_back(std::move(o));
  }
  return r;
}

void build_reports(tessera_method* m) {
  const tessera::Method& method = m->method;
  for (size_t i = 0; i < method.inputs_size(); ++i) {
    m->input_names.emplace_back(method.input_name(i));
  }
  for (size_t i = 0; i < method.outputs_size(); ++i) {
    m->output_names.emplace_back(method.output_name(i));
  }
  const tessera::PolicyDecision& policy = method.policy();
  m->policy = tessera::policy_name(policy.effective);
  m->policy_reason = policy.reason;
  for (size_t i = 0; i < method.num_delegates(); ++i) {
    m->delegates.push_back(delegate_report(method.delegate_info(i)));
  }
}

// The report of delegate `index`, rebuilt first if the delegate moved since it was made (a
// startup backend's switch, an execute fallback).
const DelegateReport& current_report(const tessera_method* m, size_t index) {
  const tessera::DelegateInfo& d = m->method.delegate_info(index);
  DelegateReport& r = m->delegates[index];
  if (r.backend != d.backend || r.reason != d.reason ||
      r.execute_fallbacks != d.execute_fallbacks) {
    r = delegate_report(d);
  }
  return r;
}

tessera_status* finish_load_program(tessera_program* p, tessera_program** out) {
  // `p` owns its loader; the Program views it.
  const tessera::DataLoader* loader =
      p->mmap ? static_cast<const tessera::DataLoader*>(&*p->mmap) : &*p->buffer;
  auto program = tessera::Program::load(loader);
  if (!program.ok()) {
    delete p;
    return to_c(program.status());
  }
  p->program.emplace(std::move(program).value());
  for (size_t i = 0; i < p->program->num_methods(); ++i) {
    auto name = p->program->method_name(i);
    p->method_names.emplace_back(name.ok() ? *name : std::string_view());
  }
  *out = p;
  return nullptr;
}

Status out_of_range(const char* what, size_t index, size_t size) {
  return Status::error(Error::NotFound, "%s %zu out of range (there are %zu)", what, index, size);
}

}  // namespace

// ---- status -------------------------------------------------------------------------------

extern "C" {

tessera_error_code tessera_status_code(const tessera_status* status) {
  return status == nullptr ? TESSERA_OK : status->code;
}

const char* tessera_status_message(const tessera_status* status) {
  return status == nullptr ? "" : status->message;
}

void tessera_status_free(tessera_status* status) {
  if (status != &g_out_of_memory) delete status;
}

const char* tessera_error_name(tessera_error_code code) {
  const char* name = tessera::error_name(static_cast<Error>(code));
  return name;
}

const char* tessera_version(void) {
  return TESSERA_VERSION_STRING;
}

int tessera_c_abi_version(void) {
  return TESSERA_C_ABI_VERSION;
}

const char* tessera_dtype_name(tessera_dtype dtype) {
  if (!tessera::is_valid_scalar_type(static_cast<int>(dtype))) return "unknown";
  return tessera::scalar_type_name(static_cast<tessera::ScalarType>(dtype));
}

// ---- backends -----------------------------------------------------------------------------

tessera_status* tessera_backend_count(size_t* count) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(count);
    *count = tessera::registered_backends().size();
    return Status::ok();
  });
}

tessera_status* tessera_backend_name(size_t index, const char** name) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(name);
    std::vector<std::string> names = tessera::registered_backends();
    if (index >= names.size()) return out_of_range("backend", index, names.size());
    *name = intern(names[index]);
    return Status::ok();
  });
}

tessera_status* tessera_load_backend_library(const char* path, size_t* num_registered) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(path);
    tessera::Result<std::vector<std::string>> names = tessera::load_backend_library(path);
    if (!names.ok()) return names.status();
    if (num_registered != nullptr) *num_registered = names->size();
    return Status::ok();
  });
}

tessera_status* tessera_load_backend_libraries(const char* directories, size_t* num_registered) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(directories);
    tessera::Result<std::vector<std::string>> names = tessera::load_backend_libraries(directories);
    if (!names.ok()) return names.status();
    if (num_registered != nullptr) *num_registered = names->size();
    return Status::ok();
  });
}

tessera_status* tessera_backend_available(const char* backend, int* available,
                                          const char** reason) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(backend);
    TESSERA_C_REQUIRE(available);
    TESSERA_RETURN_IF_ERROR(schema_of(backend).status());
    TESSERA_ASSIGN_OR_RETURN(tessera::BackendInterface * b, tessera::get_backend(backend));
    *available = b->is_available() ? 1 : 0;
    if (reason != nullptr) *reason = *available ? "" : b->unavailable_reason();
    return Status::ok();
  });
}

tessera_status* tessera_backend_option_count(const char* backend, size_t* count) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(backend);
    TESSERA_C_REQUIRE(count);
    TESSERA_ASSIGN_OR_RETURN(tessera::Span<const tessera::OptionSpec> schema, schema_of(backend));
    *count = schema.size();
    return Status::ok();
  });
}

tessera_status* tessera_backend_option_spec(const char* backend, size_t index,
                                            tessera_option_spec* out) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(backend);
    TESSERA_C_REQUIRE(out);
    TESSERA_ASSIGN_OR_RETURN(tessera::Span<const tessera::OptionSpec> schema, schema_of(backend));
    if (index >= schema.size()) return out_of_range("option", index, schema.size());
    const tessera::OptionSpec& s = schema[index];
    tessera_option_spec c{};
    c.key = s.key;
    c.type = static_cast<tessera_option_type>(s.type);
    c.default_value = intern(format_value(s.default_option()));
    c.min_int = s.min_int;
    c.max_int = s.max_int;
    c.min_double = s.min_double;
    c.max_double = s.max_double;
    c.max_length = s.max_length;
    c.choices = s.choices.data();
    c.num_choices = s.choices.size();
    c.scopes = s.scopes.bits;
    c.init_only = s.is_init_only ? 1 : 0;
    c.doc = s.doc;
    *out = c;
    return Status::ok();
  });
}

// ---- global options -----------------------------------------------------------------------

tessera_status* tessera_set_global_option(const char* backend, const char* key, const char* value) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(backend);
    TESSERA_C_REQUIRE(key);
    TESSERA_C_REQUIRE(value);
    tessera::BackendOption option;
    TESSERA_RETURN_IF_ERROR(
        make_option(backend, key, value, tessera::OptionLevel::Global, &option));
    return tessera::set_option(backend, tessera::Span<const tessera::BackendOption>(&option, 1));
  });
}

tessera_status* tessera_get_global_option(const char* backend, const char* key, char* buffer,
                                          size_t size) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(backend);
    TESSERA_C_REQUIRE(key);
    TESSERA_C_REQUIRE(buffer);
    tessera::BackendOption option;
    TESSERA_RETURN_IF_ERROR(option.set_key(key));
    TESSERA_RETURN_IF_ERROR(schema_of(backend).status());
    TESSERA_RETURN_IF_ERROR(
        tessera::get_option(backend, tessera::Span<tessera::BackendOption>(&option, 1)));
    std::string text = format_value(option);
    if (text.size() + 1 > size) {
      return Status::error(Error::InvalidArgument,
                           "%s: the value of %s.%s needs %zu bytes, the buffer has %zu", fn,
                           backend, key, text.size() + 1, size);
    }
    std::memcpy(buffer, text.c_str(), text.size() + 1);
    return Status::ok();
  });
}

tessera_status* tessera_reset_global_options(const char* backend) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(backend);
    TESSERA_RETURN_IF_ERROR(schema_of(backend).status());
    return tessera::reset_backend_options(backend);
  });
}

// ---- device -------------------------------------------------------------------------------

tessera_status* tessera_device_info_json(int with_opencl, char** json) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(json);
    std::string text = tessera::DeviceInfo::get().to_json(with_opencl != 0);
    char* copy = static_cast<char*>(std::malloc(text.size() + 1));
    if (copy == nullptr) return Status(Error::MemoryAllocationFailed, "device info JSON");
    std::memcpy(copy, text.c_str(), text.size() + 1);
    *json = copy;
    return Status::ok();
  });
}

void tessera_string_free(char* string) {
  std::free(string);
}

// ---- programs -----------------------------------------------------------------------------

tessera_status* tessera_program_load_file(const char* path, tessera_program** program) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) -> Status {
    TESSERA_C_REQUIRE(path);
    TESSERA_C_REQUIRE(program);
    auto loader = tessera::MmapDataLoader::from(path);
    if (!loader.ok()) return loader.status();
    auto* p = new tessera_program;
    p->mmap.emplace(std::move(loader).value());
    tessera_status* s = finish_load_program(p, program);
    if (s == nullptr) return Status::ok();
    Status st(static_cast<Error>(s->code), s->message);
    tessera_status_free(s);
    return st;
  });
}

tessera_status* tessera_program_load_memory(const void* data, size_t size,
                                            tessera_program** program) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) -> Status {
    TESSERA_C_REQUIRE(data);
    TESSERA_C_REQUIRE(program);
    if (size == 0) return Status::error(Error::InvalidArgument, "%s: size is 0", fn);
    void* aligned = std::aligned_alloc(64, (size + 63) / 64 * 64);
    if (aligned == nullptr) {
      return Status::error(Error::MemoryAllocationFailed, "%s: %zu bytes", fn, size);
    }
    std::memcpy(aligned, data, size);
    auto* p = new tessera_program;
    p->aligned = aligned;
    p->buffer.emplace(aligned, size);
    tessera_status* s = finish_load_program(p, program);
    if (s == nullptr) return Status::ok();
    Status st(static_cast<Error>(s->code), s->message);
    tessera_status_free(s);
    return st;
  });
}

void tessera_program_free(tessera_program* program) {
  delete program;
}

tessera_status* tessera_program_method_count(const tessera_program* program, size_t* count) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(program);
    TESSERA_C_REQUIRE(count);
    *count = program->method_names.size();
    return Status::ok();
  });
}

tessera_status* tessera_program_method_name(const tessera_program* program, size_t index,
                                            const char** name) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(program);
    TESSERA_C_REQUIRE(name);
    if (index >= program->method_names.size()) {
      return out_of_range("method", index, program->method_names.size());
    }
    *name = program->method_names[index].c_str();
    return Status::ok();
  });
}

// ---- load options -------------------------------------------------------------------------

tessera_status* tessera_load_options_create(tessera_load_options** options) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(options);
    auto* o = new tessera_load_options;
    o->load.backend_options = &o->per_backend;
    o->load.delegate_options = &o->per_delegate;
    *options = o;
    return Status::ok();
  });
}

void tessera_load_options_free(tessera_load_options* options) {
  delete options;
}

tessera_status* tessera_load_options_set_option(tessera_load_options* options, const char* backend,
                                                const char* key, const char* value) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(options);
    TESSERA_C_REQUIRE(backend);
    TESSERA_C_REQUIRE(key);
    TESSERA_C_REQUIRE(value);
    tessera::BackendOption option;
    Status made = make_option(backend, key, value, tessera::OptionLevel::Load, &option);
    if (!made.is_ok()) return skipped_leniently(options, made) ? Status::ok() : made;
    return options->per_backend.set_options(
        backend, tessera::Span<const tessera::BackendOption>(&option, 1));
  });
}

tessera_status* tessera_load_options_set_delegate_option(tessera_load_options* options,
                                                         const char* delegate_id, const char* key,
                                                         const char* value) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(options);
    TESSERA_C_REQUIRE(delegate_id);
    TESSERA_C_REQUIRE(key);
    TESSERA_C_REQUIRE(value);
    std::string_view id = delegate_id;
    if (id.find('#') == std::string_view::npos) {
      return Status::error(Error::InvalidArgument,
                           "%s: '%s' is not a delegate id (\"<backend>#<n>\", e.g. \"xnnpack#0\")",
                           fn, delegate_id);
    }
    tessera::BackendOption option;
    Status made = make_option(tessera::backend_of_delegate_id(id), key, value,
                              tessera::OptionLevel::Delegate, &option);
    if (!made.is_ok()) return skipped_leniently(options, made) ? Status::ok() : made;
    return options->per_delegate.set_options(
        id, tessera::Span<const tessera::BackendOption>(&option, 1));
  });
}

tessera_status* tessera_load_options_set_dim(tessera_load_options* options, const char* name,
                                             int64_t value) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(options);
    TESSERA_C_REQUIRE(name);
    return options->load.set_dim(name, value);
  });
}

tessera_status* tessera_load_options_set_input_shape(tessera_load_options* options,
                                                     const char* name, const int64_t* dims,
                                                     size_t rank) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(options);
    TESSERA_C_REQUIRE(name);
    if (rank > 0) TESSERA_C_REQUIRE(dims);
    return options->load.set_input_shape(name, tessera::Span<const int64_t>(dims, rank));
  });
}

tessera_status* tessera_load_options_add_retarget(tessera_load_options* options, const char* from,
                                                  const char* to) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(options);
    TESSERA_C_REQUIRE(from);
    TESSERA_C_REQUIRE(to);
    return options->load.add_retarget(from, to);
  });
}

tessera_status* tessera_load_options_set_fallback(tessera_load_options* options,
                                                  const char* chain) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(options);
    TESSERA_C_REQUIRE(chain);
    return options->load.set_fallback(chain);
  });
}

tessera_status* tessera_load_options_set_startup_backend(tessera_load_options* options,
                                                         const char* backend) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(options);
    TESSERA_C_REQUIRE(backend);
    return options->load.set_startup_backend(backend);
  });
}

tessera_status* tessera_load_options_set_policy(tessera_load_options* options, const char* policy) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(options);
    TESSERA_C_REQUIRE(policy);
    TESSERA_ASSIGN_OR_RETURN(tessera::Policy p, tessera::parse_policy(policy));
    options->load.set_policy(p);
    return Status::ok();
  });
}

tessera_status* tessera_load_options_set_lenient(tessera_load_options* options, int lenient) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(options);
    options->load.lenient_options = lenient != 0;
    return Status::ok();
  });
}

tessera_status* tessera_load_options_set_on_execute_failure(tessera_load_options* options,
                                                            const char* mode) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(options);
    TESSERA_C_REQUIRE(mode);
    TESSERA_ASSIGN_OR_RETURN(tessera::OnExecuteFailure value,
                             tessera::parse_on_execute_failure(mode));
    options->load.on_execute_failure = value;
    return Status::ok();
  });
}

tessera_status* tessera_load_options_set_selection(tessera_load_options* options,
                                                   const char* mode) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(options);
    TESSERA_C_REQUIRE(mode);
    TESSERA_ASSIGN_OR_RETURN(tessera::Selection value, tessera::parse_selection(mode));
    options->load.selection = value;
    return Status::ok();
  });
}

tessera_status* tessera_load_options_set_selection_cache_dir(tessera_load_options* options,
                                                             const char* dir) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(options);
    if (dir == nullptr) {
      options->load.selection_cache_dir = nullptr;
      options->selection_cache_dir.clear();
      return Status::ok();
    }
    options->selection_cache_dir = dir;
    options->load.selection_cache_dir = options->selection_cache_dir.c_str();
    return Status::ok();
  });
}

tessera_status* tessera_load_options_set_selection_cache_max_kb(tessera_load_options* options,
                                                                int64_t max_kb) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(options);
    TESSERA_RETURN_IF_ERROR(tessera::LoadOptions::check_selection_cache_max_kb(max_kb));
    options->load.selection_cache_max_kb = max_kb;
    return Status::ok();
  });
}

tessera_status* tessera_load_options_set_selection_tolerance(tessera_load_options* options,
                                                             double tolerance) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(options);
    TESSERA_RETURN_IF_ERROR(tessera::LoadOptions::check_selection_tolerance(tolerance));
    options->load.selection_tolerance = tolerance;
    return Status::ok();
  });
}

tessera_status* tessera_load_options_set_selection_budget_ms(tessera_load_options* options,
                                                             double budget_ms) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(options);
    TESSERA_RETURN_IF_ERROR(tessera::LoadOptions::check_selection_budget_ms(budget_ms));
    options->load.selection_budget_ms = budget_ms;
    return Status::ok();
  });
}

tessera_status* tessera_load_options_set_selection_runs_per_load(tessera_load_options* options,
                                                                 int64_t runs) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(options);
    TESSERA_RETURN_IF_ERROR(tessera::LoadOptions::check_selection_runs_per_load(runs));
    options->load.selection_runs_per_load = runs;
    return Status::ok();
  });
}

tessera_status* tessera_load_options_set_selection_lower_precision(tessera_load_options* options,
                                                                   int allow) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(options);
    options->load.selection_lower_precision = allow != 0;
    return Status::ok();
  });
}

// ---- execute options ----------------------------------------------------------------------

tessera_status* tessera_execute_options_create(tessera_execute_options** options) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(options);
    *options = new tessera_execute_options;
    return Status::ok();
  });
}

void tessera_execute_options_free(tessera_execute_options* options) {
  delete options;
}

tessera_status* tessera_execute_options_set_option(tessera_execute_options* options,
                                                   const char* backend, const char* key,
                                                   const char* value) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(options);
    TESSERA_C_REQUIRE(backend);
    TESSERA_C_REQUIRE(key);
    TESSERA_C_REQUIRE(value);
    tessera::BackendOption option;
    TESSERA_RETURN_IF_ERROR(
        make_option(backend, key, value, tessera::OptionLevel::Execute, &option));
    return options->options.set_options(backend,
                                        tessera::Span<const tessera::BackendOption>(&option, 1));
  });
}

// ---- methods ------------------------------------------------------------------------------

tessera_status* tessera_method_load(const tessera_program* program, const char* name,
                                    const tessera_load_options* options, tessera_method** method) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) -> Status {
    TESSERA_C_REQUIRE(program);
    TESSERA_C_REQUIRE(name);
    TESSERA_C_REQUIRE(method);
    static const tessera::LoadOptions kDefaults;
    auto loaded = program->program->load_method(name, nullptr,
                                                options != nullptr ? options->load : kDefaults);
    if (!loaded.ok()) return loaded.status();
    auto* m = new tessera_method(std::move(loaded).value());
    try {
      build_reports(m);
    } catch (...) {
      delete m;
      throw;
    }
    *method = m;
    return Status::ok();
  });
}

void tessera_method_free(tessera_method* method) {
  delete method;
}

tessera_status* tessera_method_input_count(const tessera_method* method, size_t* count) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(method);
    TESSERA_C_REQUIRE(count);
    *count = method->method.inputs_size();
    return Status::ok();
  });
}

tessera_status* tessera_method_output_count(const tessera_method* method, size_t* count) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(method);
    TESSERA_C_REQUIRE(count);
    *count = method->method.outputs_size();
    return Status::ok();
  });
}

tessera_status* tessera_method_input_info(const tessera_method* method, size_t index,
                                          tessera_tensor_info* info) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(method);
    TESSERA_C_REQUIRE(info);
    // input() is non-const only because it hands out a writable tensor; nothing changes here.
    TESSERA_ASSIGN_OR_RETURN(tessera::Tensor * t,
                             const_cast<tessera::Method&>(method->method).input(index));
    fill_info(*t, method->input_names[index], info);
    return Status::ok();
  });
}

tessera_status* tessera_method_output_info(const tessera_method* method, size_t index,
                                           tessera_tensor_info* info) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(method);
    TESSERA_C_REQUIRE(info);
    TESSERA_ASSIGN_OR_RETURN(const tessera::Tensor* t, method->method.get_output(index));
    fill_info(*t, method->output_names[index], info);
    return Status::ok();
  });
}

tessera_status* tessera_method_set_input(tessera_method* method, size_t index, tessera_dtype dtype,
                                         const int64_t* dims, size_t rank, const void* data,
                                         size_t nbytes) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(method);
    TESSERA_C_REQUIRE(data);
    if (rank > 0) TESSERA_C_REQUIRE(dims);
    if (!tessera::is_valid_scalar_type(static_cast<int>(dtype))) {
      return Status::error(Error::InvalidType, "%s: %d is not a tessera_dtype", fn,
                           static_cast<int>(dtype));
    }
    if (rank > TESSERA_C_MAX_DIMS) {
      return Status::error(Error::InvalidArgument, "%s: rank %zu is over %d", fn, rank,
                           TESSERA_C_MAX_DIMS);
    }
    for (size_t d = 0; d < rank; ++d) {
      if (dims[d] < 0) {
        return Status::error(Error::InvalidArgument, "%s: dim %zu is negative (%lld)", fn, d,
                             static_cast<long long>(dims[d]));
      }
    }
    tessera::Tensor value(static_cast<tessera::ScalarType>(dtype),
                          tessera::Span<const int64_t>(dims, rank), const_cast<void*>(data));
    if (value.nbytes() != nbytes) {
      return Status::error(Error::InvalidArgument,
                           "%s: a %s tensor of that shape has %zu bytes, nbytes is %zu", fn,
                           tessera_dtype_name(dtype), value.nbytes(), nbytes);
    }
    return method->method.set_input(index, value);
  });
}

tessera_status* tessera_method_input_buffer(tessera_method* method, size_t index, void** data,
                                            size_t* nbytes) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(method);
    TESSERA_C_REQUIRE(data);
    TESSERA_C_REQUIRE(nbytes);
    TESSERA_ASSIGN_OR_RETURN(tessera::Tensor * t, method->method.input(index));
    *data = t->data();
    *nbytes = t->nbytes();
    return Status::ok();
  });
}

tessera_status* tessera_method_execute(tessera_method* method,
                                       const tessera_execute_options* options) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(method);
    Status status =
        options == nullptr ? method->method.execute() : method->method.execute(options->options);
    // A delegate that moved (on_execute_failure fallback) is reported anew by current_report.
    return status;
  });
}

tessera_status* tessera_method_output(const tessera_method* method, size_t index, const void** data,
                                      size_t* nbytes) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(method);
    TESSERA_C_REQUIRE(data);
    TESSERA_C_REQUIRE(nbytes);
    TESSERA_ASSIGN_OR_RETURN(const tessera::Tensor* t, method->method.get_output(index));
    *data = t->data();
    *nbytes = t->nbytes();
    return Status::ok();
  });
}

tessera_status* tessera_method_copy_output(const tessera_method* method, size_t index, void* buffer,
                                           size_t size) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(method);
    TESSERA_C_REQUIRE(buffer);
    TESSERA_ASSIGN_OR_RETURN(const tessera::Tensor* t, method->method.get_output(index));
    if (size < t->nbytes()) {
      return Status::error(Error::InvalidArgument, "%s: output %zu has %zu bytes, the buffer %zu",
                           fn, index, t->nbytes(), size);
    }
    if (t->nbytes() != 0) std::memcpy(buffer, t->data(), t->nbytes());
    return Status::ok();
  });
}

tessera_status* tessera_method_symbol_value(const tessera_method* method, const char* name,
                                            int64_t* value) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(method);
    TESSERA_C_REQUIRE(name);
    TESSERA_C_REQUIRE(value);
    TESSERA_ASSIGN_OR_RETURN(*value, method->method.symbol_value(name));
    return Status::ok();
  });
}

tessera_status* tessera_method_policy(const tessera_method* method, const char** policy,
                                      const char** reason) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(method);
    TESSERA_C_REQUIRE(policy);
    *policy = method->policy.c_str();
    if (reason != nullptr) *reason = method->policy_reason.c_str();
    return Status::ok();
  });
}

tessera_status* tessera_method_delegate_count(const tessera_method* method, size_t* count) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(method);
    TESSERA_C_REQUIRE(count);
    *count = method->delegates.size();
    return Status::ok();
  });
}

tessera_status* tessera_method_delegate_info(const tessera_method* method, size_t index,
                                             tessera_delegate_info* info) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(method);
    TESSERA_C_REQUIRE(info);
    if (index >= method->delegates.size()) {
      return out_of_range("delegate", index, method->delegates.size());
    }
    const DelegateReport& d = current_report(method, index);
    info->id = d.id.c_str();
    info->backend = d.backend.c_str();
    info->requested_backend = d.requested_backend.c_str();
    info->reason = d.reason.c_str();
    info->num_nodes = d.num_nodes;
    info->num_options = d.options.size();
    info->execute_fallbacks = d.execute_fallbacks;
    info->execute_fallback_reason = d.execute_fallback_reason.c_str();
    return Status::ok();
  });
}

tessera_status* tessera_method_delegate_selection(const tessera_method* method, size_t index,
                                                  tessera_delegate_selection* info) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(method);
    TESSERA_C_REQUIRE(info);
    if (index >= method->delegates.size()) {
      return out_of_range("delegate", index, method->delegates.size());
    }
    const tessera::SelectionReport& r = method->method.delegate_info(index).selection;
    info->mode = r.mode;
    info->cached = r.cached ? 1 : 0;
    info->disturbed_measurements = r.disturbed_measurements;
    info->summary = r.summary;
    info->num_candidates = r.num_candidates;
    return Status::ok();
  });
}

tessera_status* tessera_method_delegate_selection_candidate(const tessera_method* method,
                                                            size_t delegate, size_t candidate,
                                                            tessera_selection_candidate* info) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(method);
    TESSERA_C_REQUIRE(info);
    if (delegate >= method->delegates.size()) {
      return out_of_range("delegate", delegate, method->delegates.size());
    }
    const tessera::SelectionReport& r = method->method.delegate_info(delegate).selection;
    if (candidate >= r.num_candidates) {
      return out_of_range("selection candidate", candidate, r.num_candidates);
    }
    const tessera::SelectionCandidate& c = r.candidates[candidate];
    info->backend = c.backend;
    info->options = c.options;
    info->median_ms = c.median_ms;
    info->runs = c.runs;
    info->disturbed_runs = c.disturbed_runs;
    info->init_ms = c.init_ms;
    info->accepted = c.accepted ? 1 : 0;
    info->chosen = c.chosen ? 1 : 0;
    info->reason = c.reason;
    info->alone_init_ms = c.alone_init_ms;
    return Status::ok();
  });
}

tessera_status* tessera_method_delegate_startup(const tessera_method* method, size_t index,
                                                tessera_delegate_startup* info) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(method);
    TESSERA_C_REQUIRE(info);
    if (index >= method->delegates.size()) {
      return out_of_range("delegate", index, method->delegates.size());
    }
    const tessera::StartupReport& r = method->method.delegate_info(index).startup;
    info->backend = r.backend;
    info->target = r.target;
    info->state = r.state;
    info->reason = r.reason;
    info->failure = r.failure;
    info->startup_executes = r.startup_executes;
    info->target_executes = r.target_executes;
    info->switched_at_execute = r.switched_at_execute;
    info->switched_after_ms = r.switched_after_ms;
    info->build_ms = r.build_ms;
    return Status::ok();
  });
}

tessera_status* tessera_method_wait_for_startup(tessera_method* method, double timeout_ms,
                                                int* done) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(method);
    const bool finished = method->method.wait_for_startup(timeout_ms);
    if (done != nullptr) *done = finished ? 1 : 0;
    return Status::ok();
  });
}

tessera_status* tessera_method_delegate_option(const tessera_method* method, size_t delegate,
                                               size_t option, tessera_delegate_option* info) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(method);
    TESSERA_C_REQUIRE(info);
    if (delegate >= method->delegates.size()) {
      return out_of_range("delegate", delegate, method->delegates.size());
    }
    const DelegateReport& d = current_report(method, delegate);
    if (option >= d.options.size()) {
      return Status::error(Error::NotFound, "option %zu out of range (delegate '%s' has %zu)",
                           option, d.id.c_str(), d.options.size());
    }
    const DelegateReport::Option& o = d.options[option];
    info->key = o.key.c_str();
    info->value = o.value.c_str();
    info->source = o.source.c_str();
    info->origin = o.origin.c_str();
    info->resolved_value = o.has_resolved ? o.resolved_value.c_str() : nullptr;
    info->resolved_reason = o.has_resolved ? o.resolved_reason.c_str() : nullptr;
    return Status::ok();
  });
}

// ---- traces -------------------------------------------------------------------------------

tessera_status* tessera_trace_start(void) {
  return guarded(__func__, []([[maybe_unused]] const char* fn) { return tessera::Trace::start(); });
}

int tessera_trace_running(void) {
  return tessera::Trace::running() ? 1 : 0;
}

tessera_status* tessera_trace_stop(tessera_trace** trace) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) -> Status {
    TESSERA_C_REQUIRE(trace);
    // The trace keeps running when the result cannot be handed over.
    auto* out = new tessera_trace;
    tessera::Result<std::vector<tessera::TraceEvent>> events = tessera::Trace::stop();
    if (!events.ok()) {
      delete out;
      return events.status();
    }
    out->events = std::move(events).value();
    *trace = out;
    return Status::ok();
  });
}

void tessera_trace_free(tessera_trace* trace) {
  delete trace;
}

tessera_status* tessera_trace_event_count(const tessera_trace* trace, size_t* count) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(trace);
    TESSERA_C_REQUIRE(count);
    *count = trace->events.size();
    return Status::ok();
  });
}

tessera_status* tessera_trace_get_event(const tessera_trace* trace, size_t index,
                                        tessera_trace_event* event) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(trace);
    TESSERA_C_REQUIRE(event);
    if (index >= trace->events.size()) return out_of_range("event", index, trace->events.size());
    const tessera::TraceEvent& e = trace->events[index];
    event->name = e.name.c_str();
    event->category = e.category.c_str();
    event->start_us = e.start_us;
    event->dur_us = e.dur_us;
    event->tid = e.tid;
    event->detail = e.detail.c_str();
    return Status::ok();
  });
}

tessera_status* tessera_trace_write_chrome_json(const tessera_trace* trace, const char* path) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(trace);
    TESSERA_C_REQUIRE(path);
    return tessera::Trace::write_chrome_json(trace->events, path);
  });
}

tessera_status* tessera_trace_chrome_json(const tessera_trace* trace, char** json) {
  return guarded(__func__, [&]([[maybe_unused]] const char* fn) {
    TESSERA_C_REQUIRE(trace);
    TESSERA_C_REQUIRE(json);
    std::string text = tessera::Trace::to_chrome_json(trace->events);
    char* copy = static_cast<char*>(std::malloc(text.size() + 1));
    if (copy == nullptr) return Status(Error::MemoryAllocationFailed, "trace JSON");
    std::memcpy(copy, text.c_str(), text.size() + 1);
    *json = copy;
    return Status::ok();
  });
}

}  // extern "C"
