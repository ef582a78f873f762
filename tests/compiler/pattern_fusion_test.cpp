#include "tessera/compiler/passes/pattern_fusion.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "tests/compiler/program_runner.h"
#include "tests/compiler/test_util.h"

namespace tessera::compiler {
namespace {

using testing::channel_shuffle_model;
using testing::compile_model;
using testing::HostArray;
using testing::import_model;
using testing::OnnxBuilder;
using testing::op_names;

// Runs `b` compiled with and without pattern fusion on the same input; returns max |diff|.
double fused_vs_unfused(const OnnxBuilder& b, const HostArray& input) {
  CompileOptions plain;
  plain.passes.fuse_patterns = false;
  auto a = compile_model(b, {}, plain);
  auto f = compile_model(b, {});
  EXPECT_TRUE(a.ok() && f.ok());
  if (!a.ok() || !f.ok()) return INFINITY;
  auto ra = testing::run_program(a->program.build().value(), {}, {input});
  auto rf = testing::run_program(f->program.build().value(), {}, {input});
  EXPECT_TRUE(ra.ok()) << ra.status().message();
  EXPECT_TRUE(rf.ok()) << rf.status().message();
  if (!ra.ok() || !rf.ok()) return INFINITY;
  double d = 0;
  for (size_t i = 0; i < (*ra)[0].data.size(); ++i) d = std::max(d, std::fabs(double((*ra)[0].data[i]) - (*rf)[0].data[i]));
  return d;
}

HostArray random_input(std::vector<int64_t> dims) {
  std::mt19937 rng(3);
  std::normal_distribution<float> n(0.0f, 2.0f);
  HostArray a;
  a.dims = dims;
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  for (int64_t i = 0; i < count; ++i) a.data.push_back(n(rng));
  return a;
}

OnnxBuilder gelu_model(bool half_first) {
  OnnxBuilder b(13);
  b.input("x", {int64_t{2}, int64_t{8}});
  b.floats("sqrt2", {}, {1.4142135381698608f});
  b.floats("one", {}, {1.0f});
  b.floats("half", {}, {0.5f});
  b.node("Div", {"x", "sqrt2"}, {"t"});
  b.node("Erf", {"t"}, {"e"});
  b.node("Add", {"e", "one"}, {"a"});
  if (half_first) {
    b.node("Mul", {"half", "x"}, {"h"});
    b.node("Mul", {"h", "a"}, {"y"});
  } else {
    b.node("Mul", {"x", "a"}, {"xa"});
    b.node("Mul", {"xa", "half"}, {"y"});
  }
  b.output("y");
  return b;
}

TEST(PatternFusion, GeluInBothOrders) {
  for (bool half_first : {false, true}) {
    auto g = import_model(gelu_model(half_first));
    ASSERT_OK(g);
    EXPECT_EQ(fuse_gelu(*g), 1);
    ASSERT_EQ(op_names(g->nodes), std::vector<std::string>{"Gelu"});
    EXPECT_EQ(g->nodes[0].inputs[0], g->inputs[0]);
    EXPECT_EQ(g->nodes[0].outputs[0], g->outputs[0]);
    EXPECT_LT(fused_vs_unfused(gelu_model(half_first), random_input({2, 8})), 1e-5);
  }
}

TEST(PatternFusion, GeluWithASharedIntermediateIsLeftAlone) {
  OnnxBuilder b = gelu_model(false);
  b.output("e");  // erf(x / sqrt 2) is also an output
  auto g = import_model(b);
  ASSERT_OK(g);
  EXPECT_EQ(fuse_gelu(*g), 0);
}

OnnxBuilder layer_norm_model(bool affine) {
  OnnxBuilder b(13);
  b.input("x", {int64_t{3}, int64_t{4}, int64_t{6}});
  b.floats("two", {}, {2.0f});
  b.floats("eps", {}, {1e-5f});
  b.floats("w", {6}, {1, 2, 3, 4, 5, 6});
  b.floats("bias", {6}, {0.5f, -0.5f, 1, -1, 0, 2});
  b.node("ReduceMean", {"x"}, {"m"}).ints("axes", {-1});
  b.node("Sub", {"x", "m"}, {"d"});
  b.node("Pow", {"d", "two"}, {"p"});
  b.node("ReduceMean", {"p"}, {"v"}).ints("axes", {-1});
  b.node("Add", {"v", "eps"}, {"ve"});
  b.node("Sqrt", {"ve"}, {"s"});
  b.node("Div", {"d", "s"}, {"n"});
  if (affine) {
    b.node("Mul", {"n", "w"}, {"nw"});
    b.node("Add", {"nw", "bias"}, {"y"});
    b.output("y");
  } else {
    b.output("n");
  }
  return b;
}

TEST(PatternFusion, LayerNormalizationFromItsOpset13Spelling) {
  for (bool affine : {true, false}) {
    auto g = import_model(layer_norm_model(affine));
    ASSERT_OK(g);
    EXPECT_EQ(fuse_layer_norm(*g), 1);
    ASSERT_EQ(op_names(g->nodes), std::vector<std::string>{"LayerNormalization"});
    const ir::Node& ln = g->nodes[0];
    EXPECT_EQ(ln.find_attr("axis")->i, 2);
    EXPECT_FLOAT_EQ(ln.find_attr("epsilon")->f, 1e-5f);
    EXPECT_EQ(ln.outputs[0], g->outputs[0]);
    ASSERT_EQ(ln.inputs.size(), 3u);
    EXPECT_EQ(ln.inputs[2] >= 0, affine);
    EXPECT_LT(fused_vs_unfused(layer_norm_model(affine), random_input({3, 4, 6})), 1e-5);
  }
}

TEST(PatternFusion, ReductionOverALeadingAxisIsNotALayerNorm) {
  OnnxBuilder b(13);
  b.input("x", {int64_t{3}, int64_t{6}});
  b.floats("two", {}, {2.0f});
  b.floats("eps", {}, {1e-5f});
  b.node("ReduceMean", {"x"}, {"m"}).ints("axes", {0});
  b.node("Sub", {"x", "m"}, {"d"});
  b.node("Pow", {"d", "two"}, {"p"});
  b.node("ReduceMean", {"p"}, {"v"}).ints("axes", {0});
  b.node("Add", {"v", "eps"}, {"ve"});
  b.node("Sqrt", {"ve"}, {"s"});
  b.node("Div", {"d", "s"}, {"n"});
  b.output("n");
  auto g = import_model(b);
  ASSERT_OK(g);
  EXPECT_EQ(fuse_layer_norm(*g), 0);
}

// ---- ChannelShuffle
// ------------------------------------------------------------------------------

// x [2, 12, 3, 5] -> Reshape `split` -> Transpose `perm` -> Reshape back to [2, 12, 3, 5].
struct ShuffleSpec {
  std::vector<int64_t> split = {2, 3, 4, 3, 5};
  std::vector<int64_t> perm = {0, 2, 1, 3, 4};
  bool transposed_is_read_twice = false;  // a Relu also reads the Transpose's output
  bool split_is_an_output = false;
};

OnnxBuilder shuffle_model(const ShuffleSpec& spec) {
  OnnxBuilder b(13);
  b.input("x", {int64_t{2}, int64_t{12}, int64_t{3}, int64_t{5}});
  b.ints("split_shape", {static_cast<int64_t>(spec.split.size())}, spec.split);
  b.ints("back_shape", {4}, {2, 12, 3, 5});
  b.node("Reshape", {"x", "split_shape"}, {"r5"});
  b.node("Transpose", {"r5"}, {"t5"}).ints("perm", spec.perm);
  b.node("Reshape", {"t5", "back_shape"}, {"y"}, "shuffle_back");
  b.output("y");
  if (spec.transposed_is_read_twice) {
    b.node("Relu", {"t5"}, {"side"});
    b.output("side");
  }
  if (spec.split_is_an_output) b.output("r5");
  return b;
}

TEST(PatternFusion, ChannelShuffleFromReshapeTransposeReshape) {
  auto g = import_model(shuffle_model({}));
  ASSERT_OK(g);
  EXPECT_EQ(fuse_channel_shuffle(*g), 1);
  ASSERT_EQ(op_names(g->nodes), std::vector<std::string>{"ChannelShuffle"});
  const ir::Node& n = g->nodes[0];
  EXPECT_EQ(n.name, "shuffle_back");
  EXPECT_EQ(n.find_attr("group")->i, 3);
  EXPECT_EQ(n.inputs[0], g->inputs[0]);
  EXPECT_EQ(n.outputs[0], g->outputs[0]);
  EXPECT_EQ(fused_vs_unfused(shuffle_model({}), random_input({2, 12, 3, 5})), 0.0);
}

// The semantics, against the definition rather than the unfused graph: output channel j*g + i is
// input channel i*(C/g) + j.
TEST(PatternFusion, ChannelShuffleMovesChannelsAsDefined) {
  auto c = compile_model(shuffle_model({}));
  ASSERT_OK(c);
  ASSERT_EQ(op_names(c->graph.nodes), std::vector<std::string>{"ChannelShuffle"});
  const HostArray x = random_input({2, 12, 3, 5});
  auto y = testing::run_program(c->program.build().value(), {}, {x});
  ASSERT_OK(y);
  const int64_t g = 3, cpg = 4, plane = 15;
  for (int64_t n = 0; n < 2; ++n) {
    for (int64_t i = 0; i < g; ++i) {
      for (int64_t j = 0; j < cpg; ++j) {
        for (int64_t p = 0; p < plane; ++p) {
          const float out = (*y)[0].data[(n * 12 + j * g + i) * plane + p];
          const float in = x.data[(n * 12 + i * cpg + j) * plane + p];
          ASSERT_EQ(out, in) << "n " << n << " i " << i << " j " << j;
        }
      }
    }
  }
}

// ShuffleNet's export with a dynamic batch (channel_shuffle_model, onnx_builder.h): the target
// shapes come from Shape/Gather/Concat and fold to expressions over `batch`; the pattern still
// matches.
TEST(PatternFusion, ChannelShuffleWithASymbolicBatch) {
  CompileOptions plain;
  plain.passes.fuse_patterns = false;
  auto a = compile_model(channel_shuffle_model(8, 3), {{"batch", 1, 4}}, plain);
  auto f = compile_model(channel_shuffle_model(8, 3), {{"batch", 1, 4}});
  ASSERT_OK(a);
  ASSERT_OK(f);
  EXPECT_EQ(op_names(a->graph.nodes),
            (std::vector<std::string>{"Reshape", "Transpose", "Reshape"}));
  ASSERT_EQ(op_names(f->graph.nodes), std::vector<std::string>{"ChannelShuffle"});
  EXPECT_EQ(f->graph.nodes[0].find_attr("group")->i, 2);
  const HostArray x = random_input({3, 8, 3, 3});
  auto ra = testing::run_program(a->program.build().value(), {3}, {x});
  auto rf = testing::run_program(f->program.build().value(), {3}, {x});
  ASSERT_OK(ra);
  ASSERT_OK(rf);
  EXPECT_EQ((*ra)[0].dims, (std::vector<int64_t>{3, 8, 3, 3}));
  EXPECT_EQ((*ra)[0].data, (*rf)[0].data);
}

TEST(PatternFusion, ChannelShuffleLeavesOtherPatternsAlone) {
  ShuffleSpec read_twice;
  read_twice.transposed_is_read_twice = true;
  ShuffleSpec split_out;
  split_out.split_is_an_output = true;
  ShuffleSpec wrong_perm;
  wrong_perm.perm = {0, 1, 2, 4, 3};
  ShuffleSpec height_split;  // [2, 12, 3, 5] as [2, 12, 3, 5, 1]: a unit axis added, C not split
  height_split.split = {2, 12, 3, 5, 1};
  ShuffleSpec batch_split;  // [2, 12, 3, 5] as [1, 2, 12, 3, 5]: the batch axis, not the channels
  batch_split.split = {1, 2, 12, 3, 5};
  for (const ShuffleSpec& spec : {read_twice, split_out, wrong_perm, height_split, batch_split}) {
    auto g = import_model(shuffle_model(spec));
    ASSERT_OK(g);
    const std::vector<std::string> before = op_names(g->nodes);
    EXPECT_EQ(fuse_channel_shuffle(*g), 0);
    EXPECT_EQ(op_names(g->nodes), before);
  }
}

// A rank-3 shuffle ([N, C, L] -> [N, g, C/g, L], perm 0 2 1 3) is a different pattern: left alone.
TEST(PatternFusion, ChannelShuffleOfRank3IsLeftAlone) {
  OnnxBuilder b(13);
  b.input("x", {int64_t{2}, int64_t{12}, int64_t{5}});
  b.ints("split_shape", {4}, {2, 3, 4, 5});
  b.ints("back_shape", {3}, {2, 12, 5});
  b.node("Reshape", {"x", "split_shape"}, {"r4"});
  b.node("Transpose", {"r4"}, {"t4"}).ints("perm", {0, 2, 1, 3});
  b.node("Reshape", {"t4", "back_shape"}, {"y"});
  b.output("y");
  auto g = import_model(b);
  ASSERT_OK(g);
  EXPECT_EQ(fuse_channel_shuffle(*g), 0);
}

}  // namespace
}  // namespace tessera::compiler
