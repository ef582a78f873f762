// Conformance (conformance.h): MaxPool and AveragePool (pads, strides, ceil_mode, random shapes;
// MaxPool's dilations, AveragePool's count_include_pad), GlobalAveragePool, and ReduceMean,
// ReduceSum, ReduceMax over spatial, channel and all axes.
#include <random>
#include <string>
#include <vector>

#include "tests/backends/common/conformance.h"

namespace tessera::backend_testing {
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

}  // namespace

// ---- MaxPool, AveragePool -----------------------------------------------------------------------

TEST_P(Pool, Basic) {
  EXPECT_CONFORMS(pool_case(op(), {1, 4, 8, 8, 2, 2, 2, 2}, 1));
  EXPECT_CONFORMS(pool_case(op(), {1, 3, 9, 9, 3, 3, 2, 2}, 2));
}

TEST_P(Pool, Padded) {
  PoolCfg p{2, 3, 13, 11, 3, 3, 2, 2};
  p.pt = p.pl = p.pb = p.pr = 1;
  EXPECT_CONFORMS(pool_case(op(), p, 3));
  PoolCfg q{2, 3, 11, 13, 3, 3, 2, 1};
  q.pt = q.pl = q.pb = q.pr = 1;
  EXPECT_CONFORMS(pool_case(op(), q, 4));
}

TEST_P(Pool, LargerShapes) {
  PoolCfg p{1, 64, 56, 56, 3, 3, 2, 2};  // ResNet's stem
  p.pt = p.pl = p.pb = p.pr = 1;
  EXPECT_CONFORMS(pool_case(op(), p, 11));
  PoolCfg q{2, 5, 9, 8, 2, 3, 2, 1};
  q.pl = q.pr = 1;
  EXPECT_CONFORMS(pool_case(op(), q, 12));
  PoolCfg r{1, 8, 13, 10, 3, 3, 2, 2};
  r.ceil = true;
  EXPECT_CONFORMS(pool_case(op(), r, 13));
  PoolCfg t{1, 6, 11, 9, 3, 3, 2, 2};
  t.pt = t.pl = t.pb = t.pr = 1;
  EXPECT_CONFORMS(pool_case(op(), t, 14));
  t.include_pad = true;
  EXPECT_CONFORMS(pool_case(op(), t, 15));
}

TEST_P(MaxPool, DilatedAsymmetric) {
  PoolCfg p{1, 5, 15, 12, 3, 2, 1, 2};
  p.dh = 2;
  p.pt = 2;
  p.pr = 1;
  EXPECT_CONFORMS(pool_case(op(), p, 5));
}

TEST_P(Pool, CeilMode) {
  PoolCfg p{1, 3, 10, 9, 3, 3, 2, 2};
  p.ceil = true;
  EXPECT_CONFORMS(pool_case(op(), p, 6));
  p.pt = p.pl = 1;
  EXPECT_CONFORMS(pool_case(op(), p, 7));
  p.include_pad = true;
  EXPECT_CONFORMS(pool_case(op(), p, 8));
}

TEST_P(AveragePool, CountIncludePad) {
  PoolCfg p{1, 3, 9, 10, 3, 3, 2, 2};
  p.pt = p.pl = p.pb = 1;
  p.include_pad = true;
  EXPECT_CONFORMS(pool_case(op(), p, 9));
}

TEST_P(Pool, RandomShapes) {
  std::mt19937 rng(99);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int iter = 0; iter < 16; ++iter) {
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
    SCOPED_TRACE("iteration " + std::to_string(iter));
    EXPECT_CONFORMS(pool_case(op(), p, 200 + static_cast<uint32_t>(iter)));
  }
}

// ---- GlobalAveragePool --------------------------------------------------------------------------

TEST_P(GlobalPool, Shapes) {
  EXPECT_CONFORMS(GraphCase::single(Op::GlobalAveragePool, {{2, 7, 5, 3}}, {2, 7, 1, 1}));
  EXPECT_CONFORMS(GraphCase::single(Op::GlobalAveragePool, {{1, 32, 7, 7}}, {1, 32, 1, 1}));
  EXPECT_CONFORMS(GraphCase::single(Op::GlobalAveragePool, {{2, 24, 7, 5}}, {2, 24, 1, 1}));
}

// ---- ReduceMean, ReduceSum, ReduceMax -----------------------------------------------------------

namespace {

GraphCase reduce_case(Op op, std::vector<int64_t> in, std::vector<int64_t> out,
                      std::vector<int64_t> axes, bool keepdims) {
  GraphCase c = GraphCase::single(op, {in}, out);
  c.graph.nodes[0].attrs = {ir::Attr::make_ints("axes", axes)};
  if (!keepdims) c.graph.nodes[0].attrs.push_back(ir::Attr::make_int("keepdims", 0));
  return c;
}

}  // namespace

TEST_P(Reduce, SpatialAxes) {
  EXPECT_CONFORMS(reduce_case(op(), {2, 6, 5, 7}, {2, 6, 1, 1}, {2, 3}, true));
  EXPECT_CONFORMS(reduce_case(op(), {2, 6, 5, 7}, {2, 6}, {-1, -2}, false));
  EXPECT_CONFORMS(reduce_case(op(), {2, 12, 6, 7}, {2, 12}, {2, 3}, false));
}

TEST_P(Reduce, OtherAxes) {
  EXPECT_CONFORMS(reduce_case(op(), {2, 6, 5, 7}, {2, 1, 5, 7}, {1}, true));
  EXPECT_CONFORMS(reduce_case(op(), {3, 10}, {3}, {1}, false));
  EXPECT_CONFORMS(reduce_case(op(), {2, 3, 4}, {1, 1, 1}, {0, 1, 2}, true));
}

}  // namespace tessera::backend_testing
