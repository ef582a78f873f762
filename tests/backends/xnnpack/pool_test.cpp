// Conformance: MaxPool, AveragePool (count_include_pad, ceil_mode), GlobalAveragePool.
#include <gtest/gtest.h>

#include "harness.h"
#include "tessera/backends/xnnpack/supports.h"

namespace tessera::xnnpack::testing {
namespace {

using Op = fb::OpType;

struct PoolCfg {
  int64_t n, c, h, w, kh, kw;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  bool ceil = false;
  bool include_pad = false;
};

int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe, bool ceil) {
  const int64_t extent = (k - 1) * d + 1, span = in + pb + pe - extent;
  int64_t out = (ceil ? (span + s - 1) / s : span / s) + 1;
  if (ceil && (out - 1) * s >= in + pb) --out;
  return out;
}

GraphCase pool_case(Op op, const PoolCfg& p, uint32_t seed) {
  GraphCase c;
  c.seed = seed;
  int x = c.input({p.n, p.c, p.h, p.w});
  int y = c.tensor({p.n, p.c, pool_out(p.h, p.kh, p.sh, p.dh, p.pt, p.pb, p.ceil),
                    pool_out(p.w, p.kw, p.sw, p.dw, p.pl, p.pr, p.ceil)});
  ir::Node& node = c.node(op, {x}, y);
  node.attrs.push_back(ir::Attr::make_ints("kernel_shape", {p.kh, p.kw}));
  node.attrs.push_back(ir::Attr::make_ints("strides", {p.sh, p.sw}));
  if (op == Op::MaxPool) node.attrs.push_back(ir::Attr::make_ints("dilations", {p.dh, p.dw}));
  node.attrs.push_back(ir::Attr::make_ints("pads", {p.pt, p.pl, p.pb, p.pr}));
  node.attrs.push_back(ir::Attr::make_int("ceil_mode", p.ceil ? 1 : 0));
  if (op == Op::AveragePool) {
    node.attrs.push_back(ir::Attr::make_int("count_include_pad", p.include_pad ? 1 : 0));
  }
  c.output(y);
  return c;
}

TEST(XnnpackPool, MaxBasic) {
  EXPECT_TRUE(matches_portable(pool_case(Op::MaxPool, {1, 4, 8, 8, 2, 2, 2, 2}, 1)));
  PoolCfg p{2, 3, 13, 11, 3, 3, 2, 2};
  p.pt = p.pl = p.pb = p.pr = 1;
  EXPECT_TRUE(matches_portable(pool_case(Op::MaxPool, p, 2)));
}

TEST(XnnpackPool, MaxDilatedAsymmetric) {
  PoolCfg p{1, 5, 15, 12, 3, 2, 1, 2};
  p.dh = 2;
  p.pt = 2;
  p.pr = 1;
  EXPECT_TRUE(matches_portable(pool_case(Op::MaxPool, p, 3)));
}

TEST(XnnpackPool, MaxCeilMode) {
  PoolCfg p{1, 3, 10, 9, 3, 3, 2, 2};
  p.ceil = true;
  EXPECT_TRUE(matches_portable(pool_case(Op::MaxPool, p, 4)));
  p.pt = p.pl = 1;
  EXPECT_TRUE(matches_portable(pool_case(Op::MaxPool, p, 5)));
}

TEST(XnnpackPool, AverageExcludePad) {
  EXPECT_TRUE(matches_portable(pool_case(Op::AveragePool, {1, 4, 8, 8, 2, 2, 2, 2}, 6)));
  PoolCfg p{2, 3, 11, 13, 3, 3, 2, 1};
  p.pt = p.pl = p.pb = p.pr = 1;
  EXPECT_TRUE(matches_portable(pool_case(Op::AveragePool, p, 7)));
}

TEST(XnnpackPool, AverageIncludePad) {
  PoolCfg p{1, 3, 9, 10, 3, 3, 2, 2};
  p.pt = p.pl = 1;
  p.pb = 1;
  p.include_pad = true;
  EXPECT_TRUE(matches_portable(pool_case(Op::AveragePool, p, 8)));
}

TEST(XnnpackPool, AverageCeilMode) {
  PoolCfg p{1, 2, 10, 7, 3, 2, 2, 2};
  p.ceil = true;
  EXPECT_TRUE(matches_portable(pool_case(Op::AveragePool, p, 9)));
  p.pt = p.pl = 1;
  p.include_pad = true;
  EXPECT_TRUE(matches_portable(pool_case(Op::AveragePool, p, 10)));
  p.include_pad = false;
  EXPECT_TRUE(matches_portable(pool_case(Op::AveragePool, p, 11)));
}

TEST(XnnpackPool, RandomShapes) {
  std::mt19937 rng(99);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int iter = 0; iter < 20; ++iter) {
    PoolCfg p{pick(1, 2), pick(1, 7), pick(4, 15), pick(4, 15), pick(1, 4), pick(1, 4)};
    if (p.kh * p.kw == 1) p.kw = 2;
    p.sh = pick(1, 3);
    p.sw = pick(1, 3);
    p.pt = pick(0, p.kh - 1);
    p.pb = pick(0, p.kh - 1);
    p.pl = pick(0, p.kw - 1);
    p.pr = pick(0, p.kw - 1);
    p.ceil = pick(0, 1) == 1;
    p.include_pad = pick(0, 1) == 1;
    const Op op = pick(0, 1) ? Op::MaxPool : Op::AveragePool;
    SCOPED_TRACE("iteration " + std::to_string(iter));
    EXPECT_TRUE(matches_portable(pool_case(op, p, 200 + static_cast<uint32_t>(iter))));
  }
}

TEST(XnnpackPool, GlobalAverage) {
  EXPECT_TRUE(
      matches_portable(GraphCase::single(Op::GlobalAveragePool, {{2, 7, 5, 3}}, {2, 7, 1, 1})));
  EXPECT_TRUE(
      matches_portable(GraphCase::single(Op::GlobalAveragePool, {{1, 32, 7, 7}}, {1, 32, 1, 1})));
}

TEST(XnnpackPool, SpatialReduceMean) {
  GraphCase keep = GraphCase::single(Op::ReduceMean, {{2, 6, 5, 7}}, {2, 6, 1, 1});
  keep.graph.nodes[0].attrs = {ir::Attr::make_ints("axes", {2, 3})};
  EXPECT_TRUE(matches_portable(keep));
  GraphCase drop = GraphCase::single(Op::ReduceMean, {{2, 6, 5, 7}}, {2, 6});
  drop.graph.nodes[0].attrs = {ir::Attr::make_ints("axes", {-1, -2}),
                               ir::Attr::make_int("keepdims", 0)};
  EXPECT_TRUE(matches_portable(drop));
  GraphCase other = GraphCase::single(Op::ReduceMean, {{2, 6, 5, 7}}, {2, 1, 5, 7});
  other.graph.nodes[0].attrs = {ir::Attr::make_ints("axes", {1})};
  EXPECT_FALSE(xnnpack_supports(other.graph, other.graph.nodes[0]));
}

}  // namespace
}  // namespace tessera::xnnpack::testing
