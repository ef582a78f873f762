#include "tests/backends/common/conv_cases.h"

namespace tessera::backend_testing {

std::vector<int64_t> conv_out(const ConvCfg& c) {
  const int64_t oh = (c.h + c.pt + c.pb - ((c.kh - 1) * c.dh + 1)) / c.sh + 1;
  const int64_t ow = (c.w + c.pl + c.pr - ((c.kw - 1) * c.dw + 1)) / c.sw + 1;
  return {c.n, c.cout, oh, ow};
}

int add_conv(GraphCase& g, int x, const ConvCfg& c) {
  int wt = g.constant({c.cout, c.cin / c.group, c.kh, c.kw});
  std::vector<int> ins = {x, wt};
  if (c.bias) ins.push_back(g.constant({c.cout}));
  const std::vector<int64_t> out = conv_out(c);
  int y = g.tensor(std::vector<ir::Dim>(out.begin(), out.end()));
  ir::Node& node = g.node(fb::OpType::Conv, ins, y);
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
  return y;
}

GraphCase conv_case(const ConvCfg& c, uint32_t seed) {
  GraphCase g;
  g.seed = seed;
  int x = g.input({c.n, c.cin, c.h, c.w});
  g.output(add_conv(g, x, c));
  return g;
}

}  // namespace tessera::backend_testing
