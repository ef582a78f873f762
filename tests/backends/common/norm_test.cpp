// Conformance (conformance.h): Softmax over several axes, LayerNormalization (axes, Scale and B
// shapes, epsilons, fused activations, random shapes) and BatchNormalization (inference, ranks).
#include <random>
#include <string>
#include <vector>

#include "tests/backends/common/conformance.h"

namespace tessera::backend_testing {
namespace {

using Op = fb::OpType;

std::vector<ir::Dim> as_dims(const std::vector<int64_t>& d) {
  return std::vector<ir::Dim>(d.begin(), d.end());
}

GraphCase softmax_case(std::vector<int64_t> dims, int64_t axis) {
  GraphCase g = GraphCase::single(Op::Softmax, {dims}, dims);
  g.graph.nodes[0].attrs.push_back(ir::Attr::make_int("axis", axis));
  return g;
}

/// LayerNormalization over `x` dims; Scale/B constants of `scale`/`bias` dims (bias empty: none).
GraphCase layer_norm_case(const std::vector<int64_t>& x, int64_t axis,
                          const std::vector<int64_t>& scale, const std::vector<int64_t>& bias,
                          float epsilon, uint32_t seed) {
  GraphCase g;
  g.seed = seed;
  int in = g.input(as_dims(x));
  std::vector<int> ins = {in, g.constant(scale)};
  if (!bias.empty()) ins.push_back(g.constant(bias));
  int y = g.tensor(as_dims(x));
  ir::Node& n = g.node(Op::LayerNormalization, ins, y);
  n.attrs.push_back(ir::Attr::make_int("axis", axis));
  n.attrs.push_back(ir::Attr::make_float("epsilon", epsilon));
  g.output(y);
  return g;
}

/// BatchNormalization (inference) of `x` (N, C, ...), variances in [0.2, 1.68].
GraphCase batch_norm_case(const std::vector<int64_t>& x, float epsilon, uint32_t seed) {
  GraphCase g;
  g.seed = seed;
  const int64_t c = x[1];
  int in = g.input(as_dims(x));
  int scale = g.constant({c});
  int bias = g.constant({c});
  int mean = g.constant({c});
  Floats var(static_cast<size_t>(c));
  for (size_t i = 0; i < var.size(); ++i) var[i] = 0.2f + 0.37f * static_cast<float>(i % 5);
  int v = g.constant({c}, var);
  int y = g.tensor(as_dims(x));
  g.node(Op::BatchNormalization, {in, scale, bias, mean, v}, y)
      .attrs.push_back(ir::Attr::make_float("epsilon", epsilon));
  g.output(y);
  return g;
}

}  // namespace

// ---- Softmax ------------------------------------------------------------------------------------

TEST_P(Softmax, Axes) {
  for (int64_t axis : {-1, 1, 0}) {
    SCOPED_TRACE(axis);
    EXPECT_CONFORMS(softmax_case({3, 10, 4}, axis), -4.0f, 4.0f);
    EXPECT_CONFORMS(softmax_case({3, 4, 5}, axis), -5.0f, 5.0f);
  }
}

TEST_P(Softmax, Shapes) {
  EXPECT_CONFORMS(softmax_case({2, 1000}, -1), -8.0f, 8.0f);
  EXPECT_CONFORMS(softmax_case({3, 1000}, -1), -5.0f, 5.0f);
  EXPECT_CONFORMS(GraphCase::single(Op::Softmax, {{2, 3, 4, 7}}, {2, 3, 4, 7}), -5.0f, 5.0f);
  EXPECT_CONFORMS(softmax_case({2, 5, 3, 4}, 1), -5.0f, 5.0f);
}

// ---- LayerNormalization -------------------------------------------------------------------------

TEST_P(LayerNorm, LastAxis) {
  EXPECT_CONFORMS(layer_norm_case({2, 5, 7}, -1, {7}, {7}, 1e-5f, 1), -3.0f, 3.0f);
  EXPECT_CONFORMS(layer_norm_case({4, 64}, 1, {64}, {64}, 1e-5f, 2));
  EXPECT_CONFORMS(layer_norm_case({3, 1, 33}, 2, {33}, {}, 1e-3f, 3));  // no B
  EXPECT_CONFORMS(layer_norm_case({13}, 0, {13}, {13}, 1e-5f, 4));      // rank 1
  EXPECT_CONFORMS(layer_norm_case({2, 5, 16}, -1, {16}, {16}, 1e-5f, 5));
}

TEST_P(LayerNorm, TrailingAxes) {
  EXPECT_CONFORMS(layer_norm_case({3, 4, 5}, 1, {4, 5}, {4, 5}, 1e-5f, 5));
  EXPECT_CONFORMS(layer_norm_case({2, 3, 4, 5}, -3, {3, 4, 5}, {}, 1e-5f, 6));
  EXPECT_CONFORMS(layer_norm_case({3, 6}, 0, {3, 6}, {3, 6}, 1e-5f, 7));
  EXPECT_CONFORMS(layer_norm_case({2, 3, 4, 5}, 2, {4, 5}, {}, 1e-5f, 8));
}

TEST_P(LayerNorm, BroadcastScaleAndBias) {
  EXPECT_CONFORMS(layer_norm_case({3, 4, 5}, 1, {5}, {1}, 1e-5f, 8));
  EXPECT_CONFORMS(layer_norm_case({3, 4, 5}, 1, {4, 1}, {1, 5}, 1e-5f, 9));
  EXPECT_CONFORMS(layer_norm_case({2, 9}, -1, {1}, {9}, 1e-5f, 10));
}

TEST_P(LayerNorm, Epsilons) {
  for (float eps : {0.0f, 1e-12f, 1e-5f, 0.1f, 2.0f}) {
    SCOPED_TRACE(eps);
    EXPECT_CONFORMS(layer_norm_case({5, 17}, -1, {17}, {17}, eps, 11), -2.0f, 2.0f);
  }
}

TEST_P(LayerNorm, RandomShapes) {
  std::mt19937 rng(77);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int iter = 0; iter < 16; ++iter) {
    const int rank = pick(1, 4);
    std::vector<int64_t> x;
    for (int d = 0; d < rank; ++d) x.push_back(pick(1, 11));
    const int axis = pick(0, rank - 1);
    const std::vector<int64_t> norm(x.begin() + axis, x.end());
    const bool with_bias = pick(0, 1) == 1;
    SCOPED_TRACE("iteration " + std::to_string(iter));
    EXPECT_CONFORMS(layer_norm_case(x, pick(0, 1) ? axis : axis - rank, norm,
                                    with_bias ? norm : std::vector<int64_t>{}, 1e-5f,
                                    100 + static_cast<uint32_t>(iter)),
                    -2.0f, 2.0f);
  }
}

TEST_P(LayerNorm, FusedActivation) {
  GraphCase g = layer_norm_case({4, 10}, -1, {10}, {10}, 1e-5f, 12);
  g.graph.nodes[0].activation = fb::Activation::Relu;
  EXPECT_CONFORMS(g);
  GraphCase c = layer_norm_case({4, 10}, -1, {10}, {10}, 1e-5f, 13);
  c.graph.nodes[0].activation = fb::Activation::Clip;
  c.graph.nodes[0].activation_min = -0.5f;
  c.graph.nodes[0].activation_max = 0.5f;
  EXPECT_CONFORMS(c);
}

// ---- BatchNormalization -------------------------------------------------------------------------

TEST_P(BatchNorm, Ranks) {
  EXPECT_CONFORMS(batch_norm_case({2, 5, 7, 3}, 1e-5f, 1), -2.0f, 2.0f);
  EXPECT_CONFORMS(batch_norm_case({3, 17}, 1e-3f, 2), -2.0f, 2.0f);
  EXPECT_CONFORMS(batch_norm_case({1, 4, 9}, 1e-5f, 3), -2.0f, 2.0f);
  EXPECT_CONFORMS(batch_norm_case({1, 3, 2, 5, 4}, 0.0f, 4), -2.0f, 2.0f);
  EXPECT_CONFORMS(batch_norm_case({2, 4, 3, 3}, 1e-5f, 5));
}

TEST_P(BatchNorm, AfterAConv) {
  GraphCase g;
  g.seed = 6;
  int x = g.input({2, 5, 4, 3});
  int t = g.tensor({2, 5, 4, 3});
  g.node(Op::Conv, {x, g.constant({5, 5, 1, 1})}, t)
      .attrs.push_back(ir::Attr::make_ints("kernel_shape", {1, 1}));
  Floats var(5);
  for (size_t k = 0; k < var.size(); ++k) var[k] = 0.5f + 0.1f * static_cast<float>(k);
  int y = g.tensor({2, 5, 4, 3});
  g.node(Op::BatchNormalization,
         {t, g.constant({5}), g.constant({5}), g.constant({5}), g.constant({5}, var)}, y)
      .attrs.push_back(ir::Attr::make_float("epsilon", 1e-3f));
  g.output(y);
  EXPECT_CONFORMS(g);
}

}  // namespace tessera::backend_testing
