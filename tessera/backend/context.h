// The context objects passed to a backend: BackendInitContext (per delegate init),
// BackendExecutionContext (per execute call) and BackendOptionContext (global option hooks).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "tessera/backend/derived_values.h"
#include "tessera/backend/execute_options.h"
#include "tessera/backend/option_key.h"
#include "tessera/backend/policy.h"
#include "tessera/backend/profile_buffer.h"
#include "tessera/backend/resolved_options.h"
#include "tessera/core/memory_allocator.h"
#include "tessera/core/result.h"
#include "tessera/core/span.h"
#include "tessera/core/status.h"
#include "tessera/core/trace.h"

namespace tessera {

struct DeviceInfo;

/// The value of one symbolic dim at load ("batch" = 4). `name` is borrowed.
struct SymbolValue {
  std::string_view name;
  int64_t value;
};

/// Gives a backend the bytes of a program constant (weights) by index, normally in place in the
/// mapped program. The returned bytes live as long as the Program.
struct ConstantSource {
  Result<Span<const uint8_t>> (*fn)(void* context, uint32_t index) = nullptr;
  void* context = nullptr;
  /// Optional: the backend no longer reads constant `index` (see release_constant).
  void (*release)(void* context, uint32_t index) = nullptr;
};

/// What BackendInterface::init gets. Built by the runtime for one init call; every pointer and
/// view in it is borrowed and valid only during that call.
class BackendInitContext {
 public:
  struct Params {
    MemoryAllocator* method_allocator = nullptr;  // load-time memory the delegate may keep
    const ResolvedOptions* options = nullptr;     // required; names backend and delegate id
    std::string_view method_name;
    Span<const SymbolValue> symbols;  // concrete values of the program's symbolic dims
    ConstantSource constants;
    const DeviceInfo* device_info = nullptr;  // null: DeviceInfo::get()
    /// The load's policy decision; null: decide_policy(default_policy(), device_info()).
    const PolicyDecision* policy = nullptr;
    /// Where report_derived writes; null: reports are dropped.
    DerivedValues* derived = nullptr;
    /// The other backends of this Method that use CPU thread pools (see cpu_pool_peers()).
    Span<const std::string_view> cpu_pool_peers;
    /// Identifies the loaded Method the delegate belongs to (see method_instance()); 0: none.
    uint64_t method_instance = 0;
  };

  explicit BackendInitContext(const Params& params) : params_(params) {}

  /// The delegate's validated effective options (compile specs, global, load and delegate
  /// scopes applied).
  const ResolvedOptions& options() const { return *params_.options; }

  /// Typed read of a resolved option; errors as ResolvedOptions::get.
  template <OptionValueType T>
  Result<T> get(const OptionKey<T>& key) const {
    return params_.options->get(key);
  }

  /// ExecuTorch-style read by key. T is bool, int64_t, double, std::string_view, EnumValue, or
  /// for convenience int (OptionOutOfRange if the value does not fit) and const char* (the
  /// terminated string or enum choice). NotFound for a key outside the schema,
  /// OptionTypeMismatch for another type.
  template <typename T>
  Result<T> get_runtime_spec(std::string_view key) const;

  /// Value of symbolic dim `name`; NotFound listing the known symbols.
  Result<int64_t> symbol_value(std::string_view name) const;
  Span<const SymbolValue> symbols() const { return params_.symbols; }

  /// Bytes of program constant `index`; NotSupported if the runtime gave no constant source.
  Result<Span<const uint8_t>> constant(uint32_t index) const;
  /// Tells the runtime that this delegate has its own copy of constant `index` (reordered,
  /// packed) and does not read the program's bytes of it again: a program mapped from a file
  /// drops those pages from memory, so weights are not held twice. Only a hint: the bytes stay
  /// valid (read again from the file if anything reads them), and other delegates may still use
  /// them. Call it as each constant is copied, not at the end, and the load's peak memory drops
  /// too. Does nothing without a runtime (tests) or for a program in a caller's buffer.
  void release_constant(uint32_t index) const;

  MemoryAllocator* method_allocator() const { return params_.method_allocator; }
  const DeviceInfo& device_info() const;
  /// The policy this load runs under, with the values derived from it (threads, yielding,
  /// expensive transforms). Backends derive the options left at `auto` from it.
  const PolicyDecision& policy() const;

  /// Whether option `key` was left at its schema default (no compile spec, global, load or
  /// delegate value): a backend may then derive it from the policy and DeviceInfo.
  bool is_default(std::string_view key) const;

  /// Reports the value the backend actually uses for option `key` whose requested value was
  /// `auto` (or a derived default), and why; shown as "resolved" by --explain-options and in
  /// DelegateInfo::derived. The reason is formatted printf-style.
  void report_derived(std::string_view key, std::string_view value, const char* reason_fmt,
                      ...) const __attribute__((format(printf, 4, 5)));
  std::string_view backend_name() const { return params_.options->backend(); }
  std::string_view delegate_id() const { return params_.options->delegate_id(); }
  std::string_view method_name() const { return params_.method_name; }

  /// The other backends of this Method whose delegates run on CPU thread pools of their own
  /// (BackendInterface::uses_cpu_thread_pool), by name, e.g. {"onednn"} for an xnnpack delegate
  /// of a Method partitioned between xnnpack and onednn. Empty when no other pool shares the
  /// CPUs with this backend's during the Method's execution. A backend with a pool reads it to
  /// keep the pools from oversubscribing the CPUs (docs/usage.md, "Threads").
  Span<const std::string_view> cpu_pool_peers() const { return params_.cpu_pool_peers; }

  /// A number unique in the process to the loaded Method this delegate belongs to, the same for
  /// all its delegates (candidates measured by a selection, fallback and startup inits
  /// included) and never reused by another load. The delegates of one Method execute one at a
  /// time, so a backend may let them share what one execute uses at a time, such as a thread
  /// pool (XNNPACK: one pool per Method and size). 0 when the caller gives no Method (tests,
  /// tools): share nothing.
  uint64_t method_instance() const { return params_.method_instance; }

  /// Declares that the backend has now created its shared state: from here on its init-only
  /// options are locked at their current effective values. Idempotent (the first reason is
  /// kept). Default reason: "first delegate load: method '<m>', delegate '<id>'".
  Status mark_backend_initialized(std::string_view reason = {}) const;

 private:
  Params params_;
  mutable PolicyDecision fallback_policy_;  // decided on first use when params_.policy is null
  mutable bool has_fallback_policy_ = false;
};

/// What BackendInterface::execute gets, per call. Pointers are borrowed for the call.
class BackendExecutionContext {
 public:
  /// @param resolved  the delegate's load-time options (required)
  /// @param execute   this call's execute-scoped options for the backend, already validated
  /// @param profile   where report_event writes; may be null (events are then dropped)
  BackendExecutionContext(const ResolvedOptions* resolved, ExecuteOptionView execute = {},
                          ProfileBuffer* profile = nullptr,
                          MemoryAllocator* temp_allocator = nullptr)
      : resolved_(resolved),
        execute_(execute),
        profile_(profile),
        temp_allocator_(temp_allocator) {}

  /// This call's value of `key` if given at execute scope, else the load-resolved value. No
  /// heap; errors as ResolvedOptions::get.
  template <OptionValueType T>
  Result<T> get(const OptionKey<T>& key) const {
    if (!execute_.empty()) {
      if (const BackendOption* o = execute_.find(key.view(), key.hash)) {
        if (o->type() == OptionTypeOf<T>::value) return o->template value_as<T>();
      }
    }
    return resolved_->get(key);
  }
  /// Where the value get(key) returns comes from; Default for an unknown key.
  OptionLevel source(std::string_view key) const;

  /// Records a timed event that ends now (name copied) into the caller's ProfileBuffer, if
  /// any, with its start time and the delegate's id; and into the running Trace, if any.
  void report_event(const char* name, double ms) {
    if (profile_ != nullptr || Trace::running()) record_event(name, ms);
  }
  /// The delegate this call runs (borrowed; set by the runtime before execute).
  void set_delegate_id(const char* id) { delegate_id_ = id; }
  const char* delegate_id() const { return delegate_id_; }

  const ResolvedOptions& options() const { return *resolved_; }
  ExecuteOptionView execute_options() const { return execute_; }
  /// Scratch memory for this call; may be null.
  MemoryAllocator* temp_allocator() const { return temp_allocator_; }

 private:
  const ResolvedOptions* resolved_;
  ExecuteOptionView execute_;
  void record_event(const char* name, double ms);

  ProfileBuffer* profile_;
  MemoryAllocator* temp_allocator_;
  const char* delegate_id_ = nullptr;
};

/// Passed to BackendInterface::set_option/get_option hooks. Holds little now; new fields can
/// arrive without changing the hook signatures.
class BackendOptionContext {
 public:
  explicit BackendOptionContext(std::string_view backend_name) : backend_name_(backend_name) {}
  std::string_view backend_name() const { return backend_name_; }

 private:
  std::string_view backend_name_;
};

// ----------------------------------------------------------------------------------------------
// Inline details.

template <typename T>
Result<T> BackendInitContext::get_runtime_spec(std::string_view key) const {
  const ResolvedOptions& o = *params_.options;
  int i = o.find(key);
  if (i < 0) return o.not_found(key);
  const size_t index = static_cast<size_t>(i);
  if constexpr (std::is_same_v<T, int>) {
    TESSERA_ASSIGN_OR_RETURN(int64_t v, o.typed<int64_t>(index));
    if (v < INT32_MIN || v > INT32_MAX) {
      return Status::error(Error::OptionOutOfRange, "%s: option '%.*s' = %lld does not fit int",
                           o.backend().data(), static_cast<int>(key.size()), key.data(),
                           static_cast<long long>(v));
    }
    return static_cast<int>(v);
  } else if constexpr (std::is_same_v<T, const char*>) {
    const BackendOption& opt = o.option(index);
    if (opt.type() != OptionType::String && opt.type() != OptionType::Enum) {
      return o.type_mismatch(index, OptionType::String);
    }
    return opt.string_c_str();
  } else {
    static_assert(OptionValueType<T>, "get_runtime_spec<T>: unsupported T");
    return o.typed<T>(index);
  }
}

}  // namespace tessera
