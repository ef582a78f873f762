// oneDNN's own pooling case: pooling that reads a convolution's blocked layout. The pooling and
// reduction cases every backend shares are in tests/backends/common/pool_test.cpp.
#include <gtest/gtest.h>

#include "harness.h"

namespace tessera::onednn::testing {
namespace {

using Op = fb::OpType;

struct PoolCfg {
  Op op;
  int64_t n, c, h, w, kh, kw;
  int64_t sh = 1, sw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  bool ceil = false;
  bool include_pad = false;
};

int64_t pooled(int64_t in, int64_t k, int64_t s, int64_t p0, int64_t p1, bool ceil) {
  const int64_t span = in + p0 + p1 - k;
  int64_t out = (ceil ? (span + s - 1) / s : span / s) + 1;
  if (ceil && (out - 1) * s >= in + p0) --out;  // the last window must start inside
  return out;
}

GraphCase pool_case(const PoolCfg& p, uint32_t seed) {
  GraphCase g;
  g.seed = seed;
  int x = g.input({p.n, p.c, p.h, p.w});
  int y = g.tensor({p.n, p.c, pooled(p.h, p.kh, p.sh, p.pt, p.pb, p.ceil),
                    pooled(p.w, p.kw, p.sw, p.pl, p.pr, p.ceil)});
  ir::Node& node = g.node(p.op, {x}, y);
  node.attrs.push_back(ir::Attr::make_ints("kernel_shape", {p.kh, p.kw}));
  node.attrs.push_back(ir::Attr::make_ints("strides", {p.sh, p.sw}));
  node.attrs.push_back(ir::Attr::make_ints("pads", {p.pt, p.pl, p.pb, p.pr}));
  node.attrs.push_back(ir::Attr::make_int("ceil_mode", p.ceil ? 1 : 0));
  if (p.op == Op::AveragePool) {
    node.attrs.push_back(ir::Attr::make_int("count_include_pad", p.include_pad ? 1 : 0));
  }
  g.output(y);
  return g;
}

TEST(OnednnPool, AfterConvLayout) {
  // Pooling reads the convolution's blocked layout directly.
  GraphCase g;
  int x = g.input({1, 16, 12, 12});
  int w = g.constant({32, 16, 3, 3});
  int h = g.tensor({1, 32, 10, 10});
  ir::Node& conv = g.node(Op::Conv, {x, w}, h);
  conv.attrs.push_back(ir::Attr::make_ints("kernel_shape", {3, 3}));
  int y = g.tensor({1, 32, 5, 5});
  ir::Node& pool = g.node(Op::MaxPool, {h}, y);
  pool.attrs.push_back(ir::Attr::make_ints("kernel_shape", {2, 2}));
  pool.attrs.push_back(ir::Attr::make_ints("strides", {2, 2}));
  g.output(y);
  EXPECT_TRUE(matches_portable(g));
}

}  // namespace
}  // namespace tessera::onednn::testing
