// The ArmNN backend, registered as "armnn" (Debian's ArmNN 20.08; its CpuRef backend is the
// device on x86, CpuAcc and GpuAcc on Arm machines). Converts a delegate's portable graph IR to
// an armnn::INetwork (network_builder.h), optimises it for the preferred ArmNN backends and
// loads it into the one armnn::IRuntime the backend owns; options.h lists its options.
//
// Order of calls: the init-only options (tuning_level, tuning_file, kernel_profiling,
// backend_option) build the IRuntime::CreationOptions of the runtime created at the first
// delegate init, so they are set with set_option("armnn", ...) before the first
// Program::load_method that has an armnn delegate; afterwards setting any of them is
// InvalidState. README.md shows it in code.
#pragma once

#include <armnn/INetwork.hpp>
#include <armnn/IRuntime.hpp>

#include <atomic>
#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "tessera/backend/interface.h"

namespace tessera::armnn_backend {

/// Test seam: sees the options ArmNN receives, just before the calls that take them. Must
/// outlive its registration (set_call_observer(nullptr) to remove it).
class CallObserver {
 public:
  virtual ~CallObserver() = default;
  /// Before armnn::IRuntime::Create (once per runtime).
  virtual void on_create_runtime(const armnn::IRuntime::CreationOptions& options) = 0;
  /// Before each armnn::Optimize (once per delegate).
  virtual void on_optimize(const std::vector<armnn::BackendId>& preferences,
                           const armnn::OptimizerOptions& options) = 0;
};

/// Installs `observer` (null removes it). Not thread-safe against concurrent inits.
void set_call_observer(CallObserver* observer);

class ArmnnBackend final : public BackendInterface {
 public:
  /// True when ArmNN has at least one backend registered (CpuRef's dynamic backend loaded).
  bool is_available() const override;
  const char* unavailable_reason() const override;
  Span<const OptionSpec> option_schema() const override;
  const char* derivation_doc() const override;
  const char* build_id() const override;
  /// `op.node` is a const fb::Node* and `op.graph` the const fb::Graph* holding it.
  bool supports_op(const OpView& op) const override;
  std::string unsupported_reason(const OpView& op) const override;
  /// Creates the runtime at the first call (from the global init-only options, then marks the
  /// backend initialised), converts and optimises the payload and loads it. Errors:
  /// InvalidProgram (malformed payload), NotSupported (a node check_node rejects; fast_math or
  /// num_threads, which ArmNN 20.08 cannot take), OptionInvalidChoice (a backends id ArmNN does
  /// not have), DelegateUnavailable (none of the preferred ids is registered here),
  /// InvalidArgument (both reduce_fp32_to_* set; a pass-through entry contradicting its typed
  /// option), DelegateInvalidCompatibility (ArmNN refused the network).
  Result<DelegateHandle*> init(BackendInitContext& context, FreeableBuffer* payload,
                               Span<const CompileSpec> compile_specs) const override;
  Status execute(BackendExecutionContext& context, DelegateHandle* handle,
                 Span<EValue*> args) const override;
  /// Unloads the network from the runtime.
  void destroy(DelegateHandle* handle) const override;
  /// Checks backends and backend_option values when set; once the runtime exists, refuses every
  /// init-only option (InvalidState naming the order of calls).
  Status set_option(BackendOptionContext& context, Span<const BackendOption> options) override;

  /// Whether the runtime has been created.
  bool has_runtime() const { return runtime_created_.load(); }

 private:
  Result<armnn::IRuntime*> runtime(BackendInitContext& context) const;

  mutable std::mutex mutex_;
  mutable armnn::IRuntimePtr runtime_{nullptr, &armnn::IRuntime::Destroy};
  mutable std::atomic<bool> runtime_created_{false};
};

/// What a delegate was built into, for tests and tools. `handle` comes from init.
struct DelegateSummary {
  std::vector<std::string> preferences;             // the backends option, in order
  std::map<std::string, size_t> layers_by_backend;  // ArmNN backend -> layers it runs
  size_t layers = 0;                                // layers before optimisation
};
DelegateSummary summarize_delegate(const DelegateHandle* handle);

}  // namespace tessera::armnn_backend
