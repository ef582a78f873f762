// The OpenCL backend's reshape family as buffer aliases: a chain of them runs as one kernel; and
// its vectorised elementwise kernels. The shape ops every backend shares are in
// tests/backends/common/shape_test.cpp.
#include <gtest/gtest.h>

#include "harness.h"

namespace tessera::opencl::testing {
namespace {

using Op = fb::OpType;

TEST(OpenClShape, AliasChain) {
  GraphCase g;
  int x = g.input({2, 3, 4});
  int r = g.tensor({6, 4});
  int f = g.tensor({6, 4});
  int u = g.tensor({1, 6, 4});
  int s = g.tensor({6, 4});
  int y = g.tensor({6, 4});
  g.node(Op::Reshape, {x}, r);
  g.node(Op::Flatten, {r}, f).attrs.push_back(ir::Attr::make_int("axis", 1));
  g.node(Op::Unsqueeze, {f}, u).attrs.push_back(ir::Attr::make_ints("axes", {0}));
  g.node(Op::Squeeze, {u}, s).attrs.push_back(ir::Attr::make_ints("axes", {0}));
  g.node(Op::Relu, {s}, y);
  g.output(y);
  EXPECT_TRUE(matches_portable(g));
  Session session;
  ASSERT_TRUE(session.init(g).is_ok());
  EXPECT_EQ(session.summary().aliases, 4u);
  EXPECT_EQ(session.summary().kernels, 1u);
}

// Elementwise ops without broadcast run eight elements per work item as float8 and the tensor's
// tail one by one: 8k + 5 elements, every unary expression (and the fused activations) on both
// paths, a same-shape binary chain, and a broadcasting Add that keeps one element per item.
TEST(OpenClElementwise, VectorBodyAndTail) {
  GraphCase g;
  int v = g.input({3, 7});  // 21 elements: two vectors and a tail of 5
  const int other = g.input({3, 7});
  for (Op op : {Op::Relu, Op::Sigmoid, Op::Tanh, Op::Erf, Op::Exp, Op::Neg, Op::Abs, Op::HardSwish,
                Op::Mish, Op::LeakyRelu, Op::Elu, Op::HardSigmoid, Op::Gelu}) {
    const int y = g.tensor({3, 7});
    ir::Node& n = g.node(op, {v}, y);
    if (op == Op::Gelu) n.attrs.push_back(ir::Attr::make_string("approximate", "tanh"));
    if (op == Op::Tanh) n.activation = fb::Activation::Relu;
    v = y;
  }
  for (Op op : {Op::Add, Op::Mul, Op::Sub, Op::Div}) {
    const int y = g.tensor({3, 7});
    ir::Node& n = g.node(op, {v, other}, y);
    if (op == Op::Sub) {
      n.activation = fb::Activation::Clip;
      n.activation_min = -0.5f;
      n.activation_max = 0.5f;
    }
    v = y;
  }
  const int row = g.input({1, 7});
  const int y = g.tensor({3, 7});
  g.node(Op::Add, {v, row}, y);
  g.output(y);
  EXPECT_TRUE(matches_portable(g, 0.5f, 2.0f));
}

}  // namespace
}  // namespace tessera::opencl::testing
