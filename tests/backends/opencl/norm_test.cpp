// Conformance: Softmax (several axes), LayerNormalization (with and without bias) and
// BatchNormalization (inference).
#include <gtest/gtest.h>

#include "harness.h"

namespace tessera::opencl::testing {
namespace {

using Op = fb::OpType;

TEST(OpenClSoftmax, Axes) {
  for (int64_t axis : {-1, 1, 0}) {
    SCOPED_TRACE(axis);
    GraphCase g = GraphCase::single(Op::Softmax, {{3, 4, 5}}, {3, 4, 5});
    g.graph.nodes[0].attrs.push_back(ir::Attr::make_int("axis", axis));
    EXPECT_TRUE(matches_portable(g, -5.0f, 5.0f));
  }
}

GraphCase layer_norm(std::vector<int64_t> dims, int64_t axis, bool bias) {
  GraphCase g;
  int x = g.input(std::vector<ir::Dim>(dims.begin(), dims.end()));
  std::vector<int64_t> tail(dims.begin() + (axis < 0 ? dims.size() + axis : axis), dims.end());
  std::vector<int> ins = {x, g.constant(tail)};
  if (bias) ins.push_back(g.constant(tail));
  int y = g.tensor(std::vector<ir::Dim>(dims.begin(), dims.end()));
  ir::Node& n = g.node(Op::LayerNormalization, ins, y);
  n.attrs.push_back(ir::Attr::make_int("axis", axis));
  n.attrs.push_back(ir::Attr::make_float("epsilon", 1e-5f));
  g.output(y);
  return g;
}

TEST(OpenClLayerNorm, LastAxisAndTwoAxes) {
  EXPECT_TRUE(matches_portable(layer_norm({2, 5, 16}, -1, true)));
  EXPECT_TRUE(matches_portable(layer_norm({2, 3, 4, 5}, 2, false)));
}

TEST(OpenClBatchNorm, Inference) {
  GraphCase g;
  int x = g.input({2, 4, 3, 3});
  int scale = g.constant({4});
  int b = g.constant({4});
  int mean = g.constant({4});
  int var = g.constant({4}, {0.5f, 1.0f, 1.5f, 2.0f});
  int y = g.tensor({2, 4, 3, 3});
  g.node(Op::BatchNormalization, {x, scale, b, mean, var}, y);
  g.output(y);
  EXPECT_TRUE(matches_portable(g));
}

}  // namespace
}  // namespace tessera::opencl::testing
