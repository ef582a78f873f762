// The "portable" backend: runs any delegate payload (the portable graph IR) with the portable
// reference kernels. Always available; the last link of most fallback chains, and the target of
// `--retarget xnnpack=portable` for checking a backend against the reference.
#pragma once

#include "tessera/backend/interface.h"
#include "tessera/backend/option_key.h"

namespace tessera {

/// Execute-scoped: time every node of the delegate for this call and report the timings.
inline constexpr OptionKey<bool> kPortableProfile{"profile"};

class PortableBackend final : public BackendInterface {
 public:
  bool is_available() const override { return true; }
  Span<const OptionSpec> option_schema() const override;
  bool supports_op(const OpView& op) const override;
  bool runs_on_calling_thread() const override { return true; }  // its kernels, one thread
  std::string unsupported_reason(const OpView& op) const override;
  Result<DelegateHandle*> init(BackendInitContext& context, FreeableBuffer* payload,
                               Span<const CompileSpec> compile_specs) const override;
  Status execute(BackendExecutionContext& context, DelegateHandle* handle,
                 Span<EValue*> args) const override;
  void destroy(DelegateHandle* handle) const override;
};

}  // namespace tessera
