// Retargeting and fallback through the runtime, as for the other backends: delegates compiled for
// "xnnpack" run on "armnn" when the load retargets them (xnnpack=armnn), with the same results and
// the backends that ran reported; an armnn delegate whose preferred ArmNN backends are all
// unavailable here falls back along the load's chain, with the reason.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tessera/backend/derived_values.h"
#include "tessera/backend/options_map.h"
#include "tessera/backends/armnn/options.h"
#include "tessera/runtime/data_loader.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program.h"
#include "tests/testing/test_programs.h"

namespace tessera {
namespace {

struct Ran {
  std::vector<float> y;
  std::string backend, reason, armnn_backends;
};

Ran run(const Program& program, const LoadOptions& options) {
  Ran r;
  auto m = program.load_method("forward", nullptr, options);
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return r;
  float x[8] = {-1, 2, -3, 4, 5, -6, 7, -8};
  int64_t sizes[] = {2, 4};
  EXPECT_TRUE(m->set_input(0, Tensor(ScalarType::Float32, sizes, x)).is_ok());
  EXPECT_TRUE(m->execute().is_ok());
  const DelegateInfo& info = m->delegate_info(0);
  r.backend = info.backend;
  r.reason = info.reason;
  if (const DerivedValue* d = info.derived->find("backends")) r.armnn_backends = d->value;
  const Tensor* y = *m->get_output(0);
  r.y.assign(y->data_as<float>(), y->data_as<float>() + y->numel());
  return r;
}

TEST(ArmnnRetarget, XnnpackDelegatesRunOnArmnnAtLoad) {
  auto bytes = testing::delegate_chain_program({"xnnpack"}).build();
  ASSERT_TRUE(bytes.ok());
  testing::AlignedBuffer buf(*bytes);
  BufferDataLoader loader(buf.data(), buf.size());
  auto program = Program::load(&loader);
  ASSERT_TRUE(program.ok()) << program.status().message();

  LoadOptions retarget;
  ASSERT_TRUE(retarget.add_retarget("xnnpack", "armnn").is_ok());
  Ran on_armnn = run(*program, retarget);
  EXPECT_EQ(on_armnn.backend, "armnn");
  EXPECT_EQ(on_armnn.armnn_backends, "CpuRef");  // backends=auto, resolved
  EXPECT_EQ(on_armnn.y, (std::vector<float>{0, 2, 0, 4, 5, 0, 7, 0}));
}

TEST(ArmnnFallback, UnavailableArmnnDevicesFallBackAlongTheChain) {
  auto bytes = testing::delegate_chain_program({"armnn"}).build();
  ASSERT_TRUE(bytes.ok());
  testing::AlignedBuffer buf(*bytes);
  BufferDataLoader loader(buf.data(), buf.size());
  auto program = Program::load(&loader);
  ASSERT_TRUE(program.ok()) << program.status().message();

  LoadBackendOptionsMap map;
  ASSERT_TRUE(map.set("armnn", armnn_backend::kBackends, std::string_view("GpuAcc")).is_ok());
  LoadOptions load;
  load.backend_options = &map;
  ASSERT_TRUE(load.set_fallback("armnn,portable").is_ok());
  Ran r = run(*program, load);
  EXPECT_EQ(r.backend, "portable");
  EXPECT_NE(r.reason.find("GpuAcc"), std::string::npos) << r.reason;
  EXPECT_EQ(r.y, (std::vector<float>{0, 2, 0, 4, 5, 0, 7, 0}));
}

}  // namespace
}  // namespace tessera
