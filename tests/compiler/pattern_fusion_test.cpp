#include "tessera/compiler/passes/pattern_fusion.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "tests/compiler/program_runner.h"
#include "tests/compiler/test_util.h"

namespace tessera::compiler {
namespace {

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

}  // namespace
}  // namespace tessera::compiler
