// The C++ half of the C API test (test_support.h).
#include "tests/c/test_support.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "tessera/backend/context.h"
#include "tessera/backend/interface.h"
#include "tessera/backend/option_schema.h"
#include "tessera/backend/registry.h"
#include "tessera/core/evalue.h"
#include "tests/testing/test_programs.h"

namespace {

using namespace tessera;

constexpr const char* kModes[] = {"fast", "exact"};
constexpr const char* kDevices[] = {"cpu", "gpu"};
constexpr OptionSpec kSchema[] = {
    OptionSpec::integer(OptionKey<int64_t>{"threads"}, 0, 0, 64, kRuntimeScopes,
                        "Worker threads; 0 = auto"),
    OptionSpec::enumeration(OptionKey<EnumValue>{"mode"}, "fast", kModes, kRuntimeScopes,
                            "Arithmetic mode"),
    OptionSpec::string(OptionKey<std::string_view>{"label"}, "", kRuntimeScopes, "A label", 8),
    OptionSpec::floating(OptionKey<double>{"scale"}, 1.0, 0.0, 10.0, kRuntimeScopes, "A factor"),
    OptionSpec::enumeration(OptionKey<EnumValue>{"device"}, "cpu", kDevices, kRuntimeScopes,
                            "Device")
        .init_only(),
    OptionSpec::boolean(OptionKey<bool>{"profile"}, false, OptionLevel::Execute,
                        "Profile this call"),
};

struct Handle {
  int unused;
};

class CTestBackend final : public BackendInterface {
 public:
  bool is_available() const override { return true; }
  Span<const OptionSpec> option_schema() const override { return kSchema; }
  bool supports_op(const OpView&) const override { return true; }
  Result<DelegateHandle*> init(BackendInitContext& ctx, FreeableBuffer*,
                               Span<const CompileSpec>) const override {
    if (ctx.is_default("threads"))
      ctx.report_derived("threads", "1", "auto: the test backend uses %d", 1);
    return to_handle(new Handle{0});
  }
  Status execute(BackendExecutionContext&, DelegateHandle*, Span<EValue*> args) const override {
    const Tensor& in = args[0]->to_tensor();
    const Tensor& out = args[1]->to_tensor();
    std::memcpy(out.data(), in.data(), in.nbytes());
    return Status::ok();
  }
  void destroy(DelegateHandle* handle) const override { delete from_handle<Handle>(handle); }
};

// Accepts every op and initialises, then fails every execute.
class FailingBackend final : public BackendInterface {
 public:
  bool is_available() const override { return true; }
  Span<const OptionSpec> option_schema() const override { return {}; }
  bool supports_op(const OpView&) const override { return true; }
  Result<DelegateHandle*> init(BackendInitContext&, FreeableBuffer*,
                               Span<const CompileSpec>) const override {
    return to_handle(new Handle{0});
  }
  Status execute(BackendExecutionContext&, DelegateHandle*, Span<EValue*>) const override {
    return Status(Error::DelegateExecutionFailed, "ctest_failing: injected execute failure");
  }
  void destroy(DelegateHandle* handle) const override { delete from_handle<Handle>(handle); }
};

}  // namespace

extern "C" int ctest_register_backend(void) {
  if (!get_backend("ctest_failing").ok() &&
      !register_backend("ctest_failing", std::make_unique<FailingBackend>()).is_ok()) {
    return 1;
  }
  if (get_backend("ctest").ok()) return 0;
  return register_backend("ctest", std::make_unique<CTestBackend>()).is_ok() ? 0 : 1;
}

extern "C" unsigned char* ctest_program(int which, size_t* size) {
  ir::ProgramBuilder builder = testing::add_relu_mul_program(/*symbolic=*/true);
  if (which == 1) builder = testing::delegate_chain_program({"ctest", "ctest"});
  if (which == 2) builder = testing::delegate_chain_program({"ctest_failing"});
  if (which == 3) {
    // As the compiler records a delegate either backend may run (tessera-compile without
    // --backends).
    builder = testing::delegate_chain_program({"ctest_failing"});
    builder.methods()[0].delegates[0].candidates = {"ctest_failing", "ctest"};
  }
  auto built = builder.build();
  if (!built.ok()) return nullptr;
  const std::vector<uint8_t>& bytes = *built;
  auto* out = static_cast<unsigned char*>(std::malloc(bytes.size()));
  if (out == nullptr) return nullptr;
  std::memcpy(out, bytes.data(), bytes.size());
  *size = bytes.size();
  return out;
}
