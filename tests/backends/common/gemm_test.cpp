// Conformance (conformance.h): Gemm (transposes, alpha/beta, bias shapes, fused Relu, random
// shapes) and MatMul (constant weights, batched with broadcast, 1-D operands, fused Relu).
#include <random>
#include <string>
#include <vector>

#include "tests/backends/common/conformance.h"

namespace tessera::backend_testing {
namespace {

using Op = fb::OpType;

/// Gemm of an input A (m x k, or k x m with transA) and constant B; a constant C of `c_dims`
/// when given.
GraphCase gemm_case(int64_t m, int64_t k, int64_t n, int ta, int tb, std::vector<int64_t> c_dims,
                    float alpha, float beta, fb::Activation act, uint32_t seed) {
  GraphCase g;
  g.seed = seed;
  int a = g.input(ta ? std::vector<ir::Dim>{k, m} : std::vector<ir::Dim>{m, k});
  int b = g.constant(tb ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n});
  std::vector<int> ins = {a, b};
  if (!c_dims.empty()) ins.push_back(g.constant(c_dims));
  int y = g.tensor({m, n});
  ir::Node& node = g.node(Op::Gemm, ins, y);
  node.attrs.push_back(ir::Attr::make_int("transA", ta));
  node.attrs.push_back(ir::Attr::make_int("transB", tb));
  node.attrs.push_back(ir::Attr::make_float("alpha", alpha));
  node.attrs.push_back(ir::Attr::make_float("beta", beta));
  node.activation = act;
  g.output(y);
  return g;
}

/// MatMul of an input of `a_dims` and a constant (a_dims.back() x n).
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

constexpr fb::Activation kNone = fb::Activation::None;

}  // namespace

TEST_P(Gemm, Variants) {
  EXPECT_CONFORMS(gemm_case(1, 512, 1000, 0, 1, {1000}, 1.0f, 1.0f, kNone, 1));
  EXPECT_CONFORMS(gemm_case(4, 37, 19, 0, 0, {1, 19}, 1.0f, 0.5f, kNone, 2));
  EXPECT_CONFORMS(gemm_case(3, 8, 5, 0, 1, {}, 1.0f, 1.0f, kNone, 3));
  EXPECT_CONFORMS(gemm_case(5, 7, 3, 0, 0, {3}, 1.0f, 1.0f, kNone, 4));
  EXPECT_CONFORMS(gemm_case(1, 64, 100, 0, 1, {100}, 1.0f, 1.0f, kNone, 17));
  EXPECT_CONFORMS(gemm_case(4, 8, 5, 0, 0, {}, 2.0f, 1.0f, kNone, 18));
}

TEST_P(Gemm, Weights) {
  EXPECT_CONFORMS(gemm_case(3, 17, 10, 0, 1, {10}, 1.0f, 1.0f, kNone, 11));  // N x K
  EXPECT_CONFORMS(gemm_case(5, 33, 7, 0, 0, {7}, 1.0f, 1.0f, kNone, 12));    // K x N
}

TEST_P(Gemm, TransposeAlphaBetaBias) {
  EXPECT_CONFORMS(gemm_case(3, 5, 4, 1, 0, {3, 4}, 0.5f, 2.0f, kNone, 5));
  EXPECT_CONFORMS(gemm_case(3, 4, 5, 1, 1, {3, 1}, 1.0f, 1.0f, kNone, 6));
  EXPECT_CONFORMS(gemm_case(2, 9, 6, 0, 0, {6}, 0.5f, 2.0f, kNone, 13));
  EXPECT_CONFORMS(gemm_case(2, 9, 6, 0, 0, {1, 6}, 0.5f, 2.0f, kNone, 14));
  EXPECT_CONFORMS(gemm_case(2, 9, 6, 0, 0, {1}, 0.5f, 2.0f, kNone, 15));
  EXPECT_CONFORMS(gemm_case(2, 9, 6, 0, 0, {}, 0.5f, 2.0f, kNone, 16));
}

TEST_P(Gemm, FusedRelu) {
  EXPECT_CONFORMS(gemm_case(4, 9, 6, 0, 1, {6}, 1.0f, 1.0f, fb::Activation::Relu, 7));
  EXPECT_CONFORMS(gemm_case(4, 37, 19, 0, 0, {1, 19}, 1.0f, 0.5f, fb::Activation::Relu, 8));
  EXPECT_CONFORMS(gemm_case(4, 64, 130, 0, 1, {130}, 1.0f, 1.0f, fb::Activation::Relu, 9));
}

TEST_P(Gemm, RandomShapes) {
  std::mt19937 rng(77);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int i = 0; i < 12; ++i) {
    SCOPED_TRACE(i);
    const int64_t m = pick(1, 9), k = pick(1, 200), n = pick(1, 130);
    const int bias = pick(0, 2);
    const std::vector<int64_t> c_dims =
        bias == 0 ? std::vector<int64_t>{}
                  : (bias == 1 ? std::vector<int64_t>{n} : std::vector<int64_t>{1, n});
    EXPECT_CONFORMS(gemm_case(m, k, n, 0, pick(0, 1), c_dims, 1.0f, 1.0f, kNone,
                              40 + static_cast<uint32_t>(i)));
  }
}

TEST_P(MatMul, ConstantWeights) {
  EXPECT_CONFORMS(matmul_case({2, 5, 24}, 16, 1));
  EXPECT_CONFORMS(matmul_case({7, 12}, 5, 10));
  EXPECT_CONFORMS(matmul_case({2, 3, 12}, 9, 11));
  EXPECT_CONFORMS(matmul_case({2, 2, 3, 5}, 4, 12));
}

TEST_P(MatMul, RandomShapes) {
  std::mt19937 rng(77);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int iter = 0; iter < 10; ++iter) {
    std::vector<int64_t> a;
    const int rank = pick(2, 4);
    for (int d = 0; d < rank; ++d) a.push_back(pick(1, 9));
    a.back() = pick(1, 40);
    SCOPED_TRACE("iteration " + std::to_string(iter));
    EXPECT_CONFORMS(matmul_case(a, pick(1, 40), 20 + static_cast<uint32_t>(iter)));
  }
}

TEST_P(MatMul, TwoInputs) {
  EXPECT_CONFORMS(GraphCase::single(Op::MatMul, {{4, 6}, {6, 5}}, {4, 5}));
  EXPECT_CONFORMS(GraphCase::single(Op::MatMul, {{2, 1, 3, 4}, {3, 4, 5}}, {2, 3, 3, 5}));
}

TEST_P(MatMul, OneDOperands) {
  EXPECT_CONFORMS(GraphCase::single(Op::MatMul, {{4}, {2, 4, 3}}, {2, 3}));
  EXPECT_CONFORMS(GraphCase::single(Op::MatMul, {{2, 3, 4}, {4}}, {2, 3}));
}

TEST_P(MatMul, FusedReluWithBatchBroadcast) {
  GraphCase g = GraphCase::single(Op::MatMul, {{2, 3, 4, 8}, {1, 3, 8, 5}}, {2, 3, 4, 5});
  g.graph.nodes[0].activation = fb::Activation::Relu;
  EXPECT_CONFORMS(g);
}

}  // namespace tessera::backend_testing
