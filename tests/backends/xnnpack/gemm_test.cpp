// Conformance: Gemm and MatMul (fully connected with constant weights) against the portable
// kernels.
#include <gtest/gtest.h>

#include "harness.h"

namespace tessera::xnnpack::testing {
namespace {

using Op = fb::OpType;

struct GemmCfg {
  int64_t m, k, n;
  bool trans_b = false;
  float alpha = 1.0f, beta = 1.0f;
  std::vector<int64_t> c_dims = {-1};  // {-1}: [n]; {} : no C
  fb::Activation act = fb::Activation::None;
};

GraphCase gemm_case(const GemmCfg& g, uint32_t seed) {
  GraphCase c;
  c.seed = seed;
  int a = c.input({g.m, g.k});
  int b = g.trans_b ? c.constant({g.n, g.k}) : c.constant({g.k, g.n});
  std::vector<int> ins = {a, b};
  if (!g.c_dims.empty()) {
    ins.push_back(c.constant(g.c_dims.size() == 1 && g.c_dims[0] == -1 ? std::vector<int64_t>{g.n}
                                                                       : g.c_dims));
  }
  int y = c.tensor({g.m, g.n});
  ir::Node& node = c.node(Op::Gemm, ins, y);
  node.attrs.push_back(ir::Attr::make_int("transB", g.trans_b ? 1 : 0));
  node.attrs.push_back(ir::Attr::make_float("alpha", g.alpha));
  node.attrs.push_back(ir::Attr::make_float("beta", g.beta));
  node.activation = g.act;
  c.output(y);
  return c;
}

TEST(XnnpackGemm, TransposedWeights) {
  GemmCfg g{3, 17, 10};
  g.trans_b = true;
  EXPECT_TRUE(matches_portable(gemm_case(g, 1)));
}

TEST(XnnpackGemm, WeightsKN) {
  EXPECT_TRUE(matches_portable(gemm_case({5, 33, 7}, 2)));
}

TEST(XnnpackGemm, AlphaBetaAndBiasShapes) {
  GemmCfg g{2, 9, 6};
  g.alpha = 0.5f;
  g.beta = 2.0f;
  EXPECT_TRUE(matches_portable(gemm_case(g, 3)));
  g.c_dims = {1, 6};
  EXPECT_TRUE(matches_portable(gemm_case(g, 4)));
  g.c_dims = {1};
  EXPECT_TRUE(matches_portable(gemm_case(g, 5)));
  g.c_dims = {};
  EXPECT_TRUE(matches_portable(gemm_case(g, 6)));
}

TEST(XnnpackGemm, FusedRelu) {
  GemmCfg g{4, 64, 130};
  g.trans_b = true;
  g.act = fb::Activation::Relu;
  EXPECT_TRUE(matches_portable(gemm_case(g, 7)));
}

GraphCase matmul_case(std::vector<int64_t> a_dims, int64_t n, uint32_t seed) {
  GraphCase c;
  c.seed = seed;
  int a = c.input(std::vector<ir::Dim>(a_dims.begin(), a_dims.end()));
  int b = c.constant({a_dims.back(), n});
  std::vector<int64_t> y_dims = a_dims;
  y_dims.back() = n;
  int y = c.tensor(std::vector<ir::Dim>(y_dims.begin(), y_dims.end()));
  c.node(Op::MatMul, {a, b}, y);
  c.output(y);
  return c;
}

TEST(XnnpackMatMul, Ranks) {
  EXPECT_TRUE(matches_portable(matmul_case({7, 12}, 5, 10)));
  EXPECT_TRUE(matches_portable(matmul_case({2, 3, 12}, 9, 11)));
  EXPECT_TRUE(matches_portable(matmul_case({2, 2, 3, 5}, 4, 12)));
}

TEST(XnnpackMatMul, RandomShapes) {
  std::mt19937 rng(77);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int iter = 0; iter < 10; ++iter) {
    std::vector<int64_t> a;
    const int rank = pick(2, 4);
    for (int d = 0; d < rank; ++d) a.push_back(pick(1, 9));
    a.back() = pick(1, 40);
    SCOPED_TRACE("iteration " + std::to_string(iter));
    EXPECT_TRUE(matches_portable(matmul_case(a, pick(1, 40), 20 + static_cast<uint32_t>(iter))));
  }
}

}  // namespace
}  // namespace tessera::xnnpack::testing
