// Conformance: Gemm (transposes, alpha/beta, C broadcast) and MatMul (batched, broadcast, 1-D).
#include <gtest/gtest.h>

#include "harness.h"

namespace tessera::opencl::testing {
namespace {

GraphCase gemm_case(int64_t m, int64_t k, int64_t n, int ta, int tb, std::vector<int64_t> c_dims,
                    float alpha, float beta, fb::Activation act = fb::Activation::None) {
  GraphCase g;
  int a = g.input(ta ? std::vector<ir::Dim>{k, m} : std::vector<ir::Dim>{m, k});
  int b = g.constant(tb ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n});
  std::vector<int> ins = {a, b};
  if (!c_dims.empty() || beta != 1.0f) ins.push_back(g.constant(c_dims));
  int y = g.tensor({m, n});
  ir::Node& node = g.node(fb::OpType::Gemm, ins, y);
  node.attrs.push_back(ir::Attr::make_int("transA", ta));
  node.attrs.push_back(ir::Attr::make_int("transB", tb));
  node.attrs.push_back(ir::Attr::make_float("alpha", alpha));
  node.attrs.push_back(ir::Attr::make_float("beta", beta));
  node.activation = act;
  g.output(y);
  return g;
}

TEST(OpenClGemm, Plain) { EXPECT_TRUE(matches_portable(gemm_case(5, 7, 3, 0, 0, {3}, 1.0f, 1.0f))); }
TEST(OpenClGemm, TransBRelu) {
  EXPECT_TRUE(matches_portable(gemm_case(4, 9, 6, 0, 1, {6}, 1.0f, 1.0f, fb::Activation::Relu)));
}
TEST(OpenClGemm, TransAAlphaBetaFullC) {
  EXPECT_TRUE(matches_portable(gemm_case(3, 5, 4, 1, 0, {3, 4}, 0.5f, 2.0f)));
}
TEST(OpenClGemm, ColumnC) { EXPECT_TRUE(matches_portable(gemm_case(3, 4, 5, 1, 1, {3, 1}, 1.0f, 1.0f))); }

GraphCase matmul_case(std::vector<int64_t> a, std::vector<int64_t> b, std::vector<int64_t> y) {
  return GraphCase::single(fb::OpType::MatMul, {a, b}, y);
}

TEST(OpenClMatMul, TwoD) { EXPECT_TRUE(matches_portable(matmul_case({4, 6}, {6, 5}, {4, 5}))); }
TEST(OpenClMatMul, BatchedBroadcast) {
  EXPECT_TRUE(matches_portable(matmul_case({2, 1, 3, 4}, {3, 4, 5}, {2, 3, 3, 5})));
}
TEST(OpenClMatMul, OneDOperands) {
  EXPECT_TRUE(matches_portable(matmul_case({4}, {2, 4, 3}, {2, 3})));
  EXPECT_TRUE(matches_portable(matmul_case({2, 3, 4}, {4}, {2, 3})));
}

}  // namespace
}  // namespace tessera::opencl::testing
