// End to end on the PyTorch-exported fixtures (tests/models/make_fixtures.py): compile each model
// with ArmNN as the delegate backend, load it with backends=CpuRef, run it through the runtime
// and compare with PyTorch's outputs (max |diff| <= 1e-4 * max |ref|). The fixture helpers are
// the oneDNN tests' (tests/backends/onednn/model_util.h), which take the backend list.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "tessera/backend/options.h"
#include "tessera/backend/options_map.h"
#include "tessera/backends/armnn/options.h"
#include "tessera/runtime/data_loader.h"
#include "tests/backends/onednn/model_util.h"

namespace tessera::armnn_backend::testing {
namespace {

using onednn::testing::AlignedBytes;
using onednn::testing::compile_fixture;
using onednn::testing::fixture_dir;
using onednn::testing::run_fixture;

struct ModelCase {
  const char* name;
  bool batch4;  // also run the batch-4 input (CpuRef is slow on the large CNNs)
};

class ArmnnModel : public ::testing::TestWithParam<ModelCase> {};

TEST_P(ArmnnModel, MatchesPyTorchOnCpuRef) {
  const std::string name = GetParam().name;
  if (!std::filesystem::exists(fixture_dir() + "/" + name + "/model.onnx")) {
    GTEST_SKIP() << "fixture missing (run tests/models/make_fixtures.py)";
  }
  auto bytes = compile_fixture(name, {"armnn"});
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  AlignedBytes file(*bytes);
  BufferDataLoader loader(file.data(), file.size());
  auto program = Program::load(&loader);
  ASSERT_TRUE(program.ok()) << program.status().message();
  LoadBackendOptionsMap map;
  ASSERT_TRUE(map.set("armnn", kBackends, std::string_view("CpuRef")).is_ok());
  LoadOptions load;
  load.backend_options = &map;
  for (const char* suffix : {"", "_b4"}) {
    if (suffix[0] != '\0' && !GetParam().batch4) continue;
    auto run = run_fixture(*program, name, suffix, load);
    ASSERT_TRUE(run.ok()) << run.status().message();
    ASSERT_GE(run->delegates, 1u);
    for (const std::string& b : run->delegate_backends) EXPECT_EQ(b, "armnn");
    std::printf("  %s%s: %zu armnn delegate(s), max |diff| %.3g, max |ref| %.3g\n", name.c_str(),
                suffix, run->delegates, run->max_diff, run->max_ref);
    EXPECT_LE(run->max_diff, 1e-4 * run->max_ref) << name << suffix;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, ArmnnModel,
    ::testing::Values(ModelCase{"mlp", true}, ModelCase{"mlp_op11", true},
                      ModelCase{"transformer", true}, ModelCase{"ops_mix", true},
                      ModelCase{"mobilenet_v2", false}, ModelCase{"resnet18", false}),
    [](const ::testing::TestParamInfo<ModelCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace tessera::armnn_backend::testing
