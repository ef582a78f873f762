// Conformance: Concat, the reshape family (views), Transpose, and mixing them with layouts
// oneDNN chose (blocked convolution outputs flattened into a Gemm, concatenated channels).
#include <gtest/gtest.h>

#include "harness.h"

namespace tessera::onednn::testing {
namespace {

using Op = fb::OpType;

int conv3x3(GraphCase& g, int x, int64_t cin, int64_t cout, int64_t hw, int64_t n = 1) {
  int w = g.constant({cout, cin, 3, 3});
  int b = g.constant({cout});
  int y = g.tensor({n, cout, hw, hw});
  ir::Node& node = g.node(Op::Conv, {x, w, b}, y);
  node.attrs.push_back(ir::Attr::make_ints("kernel_shape", {3, 3}));
  node.attrs.push_back(ir::Attr::make_ints("pads", {1, 1, 1, 1}));
  node.activation = fb::Activation::Relu;
  return y;
}

TEST(OnednnConcat, PlainAxes) {
  for (int64_t axis : {0, 1, 2, -1}) {
    GraphCase g;
    const size_t ax = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
    std::vector<int64_t> a = {2, 3, 4};
    a[ax] = 4;
    std::vector<int64_t> b = a, out = a;
    b[ax] = 5;
    out[ax] = 9;
    int x = g.input(std::vector<ir::Dim>(a.begin(), a.end()));
    int y = g.input(std::vector<ir::Dim>(b.begin(), b.end()));
    int z = g.tensor(std::vector<ir::Dim>(out.begin(), out.end()));
    g.node(Op::Concat, {x, y}, z).attrs.push_back(ir::Attr::make_int("axis", axis));
    g.output(z);
    EXPECT_TRUE(matches_portable(g)) << axis;
  }
}

TEST(OnednnConcat, ConvOutputsChannels) {
  for (int64_t c2 : {16, 24, 5}) {
    GraphCase g;
    int x = g.input({1, 8, 9, 9});
    int a = conv3x3(g, x, 8, 16, 9);
    int b = conv3x3(g, x, 8, c2, 9);
    int z = g.tensor({1, 16 + c2, 9, 9});
    g.node(Op::Concat, {a, b}, z).attrs.push_back(ir::Attr::make_int("axis", 1));
    int y = conv3x3(g, z, 16 + c2, 8, 9);
    g.output(y);
    EXPECT_TRUE(matches_portable(g)) << c2;
  }
}

TEST(OnednnReshape, FlattenIntoGemm) {
  // Conv (blocked) -> GlobalAveragePool -> Flatten -> Gemm: the classifier head.
  GraphCase g;
  int x = g.input({2, 3, 8, 8});
  int h = conv3x3(g, x, 3, 32, 8, 2);
  int p = g.tensor({2, 32, 1, 1});
  g.node(Op::GlobalAveragePool, {h}, p);
  int f = g.tensor({2, 32});
  g.node(Op::Flatten, {p}, f).attrs.push_back(ir::Attr::make_int("axis", 1));
  int w = g.constant({10, 32});
  int b = g.constant({10});
  int y = g.tensor({2, 10});
  g.node(Op::Gemm, {f, w, b}, y).attrs.push_back(ir::Attr::make_int("transB", 1));
  g.output(y);
  EXPECT_TRUE(matches_portable(g));
}

TEST(OnednnReshape, ViewsOfInputsAndOutputs) {
  GraphCase g;
  int x = g.input({2, 3, 4});
  int r = g.tensor({6, 4});
  g.node(Op::Reshape, {x}, r);
  int u = g.tensor({1, 6, 4});
  g.node(Op::Unsqueeze, {r}, u).attrs.push_back(ir::Attr::make_ints("axes", {0}));
  int s = g.tensor({1, 6, 4});
  g.node(Op::Relu, {u}, s);
  int q = g.tensor({6, 4});
  g.node(Op::Squeeze, {s}, q).attrs.push_back(ir::Attr::make_ints("axes", {0}));
  g.output(q);
  g.output(r);  // a view of the input is also an output
  EXPECT_TRUE(matches_portable(g));
}

TEST(OnednnTranspose, Perms) {
  GraphCase g = GraphCase::single(Op::Transpose, {{2, 3, 4, 5}}, {4, 2, 5, 3});
  g.graph.nodes[0].attrs.push_back(ir::Attr::make_ints("perm", {2, 0, 3, 1}));
  EXPECT_TRUE(matches_portable(g));
  GraphCase r = GraphCase::single(Op::Transpose, {{3, 7}}, {7, 3});
  EXPECT_TRUE(matches_portable(r));
}

}  // namespace
}  // namespace tessera::onednn::testing
