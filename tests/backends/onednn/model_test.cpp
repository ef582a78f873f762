// End to end on the PyTorch-exported fixtures (tests/models/make_fixtures.py): compile each model
// with oneDNN as the delegate backend, load and run it through the runtime, and compare with
// PyTorch's outputs (max |diff| <= 1e-4 * max |ref|) at batch 1 and 4.
#include <gtest/gtest.h>

#include <filesystem>

#include "model_util.h"
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
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, OnednnModel,
                         ::testing::Values("mlp", "mlp_op11", "mlp_op17", "transformer",
                                           "mobilenet_v2", "resnet18", "squeezenet1_0",
                                           "shufflenet_v2_x0_5", "mnasnet0_5", "efficientnet_b0",
                                           "regnet_y_400mf", "mobilenet_v3_small", "googlenet",
                                           "densenet121", "resnext50_32x4d"));

}  // namespace
}  // namespace tessera::onednn::testing
