// Conformance: MaxPool, AveragePool (ceil mode, padding counted or not), GlobalAveragePool and
// spatial ReduceMean.
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

TEST(OnednnPool, MaxPool) {
  EXPECT_TRUE(matches_portable(pool_case({Op::MaxPool, 1, 64, 56, 56, 3, 3, 2, 2, 1, 1, 1, 1}, 1)));
  EXPECT_TRUE(matches_portable(pool_case({Op::MaxPool, 2, 5, 9, 8, 2, 3, 2, 1, 0, 1, 0, 1}, 2)));
}

TEST(OnednnPool, MaxPoolCeilMode) {
  PoolCfg p{Op::MaxPool, 1, 8, 13, 10, 3, 3, 2, 2};
  p.ceil = true;
  EXPECT_TRUE(matches_portable(pool_case(p, 3)));
}

TEST(OnednnPool, AveragePool) {
  PoolCfg p{Op::AveragePool, 1, 6, 11, 9, 3, 3, 2, 2, 1, 1, 1, 1};
  EXPECT_TRUE(matches_portable(pool_case(p, 4)));
  p.include_pad = true;
  EXPECT_TRUE(matches_portable(pool_case(p, 5)));
  PoolCfg q{Op::AveragePool, 2, 3, 10, 10, 3, 3, 2, 2};
  q.ceil = true;
  EXPECT_TRUE(matches_portable(pool_case(q, 6)));
}

TEST(OnednnPool, GlobalAverageAndReduceMean) {
  GraphCase g = GraphCase::single(Op::GlobalAveragePool, {{2, 24, 7, 5}}, {2, 24, 1, 1});
  EXPECT_TRUE(matches_portable(g));
  for (int keep = 0; keep < 2; ++keep) {
    GraphCase r = GraphCase::single(Op::ReduceMean, {{2, 12, 6, 7}},
                                    keep ? std::vector<int64_t>{2, 12, 1, 1}
                                         : std::vector<int64_t>{2, 12});
    r.graph.nodes[0].attrs.push_back(ir::Attr::make_ints("axes", {2, 3}));
    r.graph.nodes[0].attrs.push_back(ir::Attr::make_int("keepdims", keep));
    EXPECT_TRUE(matches_portable(r)) << keep;
  }
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
