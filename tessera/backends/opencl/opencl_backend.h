// The OpenCL backend, registered as "opencl". Runs delegates whose payload is the portable graph
// IR by generating one OpenCL C kernel per node at init (codegen.h), on a device chosen at run
// time (devices.h), with a compiled-program cache (program_cache.h) and a local-size tuner
// (tuner.h). Options: options.h.
#pragma once

#include <memory>
#include <mutex>

#include "tessera/backend/interface.h"
#include "tessera/backends/opencl/delegate.h"
#include "tessera/backends/opencl/devices.h"

namespace tessera::opencl {

class OpenClBackend final : public BackendInterface {
 public:
  /// True when the ICD loader finds at least one OpenCL device (probed once).
  bool is_available() const override;
  /// DeviceInfo's reason ("no OpenCL platform (clGetPlatformIDs: -1001)", ...), or "no OpenCL
  /// device" when platforms exist but offer no device.
  const char* unavailable_reason() const override;
  Span<const OptionSpec> option_schema() const override;
  const char* derivation_doc() const override;
  /// Every OpenCL device the ICD loader lists, each by name, vendor, OpenCL and driver versions
  /// and platform (Device::fingerprint): a selection remembered for one GPU or driver is not
  /// reused for another.
  const char* build_id() const override;
  /// `op.node` is a const fb::Node* and `op.graph` the const fb::Graph* holding it.
  bool supports_op(const OpView& op) const override;
  std::string unsupported_reason(const OpView& op) const override;
  /// `payload` is an fb::Graph FlatBuffer; it is verified, used and freed before returning.
  /// Errors: DelegateUnavailable (no device, or none matching platform/device_type),
  /// InvalidArgument (device_index out of range, bad build_options), InvalidProgram,
  /// NotSupported (an op this backend does not run), DelegateInvalidCompatibility (the kernels
  /// do not build), DelegateMemoryAllocationFailed, option errors.
  Result<DelegateHandle*> init(BackendInitContext& context, FreeableBuffer* payload,
                               Span<const CompileSpec> compile_specs) const override;
  /// True when the delegate's program is not in the program cache (no cache_dir, cache_mode
  /// off, no entry, or an entry init would reject), so init would compile it from source.
  /// Makes no OpenCL call unless the cache has an entry for the program (for some device), so
  /// it may be asked before is_available(). Tuning searches (tuning_level) are not counted.
  /// Errors: option and payload errors as init.
  Result<bool> init_would_be_cold(const BackendInitContext& context, const FreeableBuffer& payload,
                                  Span<const CompileSpec> compile_specs) const override;
  Status execute(BackendExecutionContext& context, DelegateHandle* handle,
                 Span<EValue*> args) const override;
  void destroy(DelegateHandle* handle) const override;

 private:
  // The device set for the context's platform and device_type, discovered on first use.
  Result<std::shared_ptr<DeviceSet>> device_set(const BackendInitContext& context) const;

  // The devices selected by the (init-only) platform and device_type; created at the first
  // init, which then locks those options.
  mutable std::mutex mutex_;
  mutable std::shared_ptr<DeviceSet> devices_;
};

/// What a delegate was built into. `handle` comes from init of the "opencl" backend.
const DelegateSummary& summarize_delegate(const DelegateHandle* handle);

}  // namespace tessera::opencl
