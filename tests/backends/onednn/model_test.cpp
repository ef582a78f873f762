// End to end on the PyTorch-exported fixtures (tests/models/make_fixtures.py): compile each model
// with oneDNN as the delegate backend, load and run it through the runtime, and compare with
// PyTorch's outputs (max |diff| <= 1e-4 * max |ref|) at batch 1 and 4.
#include <gtest/gtest.h>

#include <filesystem>

#include "model_util.h"
#include "tessera/backend/device_info.h"
#include "tessera/backend/options.h"
#include "tessera/backend/options_map.h"
#include "tessera/backends/onednn/onednn_backend.h"
#include "tessera/backends/onednn/options.h"
#include "tessera/runtime/data_loader.h"

namespace tessera::onednn::testing {
namespace {

class OnednnModel : public ::testing::TestWithParam<std::string> {};

TEST_P(OnednnModel, MatchesPyTorch) {
  if (!std::filesystem::exists(fixture_dir() + "/" + GetParam() + "/model.onnx")) {
    GTEST_SKIP() << "fixture missing (run tests/models/make_fixtures.py)";
  }
  auto bytes = compile_fixture(GetParam(), {"onednn"});
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  AlignedBytes file(*bytes);
  BufferDataLoader loader(file.data(), file.size());
  auto program = Program::load(&loader);
  ASSERT_TRUE(program.ok()) << program.status().message();
  for (const char* suffix : {"", "_b4"}) {
    auto run = run_fixture(*program, GetParam(), suffix);
    ASSERT_TRUE(run.ok()) << run.status().message();
    for (const std::string& b : run->delegate_backends) EXPECT_EQ(b, "onednn");
    std::printf("  %s%s: %zu delegates, max |diff| %.3g, max |ref| %.3g\n", GetParam().c_str(),
                suffix, run->delegates, run->max_diff, run->max_ref);
    EXPECT_LE(run->max_diff, 1e-4 * run->max_ref) << GetParam() << suffix;
    // Every op of these fixtures is lowered (LayerNormalization, Split, unfolded
    // BatchNormalization included), so nothing splits the graph.
    EXPECT_EQ(run->delegates, 1u) << GetParam() << suffix;
  }
}

// precision=bf16 where the CPU has native bf16: within 2e-2 of max |ref| (the measured error is
// printed), else the load fails naming the missing feature.
class OnednnModelBf16 : public ::testing::TestWithParam<std::string> {};

// Compiles fixture `name` for oneDNN, runs it with precision=bf16 and checks max |diff| <=
// bound * max |ref|; where the CPU lacks native bf16, checks the load's error names the feature.
void run_bf16(const std::string& name, double bound) {
  if (!std::filesystem::exists(fixture_dir() + "/" + name + "/model.onnx")) {
    GTEST_SKIP() << "fixture missing (run tests/models/make_fixtures.py)";
  }
  LoadBackendOptionsMap map;
  BackendOptions<1> opts;
  ASSERT_TRUE(opts.set(kPrecision, EnumValue{"bf16"}).is_ok());
  ASSERT_TRUE(map.set_options("onednn", opts.view()).is_ok());
  LoadOptions load;
  load.backend_options = &map;
  auto run = compile_and_run_fixture(name, "", load);
  const bool cpu_bf16 =
      DeviceInfo::get().has_isa("avx512_bf16") || DeviceInfo::get().has_isa("amx_bf16");
  if (!cpu_bf16 || !bf16_kernels_available()) {  // see OnednnOptions.Bf16NativeOrNamedError
    ASSERT_FALSE(run.ok());
    EXPECT_NE(std::string(run.status().message()).find(cpu_bf16 ? "effective ISA" : "avx512_bf16"),
              std::string::npos)
        << run.status().message();
    return;
  }
  ASSERT_TRUE(run.ok()) << run.status().message();
  std::printf("  %s bf16: max |diff| %.3g = %.3g of max |ref| %.3g\n", name.c_str(), run->max_diff,
              run->max_diff / run->max_ref, run->max_ref);
  EXPECT_LE(run->max_diff, bound * run->max_ref);
}

TEST_P(OnednnModelBf16, WithinBf16Tolerance) {
  run_bf16(GetParam(), 2e-2);
}

// MobileNetV2 (random weights, calibrated BatchNorm) does not meet 2e-2 in bf16 with any engine:
// its error here measured 7.6% of max |ref|, and PyTorch's own bf16 inference of the same model
// and input (model.to(torch.bfloat16)) 11.7%. The bound checks that Tessera stays better than that.
TEST(OnednnModelBf16Mobilenet, NoWorseThanPyTorchBf16) {
  run_bf16("mobilenet_v2", 0.10);
}

// MobileNetV2 has its own bound below.
INSTANTIATE_TEST_SUITE_P(Fixtures, OnednnModelBf16,
                         ::testing::Values("resnet18", "mlp", "transformer"));

INSTANTIATE_TEST_SUITE_P(Fixtures, OnednnModel,
                         ::testing::Values("mlp", "mlp_op11", "mlp_op17", "transformer",
                                           "transformer_op17", "mobilenet_v2", "resnet18",
                                           "squeezenet1_1", "shufflenet_v2_x1_0", "mnasnet0_5",
                                           "efficientnet_b0", "regnet_y_400mf",
                                           "mobilenet_v3_small", "googlenet", "densenet121",
                                           "resnext50_32x4d"));

}  // namespace
}  // namespace tessera::onednn::testing
