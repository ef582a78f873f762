// Conformance: ConvTranspose (1-D to 3-D; groups, strides, pads, output_padding, output_shape,
// dilations, fused activations) against the portable kernels, and the variants it rejects.
#include <gtest/gtest.h>

#include <random>

#include "harness.h"
#include "tessera/backends/onednn/supports.h"

namespace tessera::onednn::testing {
namespace {

using Op = fb::OpType;

struct DeconvCfg {
  int64_t n = 1, cin = 4, cout = 4;
  std::vector<int64_t> in = {5, 5};
  std::vector<int64_t> kernel = {3, 3};
  std::vector<int64_t> stride, dilation, pads, output_padding, output_shape;
  int64_t group = 1;
  bool bias = true;
  fb::Activation act = fb::Activation::None;
};

int64_t at(const std::vector<int64_t>& v, size_t i, int64_t fallback) {
  return v.empty() ? fallback : v[i];
}

std::vector<int64_t> deconv_out(const DeconvCfg& c) {
  std::vector<int64_t> out = {c.n, c.cout};
  const size_t sp = c.in.size();
  for (size_t d = 0; d < sp; ++d) {
    const int64_t full = at(c.stride, d, 1) * (c.in[d] - 1) + at(c.output_padding, d, 0) +
                         (c.kernel[d] - 1) * at(c.dilation, d, 1) + 1;
    out.push_back(c.output_shape.empty() ? full - at(c.pads, d, 0) - at(c.pads, sp + d, 0)
                                         : c.output_shape[d]);
  }
  return out;
}

GraphCase deconv_case(const DeconvCfg& c, uint32_t seed) {
  GraphCase g;
  g.seed = seed;
  std::vector<int64_t> xd = {c.n, c.cin};
  xd.insert(xd.end(), c.in.begin(), c.in.end());
  int x = g.input(std::vector<ir::Dim>(xd.begin(), xd.end()));
  std::vector<int64_t> wd = {c.cin, c.cout / c.group};
  wd.insert(wd.end(), c.kernel.begin(), c.kernel.end());
  std::vector<int> ins = {x, g.constant(wd)};
  if (c.bias) ins.push_back(g.constant({c.cout}));
  const std::vector<int64_t> out = deconv_out(c);
  int y = g.tensor(std::vector<ir::Dim>(out.begin(), out.end()));
  ir::Node& node = g.node(Op::ConvTranspose, ins, y);
  node.attrs.push_back(ir::Attr::make_ints("kernel_shape", c.kernel));
  if (!c.stride.empty()) node.attrs.push_back(ir::Attr::make_ints("strides", c.stride));
  if (!c.dilation.empty()) node.attrs.push_back(ir::Attr::make_ints("dilations", c.dilation));
  if (!c.pads.empty()) node.attrs.push_back(ir::Attr::make_ints("pads", c.pads));
  if (!c.output_padding.empty()) {
    node.attrs.push_back(ir::Attr::make_ints("output_padding", c.output_padding));
  }
  if (!c.output_shape.empty()) {
    node.attrs.push_back(ir::Attr::make_ints("output_shape", c.output_shape));
  }
  node.attrs.push_back(ir::Attr::make_int("group", c.group));
  node.activation = c.act;
  g.output(y);
  return g;
}

std::string rejection(const GraphCase& g) {
  auto bytes = ir::encode_graph(g.graph);
  const fb::Graph* fg = flatbuffers::GetRoot<fb::Graph>(bytes.data());
  std::string why;
  if (onednn_supports(*fg, *fg->nodes()->Get(0), &why)) return "";
  return why.empty() ? "(no reason)" : why;
}

TEST(OnednnConvTranspose, Basic) {
  DeconvCfg c;
  EXPECT_TRUE(matches_portable(deconv_case(c, 1)));
  c.bias = false;
  EXPECT_TRUE(matches_portable(deconv_case(c, 2)));
}

TEST(OnednnConvTranspose, StridesPadsOutputPadding) {
  DeconvCfg c;
  c.cin = 5;
  c.cout = 7;
  c.in = {7, 6};
  c.kernel = {3, 4};
  c.stride = {2, 3};
  c.pads = {1, 0, 1, 2};
  EXPECT_TRUE(matches_portable(deconv_case(c, 3)));
  c.output_padding = {1, 2};
  EXPECT_TRUE(matches_portable(deconv_case(c, 4)));
  c.pads = {0, 0, 0, 0};
  EXPECT_TRUE(matches_portable(deconv_case(c, 5)));
}

TEST(OnednnConvTranspose, OutputShape) {
  DeconvCfg c;
  c.in = {4, 5};
  c.stride = {2, 2};
  c.output_shape = {8, 9};
  EXPECT_TRUE(matches_portable(deconv_case(c, 6)));
  c.output_shape = {7, 10};
  c.output_padding = {1, 1};
  EXPECT_TRUE(matches_portable(deconv_case(c, 7)));
}

TEST(OnednnConvTranspose, Dilation) {
  DeconvCfg c;
  c.cin = 3;
  c.cout = 6;
  c.in = {6, 7};
  c.dilation = {2, 3};
  c.stride = {2, 1};
  c.pads = {1, 2, 0, 1};
  EXPECT_TRUE(matches_portable(deconv_case(c, 8)));
}

TEST(OnednnConvTranspose, Grouped) {
  DeconvCfg c;
  c.cin = 6;
  c.cout = 9;
  c.group = 3;
  c.stride = {2, 2};
  c.pads = {1, 1, 1, 1};
  c.output_padding = {1, 0};
  EXPECT_TRUE(matches_portable(deconv_case(c, 9)));
  DeconvCfg d;  // depthwise
  d.cin = d.cout = d.group = 8;
  d.kernel = {4, 4};
  d.stride = {2, 2};
  d.pads = {1, 1, 1, 1};
  EXPECT_TRUE(matches_portable(deconv_case(d, 10)));
}

TEST(OnednnConvTranspose, OneAndThreeSpatialDims) {
  DeconvCfg c;
  c.in = {9};
  c.kernel = {5};
  c.stride = {3};
  c.pads = {1, 2};
  c.output_padding = {2};
  EXPECT_TRUE(matches_portable(deconv_case(c, 11)));
  DeconvCfg d;
  d.cin = 3;
  d.cout = 2;
  d.in = {3, 4, 5};
  d.kernel = {2, 3, 2};
  d.stride = {2, 1, 2};
  d.pads = {0, 1, 0, 0, 1, 1};
  EXPECT_TRUE(matches_portable(deconv_case(d, 12)));
}

TEST(OnednnConvTranspose, FusedRelu) {
  DeconvCfg c;
  c.act = fb::Activation::Relu;
  c.stride = {2, 2};
  EXPECT_TRUE(matches_portable(deconv_case(c, 13)));
}

TEST(OnednnConvTranspose, RandomShapes) {
  std::mt19937 rng(4321);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int iter = 0; iter < 24; ++iter) {
    DeconvCfg c;
    c.n = pick(1, 2);
    c.group = pick(0, 2) == 0 ? pick(2, 3) : 1;
    c.cin = c.group * pick(1, 6);
    c.cout = c.group * pick(1, 6);
    c.in = {pick(1, 9), pick(1, 9)};
    c.kernel = {pick(1, 4), pick(1, 4)};
    c.stride = {pick(1, 3), pick(1, 3)};
    c.dilation = {pick(1, 2), pick(1, 2)};
    c.output_padding = {pick(0, static_cast<int>(c.stride[0]) - 1),
                        pick(0, static_cast<int>(c.stride[1]) - 1)};
    c.pads = {pick(0, 2), pick(0, 2), pick(0, 2), pick(0, 2)};
    c.bias = pick(0, 1) == 1;
    const std::vector<int64_t> out = deconv_out(c);
    if (out[2] < 1 || out[3] < 1) continue;
    SCOPED_TRACE("iteration " + std::to_string(iter));
    EXPECT_TRUE(matches_portable(deconv_case(c, 200 + static_cast<uint32_t>(iter))));
  }
}

TEST(OnednnConvTranspose, Rejected) {
  {
    DeconvCfg c;
    c.stride = {2, 2};
    c.output_padding = {2, 0};  // ONNX allows it below the dilation; oneDNN's sizes do not
    c.dilation = {3, 1};
    EXPECT_NE(rejection(deconv_case(c, 20)).find("output_padding must be in [0, stride)"),
              std::string::npos)
        << rejection(deconv_case(c, 20));
  }
  {
    GraphCase g = GraphCase::single(Op::ConvTranspose, {{1, 2, 4, 4}, {2, 3, 3, 3}}, {1, 3, 6, 6});
    EXPECT_NE(rejection(g).find("weights must be a constant"), std::string::npos) << rejection(g);
  }
  {
    DeconvCfg c;
    GraphCase g = deconv_case(c, 21);
    g.graph.nodes[0].attrs.push_back(ir::Attr::make_string("auto_pad", "SAME_UPPER"));
    EXPECT_NE(rejection(g).find("auto_pad"), std::string::npos) << rejection(g);
  }
  {
    DeconvCfg c;
    c.kernel = {3, 3};
    GraphCase g = deconv_case(c, 22);
    g.graph.nodes[0].attrs[0] = ir::Attr::make_ints("kernel_shape", {2, 3});
    EXPECT_NE(rejection(g).find("kernel_shape does not match"), std::string::npos) << rejection(g);
  }
  {
    DeconvCfg c;
    GraphCase g = deconv_case(c, 23);
    g.graph.values[static_cast<size_t>(g.graph.outputs[0])].dims[3] = ir::Dim(8);
    EXPECT_NE(rejection(g).find("output size does not match"), std::string::npos) << rejection(g);
  }
  {
    DeconvCfg c;
    c.in = {2, 3, 3, 3};
    c.kernel = {1, 1, 1, 1};
    EXPECT_NE(rejection(deconv_case(c, 24)).find("only 1-D, 2-D and 3-D"), std::string::npos);
  }
}

}  // namespace
}  // namespace tessera::onednn::testing
