// Conformance: Reshape/Flatten/Squeeze/Unsqueeze (buffer aliases), Transpose, Concat, and a
// small chain mixing them.
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

TEST(OpenClShape, ReshapeAsOutput) {
  GraphCase g;
  int x = g.input({2, 6});
  int y = g.tensor({3, 4});
  g.node(Op::Reshape, {x}, y);
  g.output(y);
  EXPECT_TRUE(matches_portable(g));
}

TEST(OpenClShape, Transpose) {
  GraphCase g = GraphCase::single(Op::Transpose, {{2, 3, 4, 5}}, {4, 2, 5, 3});
  g.graph.nodes[0].attrs.push_back(ir::Attr::make_ints("perm", {2, 0, 3, 1}));
  EXPECT_TRUE(matches_portable(g));
  EXPECT_TRUE(matches_portable(GraphCase::single(Op::Transpose, {{3, 5}}, {5, 3})));
}

TEST(OpenClShape, Concat) {
  for (int64_t axis : {1, -1}) {
    GraphCase g;
    int a = g.input({2, 3, 4});
    int b = g.constant(axis == 1 ? std::vector<int64_t>{2, 2, 4} : std::vector<int64_t>{2, 3, 1});
    int c = g.input(axis == 1 ? std::vector<ir::Dim>{2, 5, 4} : std::vector<ir::Dim>{2, 3, 2});
    int y = g.tensor(axis == 1 ? std::vector<ir::Dim>{2, 10, 4} : std::vector<ir::Dim>{2, 3, 7});
    g.node(Op::Concat, {a, b, c}, y).attrs.push_back(ir::Attr::make_int("axis", axis));
    g.output(y);
    EXPECT_TRUE(matches_portable(g));
  }
}

}  // namespace
}  // namespace tessera::opencl::testing
