// Conformance: Conv (regular, grouped, depthwise) and ConvTranspose against the portable kernels.
#include <gtest/gtest.h>

#include "harness.h"

namespace tessera::xnnpack::testing {
namespace {

using Op = fb::OpType;

struct ConvCfg {
  int64_t n, cin, h, w, cout, kh, kw;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  int64_t group = 1;
  bool bias = true;
  fb::Activation act = fb::Activation::None;
  float act_min = 0.0f, act_max = 6.0f;
};

GraphCase conv_case(const ConvCfg& c, uint32_t seed) {
  GraphCase g;
  g.seed = seed;
  const int64_t oh = (c.h + c.pt + c.pb - ((c.kh - 1) * c.dh + 1)) / c.sh + 1;
  const int64_t ow = (c.w + c.pl + c.pr - ((c.kw - 1) * c.dw + 1)) / c.sw + 1;
  int x = g.input({c.n, c.cin, c.h, c.w});
  int wt = g.constant({c.cout, c.cin / c.group, c.kh, c.kw});
  std::vector<int> ins = {x, wt};
  if (c.bias) ins.push_back(g.constant({c.cout}));
  int y = g.tensor({c.n, c.cout, oh, ow});
  ir::Node& node = g.node(Op::Conv, ins, y);
  node.attrs.push_back(ir::Attr::make_ints("kernel_shape", {c.kh, c.kw}));
  node.attrs.push_back(ir::Attr::make_ints("strides", {c.sh, c.sw}));
  node.attrs.push_back(ir::Attr::make_ints("dilations", {c.dh, c.dw}));
  node.attrs.push_back(ir::Attr::make_ints("pads", {c.pt, c.pl, c.pb, c.pr}));
  node.attrs.push_back(ir::Attr::make_int("group", c.group));
  node.activation = c.act;
  if (c.act == fb::Activation::Clip) {
    node.activation_min = c.act_min;
    node.activation_max = c.act_max;
  }
  g.output(y);
  return g;
}

TEST(XnnpackConv, Basic3x3) {
  EXPECT_TRUE(matches_portable(conv_case({1, 3, 8, 8, 4, 3, 3}, 1)));
}

TEST(XnnpackConv, OddSizesStridesPads) {
  ConvCfg c{2, 5, 13, 11, 7, 3, 5};
  c.sh = 2;
  c.sw = 3;
  c.pt = 1;
  c.pl = 2;
  c.pb = 0;
  c.pr = 1;
  EXPECT_TRUE(matches_portable(conv_case(c, 2)));
}

TEST(XnnpackConv, Dilation) {
  ConvCfg c{1, 4, 17, 15, 6, 3, 3};
  c.dh = 2;
  c.dw = 3;
  c.pt = c.pb = 2;
  c.pl = c.pr = 3;
  EXPECT_TRUE(matches_portable(conv_case(c, 3)));
}

TEST(XnnpackConv, PointwiseNoBias) {
  ConvCfg c{1, 16, 7, 9, 24, 1, 1};
  c.bias = false;
  EXPECT_TRUE(matches_portable(conv_case(c, 4)));
}

TEST(XnnpackConv, Grouped) {
  ConvCfg c{1, 6, 9, 9, 9, 3, 3};
  c.group = 3;
  c.pt = c.pl = c.pb = c.pr = 1;
  EXPECT_TRUE(matches_portable(conv_case(c, 5)));
  ConvCfg d{2, 8, 6, 7, 4, 2, 3};
  d.group = 2;
  d.sh = 2;
  EXPECT_TRUE(matches_portable(conv_case(d, 6)));
}

TEST(XnnpackConv, Depthwise) {
  ConvCfg c{1, 8, 12, 12, 8, 3, 3};
  c.group = 8;
  c.pt = c.pl = c.pb = c.pr = 1;
  EXPECT_TRUE(matches_portable(conv_case(c, 7)));
  // Stride 2, 5x5, odd size.
  ConvCfg d{1, 5, 15, 13, 5, 5, 5};
  d.group = 5;
  d.sh = d.sw = 2;
  d.pt = d.pl = d.pb = d.pr = 2;
  EXPECT_TRUE(matches_portable(conv_case(d, 8)));
}

TEST(XnnpackConv, DepthwiseMultiplier) {
  ConvCfg c{1, 3, 10, 11, 6, 3, 3};
  c.group = 3;
  c.pt = c.pl = 1;
  EXPECT_TRUE(matches_portable(conv_case(c, 9)));
}

TEST(XnnpackConv, DepthwiseDilatedNoBias) {
  ConvCfg c{1, 4, 11, 11, 4, 3, 3};
  c.group = 4;
  c.dh = c.dw = 2;
  c.bias = false;
  EXPECT_TRUE(matches_portable(conv_case(c, 10)));
}

TEST(XnnpackConv, FusedRelu) {
  ConvCfg c{1, 3, 9, 9, 5, 3, 3};
  c.act = fb::Activation::Relu;
  EXPECT_TRUE(matches_portable(conv_case(c, 11)));
}

TEST(XnnpackConv, FusedClip) {
  ConvCfg c{1, 4, 8, 8, 4, 3, 3};
  c.group = 4;
  c.act = fb::Activation::Clip;
  c.act_min = -0.25f;
  c.act_max = 0.3f;
  EXPECT_TRUE(matches_portable(conv_case(c, 12)));
}

TEST(XnnpackConv, RandomShapes) {
  std::mt19937 rng(1234);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int iter = 0; iter < 24; ++iter) {
    ConvCfg c{pick(1, 2), 0, pick(5, 14), pick(5, 14), 0, pick(1, 4), pick(1, 4)};
    const int kind = pick(0, 2);  // regular, grouped, depthwise
    c.group = kind == 0 ? 1 : (kind == 1 ? pick(2, 3) : pick(2, 6));
    c.cin = kind == 2 ? c.group : c.group * pick(1, 4);
    c.cout = kind == 2 ? c.group * pick(1, 2) : c.group * pick(1, 4);
    c.sh = pick(1, 3);
    c.sw = pick(1, 3);
    c.dh = pick(1, 2);
    c.dw = pick(1, 2);
    c.pt = pick(0, c.kh - 1);
    c.pb = pick(0, c.kh - 1);
    c.pl = pick(0, c.kw - 1);
    c.pr = pick(0, c.kw - 1);
    c.bias = pick(0, 1) == 1;
    c.act = pick(0, 1) ? fb::Activation::Relu : fb::Activation::None;
    if ((c.kh - 1) * c.dh + 1 > c.h + c.pt + c.pb || (c.kw - 1) * c.dw + 1 > c.w + c.pl + c.pr) {
      continue;
    }
    SCOPED_TRACE("iteration " + std::to_string(iter));
    EXPECT_TRUE(matches_portable(conv_case(c, 100 + static_cast<uint32_t>(iter))));
  }
}

// ---- ConvTranspose ------------------------------------------------------------------------------

struct DeconvCfg {
  int64_t n, cin, h, w, cout_g, kh, kw;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  int64_t ah = 0, aw = 0;
  int64_t group = 1;
  bool bias = true;
};

GraphCase deconv_case(const DeconvCfg& c, uint32_t seed) {
  GraphCase g;
  g.seed = seed;
  const int64_t oh = (c.h - 1) * c.sh + (c.kh - 1) * c.dh + 1 + c.ah - c.pt - c.pb;
  const int64_t ow = (c.w - 1) * c.sw + (c.kw - 1) * c.dw + 1 + c.aw - c.pl - c.pr;
  int x = g.input({c.n, c.cin, c.h, c.w});
  int wt = g.constant({c.cin, c.cout_g, c.kh, c.kw});
  std::vector<int> ins = {x, wt};
  if (c.bias) ins.push_back(g.constant({c.cout_g * c.group}));
  int y = g.tensor({c.n, c.cout_g * c.group, oh, ow});
  ir::Node& node = g.node(Op::ConvTranspose, ins, y);
  node.attrs.push_back(ir::Attr::make_ints("kernel_shape", {c.kh, c.kw}));
  node.attrs.push_back(ir::Attr::make_ints("strides", {c.sh, c.sw}));
  node.attrs.push_back(ir::Attr::make_ints("dilations", {c.dh, c.dw}));
  node.attrs.push_back(ir::Attr::make_ints("pads", {c.pt, c.pl, c.pb, c.pr}));
  node.attrs.push_back(ir::Attr::make_ints("output_padding", {c.ah, c.aw}));
  node.attrs.push_back(ir::Attr::make_int("group", c.group));
  g.output(y);
  return g;
}

TEST(XnnpackConvTranspose, Stride2) {
  DeconvCfg c{1, 4, 5, 6, 3, 3, 3};
  c.sh = c.sw = 2;
  c.pt = c.pl = c.pb = c.pr = 1;
  c.ah = c.aw = 1;
  EXPECT_TRUE(matches_portable(deconv_case(c, 20)));
}

TEST(XnnpackConvTranspose, GroupedDilatedOdd) {
  DeconvCfg c{2, 6, 7, 5, 2, 2, 3};
  c.group = 3;
  c.sh = 3;
  c.sw = 2;
  c.dh = 2;
  c.pt = 1;
  c.pr = 2;
  c.ah = 2;
  c.bias = false;
  EXPECT_TRUE(matches_portable(deconv_case(c, 21)));
}

}  // namespace
}  // namespace tessera::xnnpack::testing
