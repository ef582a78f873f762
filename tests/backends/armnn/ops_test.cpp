// The ArmNN backend's own op cases against the portable kernels: fully connected (Gemm, MatMul),
// pooling, softmax, shape ops, pad, mean, batch and layer normalisation (composed), resize, and
// the nodes check_node rejects with their reasons (supports_op says exactly what converts).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness.h"
#include "tessera/backends/armnn/network_builder.h"
#include "tessera/ir/serialize.h"
#include "tests/backends/common/elementwise_cases.h"

namespace tessera::armnn_backend::testing {
namespace {

using Op = fb::OpType;
using backend_testing::unary_case;

std::vector<ir::Dim> as_dims(const std::vector<int64_t>& d) {
  return std::vector<ir::Dim>(d.begin(), d.end());
}

/// check_node's reason for node `node` of `g` ("" when supported).
std::string rejection(const GraphCase& g, size_t node = 0) {
  auto bytes = ir::encode_graph(g.graph);
  const fb::Graph* fg = flatbuffers::GetRoot<fb::Graph>(bytes.data());
  Status s = check_node(*fg, *fg->nodes()->Get(static_cast<uint32_t>(node)), stored_dims(*fg));
  return s.is_ok() ? "" : s.message();
}

GraphCase gemm_case(int64_t m, int64_t k, int64_t n, bool trans_b, int bias_rank, float alpha,
                    float beta, fb::Activation act, uint32_t seed) {
  GraphCase g;
  g.seed = seed;
  int a = g.input({m, k});
  int b = trans_b ? g.constant({n, k}) : g.constant({k, n});
  std::vector<int> ins = {a, b};
  if (bias_rank == 1) ins.push_back(g.constant({n}));
  if (bias_rank == 2) ins.push_back(g.constant({1, n}));
  int y = g.tensor({m, n});
  ir::Node& node = g.node(Op::Gemm, ins, y);
  node.attrs.push_back(ir::Attr::make_int("transB", trans_b ? 1 : 0));
  node.attrs.push_back(ir::Attr::make_float("alpha", alpha));
  node.attrs.push_back(ir::Attr::make_float("beta", beta));
  node.activation = act;
  g.output(y);
  return g;
}

TEST(ArmnnGemm, Variants) {
  EXPECT_TRUE(
      matches_portable(gemm_case(1, 64, 100, true, 1, 1.0f, 1.0f, fb::Activation::None, 1)));
  EXPECT_TRUE(matches_portable(gemm_case(3, 17, 9, false, 2, 1.0f, 0.5f, fb::Activation::Relu, 2)));
  EXPECT_TRUE(matches_portable(gemm_case(4, 8, 5, false, 0, 2.0f, 1.0f, fb::Activation::None, 3)));
}

TEST(ArmnnMatMul, ConstantWeightsRank3Input) {
  GraphCase g;
  int a = g.input({2, 5, 16});
  int b = g.constant({16, 12});
  int y = g.tensor({2, 5, 12});
  g.node(Op::MatMul, {a, b}, y);
  g.output(y);
  EXPECT_TRUE(matches_portable(g));
}

GraphCase pool_case(Op op, std::vector<int64_t> x, std::vector<int64_t> k, std::vector<int64_t> s,
                    std::vector<int64_t> pads, std::vector<int64_t> out, int ceil, int include) {
  GraphCase g;
  int in = g.input(as_dims(x));
  int y = g.tensor(as_dims(out));
  ir::Node& node = g.node(op, {in}, y);
  node.attrs.push_back(ir::Attr::make_ints("kernel_shape", k));
  node.attrs.push_back(ir::Attr::make_ints("strides", s));
  node.attrs.push_back(ir::Attr::make_ints("pads", pads));
  node.attrs.push_back(ir::Attr::make_int("ceil_mode", ceil));
  if (op == Op::AveragePool) node.attrs.push_back(ir::Attr::make_int("count_include_pad", include));
  g.output(y);
  return g;
}

TEST(ArmnnPool, MaxAndAverage) {
  EXPECT_TRUE(matches_portable(
      pool_case(Op::MaxPool, {1, 3, 9, 9}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 3, 5, 5}, 0, 0)));
  EXPECT_TRUE(matches_portable(
      pool_case(Op::AveragePool, {2, 4, 8, 8}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {2, 4, 4, 4}, 0, 0)));
  EXPECT_TRUE(matches_portable(
      pool_case(Op::AveragePool, {1, 2, 7, 7}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 2, 4, 4}, 0, 0)));
  EXPECT_TRUE(matches_portable(
      pool_case(Op::AveragePool, {1, 2, 7, 7}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 2, 4, 4}, 0, 1)));
  EXPECT_TRUE(matches_portable(
      pool_case(Op::MaxPool, {1, 2, 8, 8}, {3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 2, 4, 4}, 1, 0)));
}

TEST(ArmnnPool, GlobalAverageAndReduceMean) {
  EXPECT_TRUE(
      matches_portable(GraphCase::single(Op::GlobalAveragePool, {{2, 5, 7, 7}}, {2, 5, 1, 1})));
  GraphCase g = GraphCase::single(Op::ReduceMean, {{2, 5, 4, 6}}, {2, 5});
  g.graph.nodes[0].attrs.push_back(ir::Attr::make_ints("axes", {2, 3}));
  g.graph.nodes[0].attrs.push_back(ir::Attr::make_int("keepdims", 0));
  EXPECT_TRUE(matches_portable(g));
}

TEST(ArmnnSoftmax, Axes) {
  for (int64_t axis : {-1, 1}) {
    GraphCase c = unary_case(Op::Softmax, {3, 10, 4}, {ir::Attr::make_int("axis", axis)});
    EXPECT_TRUE(matches_portable(c, -4.0f, 4.0f)) << axis;
  }
  EXPECT_TRUE(matches_portable(unary_case(Op::Softmax, {2, 1000}), -8.0f, 8.0f));
}

TEST(ArmnnUnary, TanhExp) {
  EXPECT_TRUE(matches_portable(unary_case(Op::Tanh, {2, 3, 5, 7}), -3.0f, 3.0f));
  EXPECT_TRUE(matches_portable(unary_case(Op::Exp, {3, 17}), -3.0f, 3.0f));
}

TEST(ArmnnShape, ReshapeTransposeConcat) {
  GraphCase g;
  int a = g.input({2, 3, 4});
  int r = g.tensor({6, 4});
  g.node(Op::Reshape, {a}, r);
  int t = g.tensor({4, 6});
  g.node(Op::Transpose, {r}, t).attrs.push_back(ir::Attr::make_ints("perm", {1, 0}));
  int b = g.input({4, 2});
  int c = g.tensor({4, 8});
  g.node(Op::Concat, {t, b}, c).attrs.push_back(ir::Attr::make_int("axis", 1));
  g.output(c);
  EXPECT_TRUE(matches_portable(g));

  GraphCase p;
  int x = p.input({2, 3, 4, 5});
  int y = p.tensor({2, 4, 5, 3});
  p.node(Op::Transpose, {x}, y).attrs.push_back(ir::Attr::make_ints("perm", {0, 2, 3, 1}));
  p.output(y);
  EXPECT_TRUE(matches_portable(p));
}

TEST(ArmnnPad, Constant) {
  GraphCase g = GraphCase::single(Op::Pad, {{1, 2, 4, 5}}, {1, 2, 7, 6});
  g.graph.nodes[0].attrs.push_back(ir::Attr::make_ints("pads", {0, 0, 1, 0, 0, 0, 2, 1}));
  g.graph.nodes[0].attrs.push_back(ir::Attr::make_float("value", 0.25f));
  EXPECT_TRUE(matches_portable(g));
}

TEST(ArmnnNorm, BatchNormalization) {
  GraphCase g;
  int x = g.input({2, 4, 5, 5});
  int scale = g.constant({4});
  int bias = g.constant({4});
  int mean = g.constant({4});
  int var = g.constant({4}, {0.5f, 1.0f, 1.5f, 2.0f});
  int y = g.tensor({2, 4, 5, 5});
  g.node(Op::BatchNormalization, {x, scale, bias, mean, var}, y);
  g.output(y);
  EXPECT_TRUE(matches_portable(g));
}

TEST(ArmnnNorm, LayerNormalizationComposed) {
  for (int64_t axis : {-1, 1}) {
    GraphCase g;
    int x = g.input({2, 5, 8});
    const std::vector<int64_t> tail =
        axis == -1 ? std::vector<int64_t>{8} : std::vector<int64_t>{5, 8};
    int scale = g.constant(tail);
    int bias = g.constant(tail);
    int y = g.tensor({2, 5, 8});
    ir::Node& n = g.node(Op::LayerNormalization, {x, scale, bias}, y);
    n.attrs.push_back(ir::Attr::make_int("axis", axis));
    g.output(y);
    EXPECT_TRUE(matches_portable(g, -3.0f, 3.0f)) << axis;
  }
}

TEST(ArmnnResize, LinearAndNearest) {
  GraphCase g = GraphCase::single(Op::Resize, {{1, 2, 4, 5}}, {1, 2, 8, 10});
  g.graph.nodes[0].attrs.push_back(ir::Attr::make_string("mode", "linear"));
  g.graph.nodes[0].attrs.push_back(
      ir::Attr::make_string("coordinate_transformation_mode", "half_pixel"));
  EXPECT_TRUE(matches_portable(g));
  GraphCase n = GraphCase::single(Op::Resize, {{1, 2, 4, 5}}, {1, 2, 8, 10});
  n.graph.nodes[0].attrs.push_back(ir::Attr::make_string("mode", "nearest"));
  n.graph.nodes[0].attrs.push_back(
      ir::Attr::make_string("coordinate_transformation_mode", "asymmetric"));
  n.graph.nodes[0].attrs.push_back(ir::Attr::make_string("nearest_mode", "floor"));
  EXPECT_TRUE(matches_portable(n));
}

TEST(ArmnnSupports, RejectionsSayWhy) {
  EXPECT_NE(rejection(unary_case(Op::Gelu, {2, 8})).find("neither a Gelu activation nor an erf"),
            std::string::npos)
      << rejection(unary_case(Op::Gelu, {2, 8}));
  GraphCase mm;
  int a = mm.input({2, 4, 8});
  int b = mm.input({2, 8, 3});
  int y = mm.tensor({2, 4, 3});
  mm.node(Op::MatMul, {a, b}, y);
  mm.output(y);
  EXPECT_NE(rejection(mm).find("no batched matrix product"), std::string::npos) << rejection(mm);
  GraphCase pad = GraphCase::single(Op::Pad, {{1, 2, 4, 5}}, {1, 2, 6, 5});
  pad.graph.nodes[0].attrs.push_back(ir::Attr::make_ints("pads", {0, 0, 1, 0, 0, 0, 1, 0}));
  pad.graph.nodes[0].attrs.push_back(ir::Attr::make_string("mode", "reflect"));
  EXPECT_NE(rejection(pad).find("only constant padding"), std::string::npos) << rejection(pad);
  // The same node through init: NotSupported with the same reason.
  auto r = run_armnn(pad, random_inputs(pad, 1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Error::NotSupported);
  EXPECT_NE(std::string(r.status().message()).find("only constant padding"), std::string::npos);
}

}  // namespace
}  // namespace tessera::armnn_backend::testing
