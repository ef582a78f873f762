// The OpenCL backend's own Conv case: the tiles of its GEMM lowering. The Conv cases every
// backend shares are in tests/backends/common/conformance_test.cpp.
#include <gtest/gtest.h>

#include "harness.h"
#include "tests/backends/common/conv_cases.h"

namespace tessera::opencl::testing {
namespace {

// Conv with group 1 runs as a GEMM over tiles of 8 output channels by 32 output pixels: channel
// counts that leave a partial row tile, pixel counts that leave a partial column tile, batches,
// fused activations, the 1x1 case that reads X directly (pixels a multiple of 32) next to the
// im2col case, and a long reduction.
TEST(OpenClConv, GemmTileEdges) {
  using backend_testing::ConvCfg;
  ConvCfg direct{2, 5, 8, 8, 12, 1, 1};  // 64 pixels: read in place
  direct.bias = false;
  direct.act = fb::Activation::Relu;
  ConvCfg partial{2, 5, 6, 6, 17, 3, 3};  // 36 pixels: one whole tile and a partial one
  partial.pt = partial.pl = partial.pb = partial.pr = 1;
  partial.act = fb::Activation::Clip;
  partial.act_min = -0.5f;
  partial.act_max = 0.5f;
  ConvCfg one_tile{1, 3, 4, 8, 8, 3, 3};  // exactly 32 pixels through im2col
  one_tile.pt = one_tile.pl = one_tile.pb = one_tile.pr = 1;
  ConvCfg strided{1, 4, 9, 9, 3, 1, 1};  // 1x1 with stride 2: im2col
  strided.sh = strided.sw = 2;
  ConvCfg deep{1, 230, 3, 3, 10, 3, 3};  // K = 2070
  deep.pt = deep.pl = deep.pb = deep.pr = 1;
  // One graph (one program build) with the convolutions side by side.
  GraphCase g;
  g.seed = 7;
  for (const ConvCfg& c : {direct, partial, one_tile, strided, deep}) {
    g.output(backend_testing::add_conv(g, g.input({c.n, c.cin, c.h, c.w}), c));
  }
  EXPECT_TRUE(matches_portable(g));
}

// Depthwise Conv runs a few output rows per work item, each tap adding a (strided) input row
// segment clipped to the row: odd row widths, strides 1 and 2, padding on either side only,
// dilation, a 5x5 kernel wider than the padded row's interior, a 1-D case, a batch and both
// activations.
TEST(OpenClConv, DepthwiseRows) {
  using backend_testing::ConvCfg;
  std::vector<ConvCfg> cases;
  ConvCfg s1{2, 6, 9, 21, 6, 3, 3};
  s1.pt = s1.pl = s1.pb = s1.pr = 1;
  s1.act = fb::Activation::Clip;
  cases.push_back(s1);
  ConvCfg s2{1, 5, 13, 40, 5, 3, 3};  // stride 2
  s2.sh = s2.sw = 2;
  s2.pt = s2.pl = s2.pb = s2.pr = 1;
  s2.act = fb::Activation::Relu;
  cases.push_back(s2);
  ConvCfg k5{1, 4, 7, 7, 4, 5, 5};  // 5x5 on 7x7
  k5.pt = k5.pl = k5.pb = k5.pr = 2;
  k5.bias = false;
  cases.push_back(k5);
  ConvCfg lopsided{1, 3, 10, 33, 3, 3, 3};  // padding on the right and bottom only, dilated
  lopsided.pb = lopsided.pr = 2;
  lopsided.dh = lopsided.dw = 2;
  cases.push_back(lopsided);
  GraphCase g;
  g.seed = 11;
  for (ConvCfg c : cases) {
    c.group = c.cin;
    g.output(backend_testing::add_conv(g, g.input({c.n, c.cin, c.h, c.w}), c));
  }
  // 1-D depthwise: [N, C, W] with a [C, 1, K] kernel.
  const int x1 = g.input({1, 4, 19});
  const int w1 = g.constant({4, 1, 3});
  const int y1 = g.tensor({1, 4, 19});
  ir::Node& conv1d = g.node(fb::OpType::Conv, {x1, w1}, y1);
  conv1d.attrs.push_back(ir::Attr::make_int("group", 4));
  conv1d.attrs.push_back(ir::Attr::make_ints("pads", {1, 1}));
  g.output(y1);
  EXPECT_TRUE(matches_portable(g));
}

// A residual Add after a Conv with group 1 is folded into the Conv's GEMM, with the Add's
// activation: on either operand side, on a partial column tile, on a 1x1 Conv that reads X in
// place with a ragged last tile, and (for the second Conv of a block whose other operand comes
// later) into the later Conv. A Conv output read twice, a Conv with an activation of its own and
// a broadcasting Add stay unfused, and every case matches the portable kernels.
TEST(OpenClConv, ResidualAddFusesIntoTheConv) {
  using backend_testing::ConvCfg;
  GraphCase g;
  g.seed = 5;
  const int x = g.input({1, 6, 6, 7});  // 42 pixels: a whole column tile and a partial one
  ConvCfg c3{1, 6, 6, 7, 6, 3, 3};
  c3.pt = c3.pl = c3.pb = c3.pr = 1;
  ConvCfg c1{1, 6, 6, 7, 6, 1, 1};  // direct 1x1, 42 pixels: ragged last tile
  // (1) Add(conv(x), x) with Relu: fused.
  const int a = backend_testing::add_conv(g, x, c3);
  const int s1 = g.tensor({1, 6, 6, 7});
  g.node(fb::OpType::Add, {a, x}, s1).activation = fb::Activation::Relu;
  // (2) Add(s1, conv1x1(s1)) with Clip, the conv on the right: fused.
  const int b = backend_testing::add_conv(g, s1, c1);
  const int s2 = g.tensor({1, 6, 6, 7});
  ir::Node& add2 = g.node(fb::OpType::Add, {s1, b}, s2);
  add2.activation = fb::Activation::Clip;
  add2.activation_min = -0.25f;
  add2.activation_max = 0.5f;
  // (3) A block with a downsample: Add(conv(s2), down(s2)), the downsample after the conv: fused
  // into the downsample (the first operand is ready by then).
  const int m = backend_testing::add_conv(g, s2, c3);
  const int d = backend_testing::add_conv(g, s2, c1);
  const int s3 = g.tensor({1, 6, 6, 7});
  g.node(fb::OpType::Add, {m, d}, s3);
  // (4) A Conv output read twice: not fused.
  const int e = backend_testing::add_conv(g, s3, c1);
  const int s4 = g.tensor({1, 6, 6, 7});
  g.node(fb::OpType::Add, {e, s3}, s4);
  const int s5 = g.tensor({1, 6, 6, 7});
  g.node(fb::OpType::Mul, {e, s4}, s5);
  // (5) A Conv with its own Relu: not fused.
  ConvCfg relu = c1;
  relu.act = fb::Activation::Relu;
  const int f = backend_testing::add_conv(g, s5, relu);
  const int s6 = g.tensor({1, 6, 6, 7});
  g.node(fb::OpType::Add, {f, s5}, s6);
  // (6) A broadcasting Add: not fused.
  const int h = backend_testing::add_conv(g, s6, c1);
  const int bias = g.constant({1, 6, 1, 1});
  const int s7 = g.tensor({1, 6, 6, 7});
  g.node(fb::OpType::Add, {h, bias}, s7);
  g.output(s7);
  EXPECT_TRUE(matches_portable(g));
  Session session;
  ASSERT_TRUE(session.init(g).is_ok());
  EXPECT_EQ(session.summary().fused_adds, 3u);
  EXPECT_EQ(session.summary().aliases, 0u);
}

// Activations share one arena by lifetime: a chain's intermediate values reuse each other's
// bytes, so the arena is smaller than their sum, and the results are unchanged.
TEST(OpenClArena, ChainReusesBytes) {
  GraphCase g;
  int v = g.input({1, 4, 16, 16});
  for (int i = 0; i < 6; ++i) {
    const int y = g.tensor({1, 4, 16, 16});
    g.node(i % 2 == 0 ? fb::OpType::Relu : fb::OpType::Sigmoid, {v}, y);
    v = y;
  }
  g.output(v);
  EXPECT_TRUE(matches_portable(g));
  Session session;
  ASSERT_TRUE(session.init(g).is_ok());
  const size_t value_bytes = 4 * 16 * 16 * sizeof(float);
  EXPECT_EQ(session.summary().activation_bytes, 7 * value_bytes);
  // The input, the value being written and the one being read: at most three live at once.
  EXPECT_LE(session.summary().arena_bytes, 3 * value_bytes);
  EXPECT_GE(session.summary().arena_bytes, 2 * value_bytes);
}

}  // namespace
}  // namespace tessera::opencl::testing
