// Conformance: binary arithmetic with broadcasting, and every unary activation.
#include <gtest/gtest.h>

#include "harness.h"
#include "tests/backends/common/conformance.h"

namespace tessera::opencl::testing {
namespace {

using Op = fb::OpType;

TEST(OpenClBinary, SameShapeAndBroadcast) {
  for (Op op : {Op::Add, Op::Sub, Op::Mul, Op::Div}) {
    SCOPED_TRACE(fb::EnumNameOpType(op));
    GraphCase g;
    int a = g.input({2, 3, 4, 5});
    int b = g.input({2, 3, 4, 5});
    int c = g.input({3, 1, 5});
    int d = g.constant({1});
    int t1 = g.tensor({2, 3, 4, 5});
    int t2 = g.tensor({2, 3, 4, 5});
    int y = g.tensor({2, 3, 4, 5});
    g.node(op, {a, b}, t1);
    g.node(op, {t1, c}, t2);
    g.node(op, {t2, d}, y).activation = fb::Activation::Relu;
    g.output(y);
    // Divisors away from zero.
    EXPECT_TRUE(matches_portable(g, 0.5f, 2.0f));
  }
}

TEST(OpenClBinary, BothSidesBroadcastAndPow) {
  GraphCase g;
  int a = g.input({4, 1, 3});
  int b = g.input({5, 1});
  int y = g.tensor({4, 5, 3});
  int z = g.tensor({4, 5, 3});
  g.node(Op::Add, {a, b}, y);
  int e = g.constant({1}, {2.0f});
  g.node(Op::Pow, {y, e}, z);
  g.output(z);
  EXPECT_TRUE(matches_portable(g));
}

GraphCase unary(Op op, std::vector<ir::Attr> attrs = {}) {
  GraphCase g = GraphCase::single(op, {{2, 3, 7}}, {2, 3, 7});
  g.graph.nodes[0].attrs = std::move(attrs);
  return g;
}

TEST(OpenClUnary, Activations) {
  for (Op op : {Op::Relu, Op::Sigmoid, Op::Tanh, Op::HardSwish, Op::HardSigmoid, Op::LeakyRelu,
                Op::Gelu, Op::Erf, Op::Exp, Op::Neg, Op::Abs, Op::Mish}) {
    SCOPED_TRACE(fb::EnumNameOpType(op));
    EXPECT_TRUE(matches_portable(unary(op), -4.0f, 4.0f));
  }
}

TEST(OpenClUnary, AttributesAndPositiveOnly) {
  EXPECT_TRUE(matches_portable(
      unary(Op::Clip, {ir::Attr::make_float("min", -0.5f), ir::Attr::make_float("max", 0.25f)})));
  EXPECT_TRUE(matches_portable(unary(Op::Clip, {ir::Attr::make_float("min", 0.0f)})));
  EXPECT_TRUE(matches_portable(unary(Op::LeakyRelu, {ir::Attr::make_float("alpha", 0.3f)})));
  EXPECT_TRUE(matches_portable(unary(
      Op::HardSigmoid, {ir::Attr::make_float("alpha", 0.4f), ir::Attr::make_float("beta", 0.1f)})));
  EXPECT_TRUE(matches_portable(unary(Op::Gelu, {ir::Attr::make_string("approximate", "tanh")}),
                               -3.0f, 3.0f));
  EXPECT_TRUE(matches_portable(unary(Op::Sqrt), 0.1f, 4.0f));
  EXPECT_TRUE(matches_portable(unary(Op::Reciprocal), 0.5f, 4.0f));
}

}  // namespace
}  // namespace tessera::opencl::testing

// The shared unary cases too (every op in them has an OpenCL kernel); the binary family also
// has Max and Min, which the OpenCL code generator does not emit.
namespace tessera::backend_testing {
INSTANTIATE_TEST_SUITE_P(Conformance, Unary, ::testing::Values(opencl::testing::kBackendName),
                         BackendParamName());
}  // namespace tessera::backend_testing
