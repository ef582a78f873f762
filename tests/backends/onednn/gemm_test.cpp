// Conformance: Gemm and MatMul (constant weights reordered at init; two activations).
#include <gtest/gtest.h>

#include "harness.h"

namespace tessera::onednn::testing {
namespace {

using Op = fb::OpType;

GraphCase gemm_case(int64_t m, int64_t k, int64_t n, bool trans_b, int bias_rank, float beta,
                    fb::Activation act, uint32_t seed) {
  GraphCase g;
  g.seed = seed;
  int a = g.input({m, k});
  int b = trans_b ? g.constant({n, k}) : g.constant({k, n});
  std::vector<int> ins = {a, b};
  if (bias_rank == 1) ins.push_back(g.constant({n}));
  if (bias_rank == 2) ins.push_back(g.constant({1, n}));
  int y = g.tensor({m, n});
  ir::Node& node = g.node(Op::Gemm, ins, y);
  node.attrs.push_back(ir::Attr::make_int("transB", trans_b ? 1 : 0));
  node.attrs.push_back(ir::Attr::make_float("beta", beta));
  node.activation = act;
  g.output(y);
  return g;
}

TEST(OnednnGemm, Variants) {
  EXPECT_TRUE(matches_portable(gemm_case(1, 512, 1000, true, 1, 1.0f, fb::Activation::None, 1)));
  EXPECT_TRUE(matches_portable(gemm_case(4, 37, 19, false, 2, 0.5f, fb::Activation::Relu, 2)));
  EXPECT_TRUE(matches_portable(gemm_case(3, 8, 5, true, 0, 1.0f, fb::Activation::None, 3)));
}

TEST(OnednnGemm, RandomShapes) {
  std::mt19937 rng(77);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int i = 0; i < 12; ++i) {
    SCOPED_TRACE(i);
    EXPECT_TRUE(matches_portable(gemm_case(pick(1, 9), pick(1, 200), pick(1, 130), pick(0, 1),
                                           pick(0, 2), 1.0f, fb::Activation::None,
                                           40 + static_cast<uint32_t>(i))));
  }
}

TEST(OnednnMatMul, ConstantWeightsRank3Input) {
  GraphCase g;
  int a = g.input({2, 5, 24});
  int b = g.constant({24, 16});
  int y = g.tensor({2, 5, 16});
  g.node(Op::MatMul, {a, b}, y);
  g.output(y);
  EXPECT_TRUE(matches_portable(g));
}

TEST(OnednnMatMul, TwoActivationsWithBatchBroadcast) {
  GraphCase g;
  int a = g.input({2, 3, 4, 8});
  int b = g.input({1, 3, 8, 5});
  int y = g.tensor({2, 3, 4, 5});
  g.node(Op::MatMul, {a, b}, y).activation = fb::Activation::Relu;
  g.output(y);
  EXPECT_TRUE(matches_portable(g));
}

}  // namespace
}  // namespace tessera::onednn::testing
