// oneDNN's own normalisation cases: LayerNormalization inside a transformer-like block (one
// delegate) and over repeated runs, BatchNormalization after a Conv, and the nodes check_node
// rejects, with their reasons. The cases every backend shares are in
// tests/backends/common/norm_test.cpp.
#include <gtest/gtest.h>

#include <random>

#include "harness.h"
#include "tessera/backends/onednn/supports.h"

namespace tessera::onednn::testing {
namespace {

using Op = fb::OpType;

std::vector<ir::Dim> as_dims(const std::vector<int64_t>& d) {
  return std::vector<ir::Dim>(d.begin(), d.end());
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

/// The reason check_node gives for node `node` of `g` ("" when supported).
std::string rejection(const GraphCase& g, size_t node = 0) {
  auto bytes = ir::encode_graph(g.graph);
  const fb::Graph* fg = flatbuffers::GetRoot<fb::Graph>(bytes.data());
  std::string why;
  if (onednn_supports(*fg, *fg->nodes()->Get(static_cast<uint32_t>(node)), &why)) return "";
  return why.empty() ? "(no reason)" : why;
}

TEST(OnednnLayerNorm, TransformerBlockIsOneDelegate) {
  // x + MatMul(LayerNorm(x)) -> LayerNorm: the pattern the compiler fuses in the fixture model.
  GraphCase g;
  int x = g.input({2, 7, 16});
  int ln1 = g.tensor({2, 7, 16});
  g.node(Op::LayerNormalization, {x, g.constant({16}), g.constant({16})}, ln1);
  int h = g.tensor({2, 7, 16});
  g.node(Op::MatMul, {ln1, g.constant({16, 16})}, h);
  int s = g.tensor({2, 7, 16});
  g.node(Op::Add, {x, h}, s);
  int y = g.tensor({2, 7, 16});
  g.node(Op::LayerNormalization, {s, g.constant({16}), g.constant({16})}, y);
  g.output(y);
  EXPECT_TRUE(matches_portable(g, -2.0f, 2.0f));
  for (size_t i = 0; i < g.graph.nodes.size(); ++i) EXPECT_EQ(rejection(g, i), "") << i;
}

TEST(OnednnLayerNorm, RepeatedRuns) {
  GraphCase g = layer_norm_case({3, 8, 12}, -1, {12}, {12}, 1e-5f, 14);
  std::vector<Floats> inputs = random_inputs(g, 9);
  auto want = run_portable(g, inputs);
  ASSERT_TRUE(want.ok());
  RunOptions o;
  o.repeat = 3;
  auto got = run_onednn(g, inputs, o);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_TRUE(close(*got, *want));
}

TEST(OnednnLayerNorm, Rejected) {
  // Scale from an activation.
  {
    GraphCase g;
    int x = g.input({2, 6});
    int scale = g.input({6});
    int y = g.tensor({2, 6});
    g.node(Op::LayerNormalization, {x, scale}, y);
    g.output(y);
    EXPECT_NE(rejection(g).find("Scale and B must be constants"), std::string::npos)
        << rejection(g);
    auto got = run_onednn(g, random_inputs(g, 1));
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), Error::NotSupported) << got.status().message();
  }
  // The optional Mean output.
  {
    GraphCase g = layer_norm_case({2, 6}, -1, {6}, {6}, 1e-5f, 15);
    int mean = g.tensor({2, 1});
    g.graph.nodes[0].outputs.push_back(mean);
    EXPECT_NE(rejection(g).find("Mean and InvStdDev outputs"), std::string::npos) << rejection(g);
  }
  // Scale that does not broadcast to X.shape[axis:].
  EXPECT_NE(rejection(layer_norm_case({2, 6}, -1, {3}, {}, 1e-5f, 16)).find("does not broadcast"),
            std::string::npos);
  EXPECT_NE(rejection(layer_norm_case({2, 3, 4}, 2, {3, 4}, {}, 1e-5f, 17)).find("broadcast"),
            std::string::npos);
  // Bad axis and epsilon.
  EXPECT_NE(rejection(layer_norm_case({2, 6}, 2, {6}, {}, 1e-5f, 18)).find("axis out of range"),
            std::string::npos);
  EXPECT_NE(rejection(layer_norm_case({2, 6}, -1, {6}, {}, -1.0f, 19)).find("epsilon"),
            std::string::npos);
  GraphCase wrong_type = layer_norm_case({2, 6}, -1, {6}, {}, 1e-5f, 20);
  wrong_type.graph.nodes[0].attrs[0] = ir::Attr::make_float("axis", 1.0f);
  EXPECT_NE(rejection(wrong_type).find("attribute 'axis' has type Float, expected Int"),
            std::string::npos);
}

// ---- BatchNormalization ------------------------------------------------------------------------

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

TEST(OnednnBatchNorm, AfterAConvWithFusedRelu) {
  // DenseNet's unfoldable BatchNormalization: it reads a concatenation, not a convolution.
  GraphCase g;
  int x = g.input({1, 3, 8, 8});
  int y = g.tensor({1, 24, 8, 8});
  ir::Node& conv = g.node(Op::Conv, {x, g.constant({24, 3, 3, 3}), g.constant({24})}, y);
  conv.attrs.push_back(ir::Attr::make_ints("kernel_shape", {3, 3}));
  conv.attrs.push_back(ir::Attr::make_ints("pads", {1, 1, 1, 1}));
  int cat = g.tensor({1, 27, 8, 8});
  g.node(Op::Concat, {x, y}, cat).attrs.push_back(ir::Attr::make_int("axis", 1));
  Floats var(27, 0.8f);
  int b = g.tensor({1, 27, 8, 8});
  ir::Node& bn =
      g.node(Op::BatchNormalization,
             {cat, g.constant({27}), g.constant({27}), g.constant({27}), g.constant({27}, var)}, b);
  bn.activation = fb::Activation::Relu;
  g.output(b);
  EXPECT_TRUE(matches_portable(g));
}

TEST(OnednnBatchNorm, Rejected) {
  GraphCase training = batch_norm_case({2, 4, 3, 3}, 1e-5f, 5);
  training.graph.nodes[0].attrs.push_back(ir::Attr::make_int("training_mode", 1));
  EXPECT_NE(rejection(training).find("training_mode"), std::string::npos) << rejection(training);
  GraphCase stats;
  int x = stats.input({2, 4, 3});
  int y = stats.tensor({2, 4, 3});
  stats.node(Op::BatchNormalization,
             {x, stats.constant({4}), stats.constant({4}), stats.input({4}), stats.constant({4})},
             y);
  stats.output(y);
  EXPECT_NE(rejection(stats).find("must be constants"), std::string::npos) << rejection(stats);
  EXPECT_NE(rejection(batch_norm_case({2, 4, 3, 3}, -1.0f, 6)).find("epsilon"), std::string::npos);
  EXPECT_NE(rejection(batch_norm_case({1, 2, 2, 2, 2, 2}, 1e-5f, 7)).find("rank 2 to 5"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::onednn::testing
