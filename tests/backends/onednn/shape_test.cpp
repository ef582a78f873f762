// oneDNN's own shape cases: Concat and Flatten of layouts oneDNN chose (blocked convolution
// outputs flattened into a Gemm, concatenated channels). The shape ops every backend shares are
// in tests/backends/common/shape_test.cpp.
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

}  // namespace
}  // namespace tessera::onednn::testing
