// Conformance: binary ops with broadcasting, activations and other unary ops, PRelu.
#include <gtest/gtest.h>

#include "harness.h"

namespace tessera::xnnpack::testing {
namespace {

using Op = fb::OpType;

constexpr Op kBinaryOps[] = {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Max, Op::Min};

// x (graph input, dims a) op y (graph input or constant, dims b).
GraphCase binary_case(Op op, std::vector<int64_t> a, std::vector<int64_t> b, bool b_constant,
                      uint32_t seed, fb::Activation act = fb::Activation::None) {
  GraphCase c;
  c.seed = seed;
  int x = c.input(std::vector<ir::Dim>(a.begin(), a.end()));
  int y = b_constant ? c.constant(b) : c.input(std::vector<ir::Dim>(b.begin(), b.end()));
  if (op == Op::Div && b_constant) {
    for (float& f : c.constants.back()) f = f < 0 ? f - 0.5f : f + 0.5f;  // away from 0
  }
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t da = d + a.size() >= rank ? a[d + a.size() - rank] : 1;
    const int64_t db = d + b.size() >= rank ? b[d + b.size() - rank] : 1;
    out[d] = std::max(da, db);
  }
  int z = c.tensor(std::vector<ir::Dim>(out.begin(), out.end()));
  c.node(op, {x, y}, z).activation = act;
  c.output(z);
  return c;
}

// Div's divisor must stay away from 0: inputs in [0.5, 1.5].
::testing::AssertionResult check(const GraphCase& c, Op op) {
  return op == Op::Div ? matches_portable(c, 0.5f, 1.5f) : matches_portable(c);
}

TEST(XnnpackBinary, SameShape) {
  for (Op op : kBinaryOps) {
    SCOPED_TRACE(static_cast<int>(op));
    EXPECT_TRUE(check(binary_case(op, {2, 3, 5, 7}, {2, 3, 5, 7}, false, 1), op));
  }
}

TEST(XnnpackBinary, ChannelBroadcastConstant) {
  for (Op op : kBinaryOps) {
    SCOPED_TRACE(static_cast<int>(op));
    EXPECT_TRUE(check(binary_case(op, {1, 6, 5, 4}, {6, 1, 1}, true, 2), op));
    EXPECT_TRUE(check(binary_case(op, {1, 6, 5, 4}, {1, 6, 1, 1}, true, 3), op));
    EXPECT_TRUE(check(binary_case(op, {2, 6, 5, 4}, {4}, true, 4), op));
    EXPECT_TRUE(check(binary_case(op, {2, 6, 5, 4}, {}, true, 5), op));
    EXPECT_TRUE(check(binary_case(op, {2, 6, 5, 4}, {6, 5, 4}, true, 6), op));
  }
}

TEST(XnnpackBinary, TwoActivationsBroadcast) {
  for (Op op : kBinaryOps) {
    SCOPED_TRACE(static_cast<int>(op));
    EXPECT_TRUE(check(binary_case(op, {2, 3, 4, 5}, {3, 1, 5}, false, 7), op));
    EXPECT_TRUE(check(binary_case(op, {2, 1, 4, 1}, {1, 3, 1, 5}, false, 8), op));
    EXPECT_TRUE(check(binary_case(op, {7, 1}, {1, 9}, false, 9), op));
    EXPECT_TRUE(check(binary_case(op, {2, 1, 3, 1, 2, 3}, {3, 1, 2, 1}, false, 10), op));
  }
}

TEST(XnnpackBinary, FusedActivations) {
  for (Op op : {Op::Add, Op::Sub, Op::Mul, Op::Div}) {
    EXPECT_TRUE(
        check(binary_case(op, {1, 4, 3, 3}, {4, 1, 1}, true, 11, fb::Activation::Relu), op));
  }
}

GraphCase unary_case(Op op, std::vector<int64_t> dims, std::vector<ir::Attr> attrs = {}) {
  GraphCase c = GraphCase::single(op, {dims}, dims);
  c.graph.nodes[0].attrs = std::move(attrs);
  return c;
}

TEST(XnnpackUnary, Activations) {
  for (std::vector<int64_t> dims : {std::vector<int64_t>{1, 5, 7, 3}, {3, 17}, {2, 3, 4, 5, 6}}) {
    EXPECT_TRUE(matches_portable(unary_case(Op::Relu, dims), -3.0f, 3.0f));
    EXPECT_TRUE(matches_portable(
        unary_case(Op::Clip, dims,
                   {ir::Attr::make_float("min", 0.0f), ir::Attr::make_float("max", 6.0f)}),
        -8.0f, 8.0f));
    EXPECT_TRUE(matches_portable(unary_case(Op::Clip, dims, {ir::Attr::make_float("max", 0.5f)})));
    EXPECT_TRUE(matches_portable(
        unary_case(Op::LeakyRelu, dims, {ir::Attr::make_float("alpha", 0.1f)}), -3.0f, 3.0f));
    EXPECT_TRUE(matches_portable(unary_case(Op::LeakyRelu, dims), -3.0f, 3.0f));
    EXPECT_TRUE(matches_portable(unary_case(Op::Sigmoid, dims), -8.0f, 8.0f));
    EXPECT_TRUE(matches_portable(unary_case(Op::HardSwish, dims), -5.0f, 5.0f));
    EXPECT_TRUE(matches_portable(unary_case(Op::HardSigmoid, dims), -5.0f, 5.0f));
    EXPECT_TRUE(matches_portable(unary_case(Op::HardSigmoid, dims,
                                            {ir::Attr::make_float("alpha", 1.0f / 6.0f),
                                             ir::Attr::make_float("beta", 0.5f)}),
                                 -5.0f, 5.0f));
  }
}

TEST(XnnpackUnary, Math) {
  for (std::vector<int64_t> dims : {std::vector<int64_t>{1, 5, 7, 3}, {31}}) {
    EXPECT_TRUE(matches_portable(unary_case(Op::Neg, dims)));
    EXPECT_TRUE(matches_portable(unary_case(Op::Abs, dims)));
    EXPECT_TRUE(matches_portable(unary_case(Op::Sqrt, dims), 0.0f, 4.0f));
    EXPECT_TRUE(matches_portable(unary_case(Op::Identity, dims)));
  }
}

GraphCase prelu_case(std::vector<int64_t> x, std::vector<int64_t> slope, uint32_t seed) {
  GraphCase c;
  c.seed = seed;
  int in = c.input(std::vector<ir::Dim>(x.begin(), x.end()));
  int s = c.constant(slope);
  int y = c.tensor(std::vector<ir::Dim>(x.begin(), x.end()));
  c.node(Op::PRelu, {in, s}, y);
  c.output(y);
  return c;
}

TEST(XnnpackPRelu, SlopeShapes) {
  EXPECT_TRUE(matches_portable(prelu_case({1, 6, 5, 7}, {6, 1, 1}, 1)));     // channels
  EXPECT_TRUE(matches_portable(prelu_case({2, 6, 5, 7}, {1, 6, 1, 1}, 2)));  // channels
  EXPECT_TRUE(matches_portable(prelu_case({1, 6, 5, 7}, {7}, 3)));           // innermost
  EXPECT_TRUE(matches_portable(prelu_case({1, 6, 5, 7}, {1}, 4)));           // scalar
  EXPECT_TRUE(matches_portable(prelu_case({3, 10}, {10}, 5)));               // 2-D
}

}  // namespace
}  // namespace tessera::xnnpack::testing

namespace tessera::xnnpack::testing {
namespace {

GraphCase batch_norm_case(std::vector<int64_t> x, uint32_t seed, bool after_conv) {
  GraphCase c;
  c.seed = seed;
  const int64_t ch = x[1];
  int in = c.input(std::vector<ir::Dim>(x.begin(), x.end()));
  if (after_conv) {
    int w = c.constant({ch, ch, 1, 1});
    int t = c.tensor(std::vector<ir::Dim>(x.begin(), x.end()));
    c.node(fb::OpType::Conv, {in, w}, t);
    in = t;
  }
  Floats var(static_cast<size_t>(ch));
  for (size_t k = 0; k < var.size(); ++k) var[k] = 0.5f + 0.1f * static_cast<float>(k);
  int gamma = c.constant({ch}), beta = c.constant({ch}), mean = c.constant({ch});
  int v = c.constant({ch}, var);
  int y = c.tensor(std::vector<ir::Dim>(x.begin(), x.end()));
  c.node(fb::OpType::BatchNormalization, {in, gamma, beta, mean, v}, y).attrs = {
      ir::Attr::make_float("epsilon", 1e-3f)};
  c.output(y);
  return c;
}

TEST(XnnpackBatchNorm, Inference) {
  EXPECT_TRUE(matches_portable(batch_norm_case({2, 5, 4, 3}, 1, false)));
  EXPECT_TRUE(matches_portable(batch_norm_case({2, 5, 4, 3}, 2, true)));
  EXPECT_TRUE(matches_portable(batch_norm_case({3, 7}, 3, false)));
}

}  // namespace
}  // namespace tessera::xnnpack::testing
