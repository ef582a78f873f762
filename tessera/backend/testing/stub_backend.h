// StubBackend: a BackendInterface for tests, with injectable hooks; it records what it saw
// (options at init and execute, global option calls). Header-only; thread-safe recording.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

#include "tessera/backend/context.h"
#include "tessera/backend/interface.h"
#include "tessera/backend/options.h"
#include "tessera/backend/resolved_options.h"

namespace tessera::testing {

/// The handle the default init returns.
struct StubHandle {
  char delegate_id[64];
  int serial;  // 0 for the first init of this backend, then 1, 2, ...
};

class StubBackend : public BackendInterface {
 public:
  /// `schema` must outlive the backend (normally a static constexpr array).
  explicit StubBackend(Span<const OptionSpec> schema = {}) : schema_(schema) {}

  // Hooks: when set, called instead of the default behaviour. Set them before the backend is
  // used from several threads.
  std::function<Result<DelegateHandle*>(BackendInitContext&, FreeableBuffer*,
                                        Span<const CompileSpec>)>
      on_init;
  std::function<Status(BackendExecutionContext&, DelegateHandle*, Span<EValue*>)> on_execute;
  std::function<Status(Span<const BackendOption>)> on_set_option;
  std::function<Status(Span<BackendOption>)> on_get_option;
  std::function<bool(const OpView&)> on_supports_op;
  /// What init_would_be_cold answers (default: false, a warm init).
  std::function<Result<bool>(const BackendInitContext&)> on_init_would_be_cold;
  std::atomic<bool> available{true};
  std::atomic<const char*> why_unavailable{""};  // static strings only
  std::atomic<bool> cpu_thread_pool{false};      // what uses_cpu_thread_pool() answers
  std::atomic<bool> on_calling_thread{false};    // what runs_on_calling_thread() answers
  std::atomic<bool> init_beside_others{false};   // what init_beside_other_backends() answers
  std::function<void()> on_park_idle_workers;    // called by park_idle_workers()

  bool is_available() const override { return available.load(); }
  const char* unavailable_reason() const override { return why_unavailable.load(); }
  Span<const OptionSpec> option_schema() const override { return schema_; }
  bool uses_cpu_thread_pool() const override { return cpu_thread_pool.load(); }
  bool runs_on_calling_thread() const override { return on_calling_thread.load(); }
  bool init_beside_other_backends() const override { return init_beside_others.load(); }
  void park_idle_workers() const override {
    if (on_park_idle_workers) on_park_idle_workers();
  }
  bool supports_op(const OpView& op) const override {
    return on_supports_op ? on_supports_op(op) : true;
  }

  Result<bool> init_would_be_cold(const BackendInitContext& context, const FreeableBuffer&,
                                  Span<const CompileSpec>) const override {
    return on_init_would_be_cold ? on_init_would_be_cold(context) : Result<bool>(false);
  }

  /// Default: records the options and returns a new StubHandle.
  Result<DelegateHandle*> init(BackendInitContext& context, FreeableBuffer* payload,
                               Span<const CompileSpec> compile_specs) const override {
    int serial = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      serial = init_count_++;
      last_init_options_ = context.options();
    }
    if (on_init) return on_init(context, payload, compile_specs);
    auto* handle = new StubHandle{};
    std::string_view id = context.delegate_id();
    std::memcpy(handle->delegate_id, id.data(),
                std::min(id.size(), sizeof handle->delegate_id - 1));
    handle->serial = serial;
    return to_handle(handle);
  }

  /// Default: records the execute-scoped options and copies each input tensor to the output at
  /// the same position in the second half of `args` when their byte sizes match. No heap.
  Status execute(BackendExecutionContext& context, DelegateHandle* handle,
                 Span<EValue*> args) const override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++execute_count_;
      last_execute_options_.clear();
      for (const BackendOption& o : context.execute_options().options) {
        (void)last_execute_options_.put(o);
      }
    }
    if (on_execute) return on_execute(context, handle, args);
    size_t half = args.size() / 2;
    for (size_t i = 0; i < half; ++i) {
      EValue* in = args[i];
      EValue* out = args[half + i];
      if (in->is_tensor() && out->is_tensor() &&
          in->to_tensor().nbytes() == out->to_tensor().nbytes() && in->to_tensor().data() &&
          out->to_tensor().data()) {
        std::memcpy(out->to_tensor().data(), in->to_tensor().data(), in->to_tensor().nbytes());
      }
    }
    return Status::ok();
  }

  void destroy(DelegateHandle* handle) const override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++destroy_count_;
    }
    if (!on_init) delete from_handle<StubHandle>(handle);
  }

  Status set_option(BackendOptionContext&, Span<const BackendOption> options) override {
    if (on_set_option) {
      Status s = on_set_option(options);
      if (!s.is_ok()) return s;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    ++set_option_count_;
    last_set_options_.clear();
    for (const BackendOption& o : options) (void)last_set_options_.put(o);
    return Status::ok();
  }

  Status get_option(BackendOptionContext&, Span<BackendOption> options) override {
    return on_get_option ? on_get_option(options) : Status::ok();
  }

  // Records.
  int init_count() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return init_count_;
  }
  int execute_count() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return execute_count_;
  }
  int destroy_count() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return destroy_count_;
  }
  int set_option_count() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return set_option_count_;
  }
  /// The resolved options of the latest init call.
  ResolvedOptions last_init_options() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_init_options_;
  }
  /// The execute-scoped options of the latest execute call.
  BackendOptions<16> last_execute_options() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_execute_options_;
  }
  /// The options of the latest accepted set_option hook call.
  BackendOptions<kMaxSchemaOptions> last_set_options() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_set_options_;
  }

 private:
  Span<const OptionSpec> schema_;
  mutable std::mutex mutex_;
  mutable int init_count_ = 0;
  mutable int execute_count_ = 0;
  mutable int destroy_count_ = 0;
  int set_option_count_ = 0;
  mutable ResolvedOptions last_init_options_;
  mutable BackendOptions<16> last_execute_options_;
  BackendOptions<kMaxSchemaOptions> last_set_options_;
};

}  // namespace tessera::testing
