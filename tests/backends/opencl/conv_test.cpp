// Conformance: Conv (regular, strided, dilated, pointwise, grouped, depthwise, 1-D, fused
// activations) against the portable kernels.
#include <gtest/gtest.h>

#include "harness.h"

namespace tessera::opencl::testing {
namespace {

struct ConvCfg {
  int64_t n, cin, h, w, cout, kh, kw;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  int64_t group = 1;
  bool bias = true;
  fb::Activation act = fb::Activation::None;
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
  ir::Node& node = g.node(fb::OpType::Conv, ins, y);
  node.attrs.push_back(ir::Attr::make_ints("kernel_shape", {c.kh, c.kw}));
  node.attrs.push_back(ir::Attr::make_ints("strides", {c.sh, c.sw}));
  node.attrs.push_back(ir::Attr::make_ints("dilations", {c.dh, c.dw}));
  node.attrs.push_back(ir::Attr::make_ints("pads", {c.pt, c.pl, c.pb, c.pr}));
  node.attrs.push_back(ir::Attr::make_int("group", c.group));
  node.activation = c.act;
  if (c.act == fb::Activation::Clip) {
    node.activation_min = 0.0f;
    node.activation_max = 0.5f;
  }
  g.output(y);
  return g;
}

TEST(OpenClConv, Basic3x3) { EXPECT_TRUE(matches_portable(conv_case({1, 3, 8, 8, 4, 3, 3}, 1))); }

TEST(OpenClConv, OddSizesStridesPads) {
  ConvCfg c{2, 5, 13, 11, 7, 3, 5};
  c.sh = 2;
  c.sw = 3;
  c.pt = 1;
  c.pl = 2;
  c.pr = 1;
  EXPECT_TRUE(matches_portable(conv_case(c, 2)));
}

TEST(OpenClConv, Dilation) {
  ConvCfg c{1, 4, 11, 10, 6, 3, 3};
  c.dh = 2;
  c.dw = 3;
  c.pt = c.pb = 2;
  c.pl = c.pr = 3;
  EXPECT_TRUE(matches_portable(conv_case(c, 3)));
}

TEST(OpenClConv, PointwiseNoBias) {
  ConvCfg c{1, 16, 5, 7, 12, 1, 1};
  c.bias = false;
  EXPECT_TRUE(matches_portable(conv_case(c, 4)));
}

TEST(OpenClConv, Grouped) {
  ConvCfg c{1, 6, 9, 9, 9, 3, 3};
  c.group = 3;
  c.pt = c.pl = c.pb = c.pr = 1;
  EXPECT_TRUE(matches_portable(conv_case(c, 5)));
}

TEST(OpenClConv, DepthwiseStride2Relu) {
  ConvCfg c{1, 8, 10, 10, 8, 3, 3};
  c.group = 8;
  c.sh = c.sw = 2;
  c.pt = c.pl = c.pb = c.pr = 1;
  c.act = fb::Activation::Relu;
  EXPECT_TRUE(matches_portable(conv_case(c, 6)));
}

TEST(OpenClConv, FusedClip) {
  ConvCfg c{1, 3, 6, 6, 5, 3, 3};
  c.act = fb::Activation::Clip;
  EXPECT_TRUE(matches_portable(conv_case(c, 7)));
}

TEST(OpenClConv, OneDimensional) {
  GraphCase g;
  int x = g.input({2, 3, 12});
  int w = g.constant({4, 3, 3});
  int b = g.constant({4});
  int y = g.tensor({2, 4, 6});
  ir::Node& n = g.node(fb::OpType::Conv, {x, w, b}, y);
  n.attrs.push_back(ir::Attr::make_ints("kernel_shape", {3}));
  n.attrs.push_back(ir::Attr::make_ints("strides", {2}));
  n.attrs.push_back(ir::Attr::make_ints("pads", {1, 0}));
  g.output(y);
  EXPECT_TRUE(matches_portable(g));
}

}  // namespace
}  // namespace tessera::opencl::testing
