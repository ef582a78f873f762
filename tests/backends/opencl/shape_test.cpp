// The OpenCL backend's reshape family as buffer aliases: a chain of them runs as one kernel. The
// shape ops every backend shares are in tests/backends/common/shape_test.cpp.
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

}  // namespace
}  // namespace tessera::opencl::testing
