// Conformance: ConvTranspose against the portable kernels. The Conv cases every backend shares
// are in tests/backends/common/conformance_test.cpp, instantiated here.
#include <gtest/gtest.h>

#include "harness.h"
#include "tests/backends/common/conformance.h"

namespace tessera::xnnpack::testing {
namespace {

using Op = fb::OpType;

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

namespace tessera::backend_testing {
INSTANTIATE_TEST_SUITE_P(Conformance, Conv, ::testing::Values(xnnpack::testing::kBackendName),
                         BackendParamName());
}  // namespace tessera::backend_testing
