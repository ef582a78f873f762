// End-to-end numerics on the PyTorch-exported fixtures (make_fixtures.py): compile each model
// with the compiler library and run the program over the portable kernels at batch 1 and 4,
// comparing to PyTorch's outputs within max |diff| <= 1e-4 * max |ref|.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "tessera/compiler/compiler.h"
#include "tessera/compiler/graph_dump.h"
#include "tests/compiler/program_runner.h"

namespace tessera::compiler {
namespace {

using testing::HostArray;

std::string fixture_dir() {
  const char* env = std::getenv("TESSERA_FIXTURES");
  return env ? env : TESSERA_FIXTURES_DIR;
}

struct Comparison {
  double max_diff = 0;
  double max_ref = 0;
};

Comparison compare(const HostArray& got, const HostArray& ref) {
  Comparison c;
  EXPECT_EQ(got.dims, ref.dims);
  if (got.data.size() != ref.data.size()) return {INFINITY, 0};
  for (size_t i = 0; i < ref.data.size(); ++i) {
    c.max_ref = std::max(c.max_ref, std::fabs(static_cast<double>(ref.data[i])));
    const double d = std::fabs(static_cast<double>(got.data[i]) - ref.data[i]);
    c.max_diff = std::isnan(d) ? INFINITY : std::max(c.max_diff, d);
  }
  return c;
}

class ModelTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelTest, MatchesPyTorch) {
  const std::string dir = fixture_dir() + "/" + GetParam();
  if (!std::filesystem::exists(dir + "/model.onnx")) {
    GTEST_SKIP() << "fixture missing: " << dir << " (run tests/models/make_fixtures.py)";
  }
  CompileOptions options;
  options.import.dims = {{"batch", 1, 8}};
  if (GetParam() == "transformer_seq") options.import.dims.push_back({"seq", 1, 32});
  auto compiled = compile_onnx_file(dir + "/model.onnx", options);
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  auto bytes = compiled->program.build();
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  for (const char* suffix : {"", "_b4"}) {
    auto input = testing::read_npy(dir + "/input" + suffix + ".npy");
    auto ref = testing::read_npy(dir + "/output" + suffix + ".npy");
    ASSERT_TRUE(input.ok()) << input.status().message();
    ASSERT_TRUE(ref.ok()) << ref.status().message();
    auto out = testing::run_program(bytes.value(), {}, {input.value()});
    ASSERT_TRUE(out.ok()) << out.status().message();
    ASSERT_EQ(out->size(), 1u);
    const Comparison c = compare((*out)[0], ref.value());
    EXPECT_GT(c.max_ref, 0.05) << "reference is near zero";
    std::printf("%s input %s: max |diff| %.3g, max |ref| %.3g (ratio %.2g)\n", GetParam().c_str(),
                suffix[0] ? "2" : "1", c.max_diff, c.max_ref, c.max_diff / c.max_ref);
    EXPECT_LE(c.max_diff, 1e-4 * c.max_ref) << GetParam() << " input" << suffix << ": max |diff| "
                                            << c.max_diff << ", max |ref| " << c.max_ref;
  }
}

#ifdef TESSERA_EXTRA_MODELS
// shufflenet's channel shuffle, exported with a dynamic batch, computes its view shapes with
// Shape/Gather/Div/Unsqueeze/Concat: they must fold into shape expressions over `batch`.
TEST(ShuffleNet, ChannelShuffleFoldsIntoShapeExpressions) {
  const std::string path = fixture_dir() + "/shufflenet_v2_x1_0/model.onnx";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "fixture missing: " << path;
  // Without pattern fusion, to see the folded shape of the first Reshape (pattern fusion makes
  // each Reshape, Transpose, Reshape one ChannelShuffle: checked below).
  CompileOptions options;
  options.import.dims = {{"batch", 1, 8}};
  options.passes.fuse_patterns = false;
  auto compiled = compile_onnx_file(path, options);
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  const std::string text = graph_to_string(compiled->graph);
  EXPECT_NE(text.find("-> /stage2/stage2.0/Reshape_output_0 [batch (<= 8), 2, 58, 28, 28]"),
            std::string::npos)
      << text;
  for (const ir::Node& n : compiled->graph.nodes) {
    EXPECT_NE(n.op, fb::OpType::Gather) << "shape arithmetic left in the program: " << n.name;
    EXPECT_NE(n.op, fb::OpType::Cast) << "shape arithmetic left in the program: " << n.name;
  }
  options.passes.fuse_patterns = true;
  auto fused = compile_onnx_file(path, options);
  ASSERT_TRUE(fused.ok()) << fused.status().message();
  int shuffles = 0;
  for (const ir::Node& n : fused->graph.nodes) {
    EXPECT_NE(n.op, fb::OpType::Transpose) << "channel shuffle left unfused: " << n.name;
    if (n.op != fb::OpType::ChannelShuffle) continue;
    ++shuffles;
    ASSERT_NE(n.find_attr("group"), nullptr);
    EXPECT_EQ(n.find_attr("group")->i, 2) << n.name;
  }
  EXPECT_EQ(shuffles, 16);
}

// More torchvision classifiers (make_fixtures.py --extra); slow, labelled `slow`.
INSTANTIATE_TEST_SUITE_P(Torchvision, ModelTest,
                         ::testing::Values("squeezenet1_1", "shufflenet_v2_x1_0", "mnasnet0_5",
                                           "efficientnet_b0", "regnet_y_400mf",
                                           "mobilenet_v3_small", "googlenet", "densenet121",
                                           "resnext50_32x4d"));
#else
INSTANTIATE_TEST_SUITE_P(Fixtures, ModelTest,
                         ::testing::Values("mlp", "mlp_op11", "mlp_op17", "transformer", "transformer_op17", "transformer_seq", "ops_mix", "ops_mix_op11",
                                           "mobilenet_v2", "resnet18"));
#endif

}  // namespace
}  // namespace tessera::compiler
