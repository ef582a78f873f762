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
// im2col case, and a reduction long enough for the other work order.
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
  ConvCfg deep{1, 230, 3, 3, 10, 3, 3};  // K = 2070: row tiles fastest (large B panel)
  deep.pt = deep.pl = deep.pb = deep.pr = 1;
  // One graph (one program build) with the convolutions side by side.
  GraphCase g;
  g.seed = 7;
  for (const ConvCfg& c : {direct, partial, one_tile, strided, deep}) {
    g.output(backend_testing::add_conv(g, g.input({c.n, c.cin, c.h, c.w}), c));
  }
  EXPECT_TRUE(matches_portable(g));
}

}  // namespace
}  // namespace tessera::opencl::testing
