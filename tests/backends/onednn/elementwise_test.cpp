// oneDNN's own elementwise tests: the unary ops XNNPACK lacks (Tanh, Gelu, Exp), softmax, an
// in-place chain, PRelu with a slope from a graph input, after a Conv, and rejected. The binary,
// unary and PRelu cases every backend shares are in tests/backends/common/conformance_test.cpp,
// instantiated here.
#include <gtest/gtest.h>

#include "harness.h"
#include "tessera/backends/onednn/supports.h"
#include "tests/backends/common/conformance.h"
#include "tests/backends/common/elementwise_cases.h"

namespace tessera::onednn::testing {
namespace {

using Op = fb::OpType;

using backend_testing::prelu_case;
using backend_testing::unary_case;

TEST(OnednnUnary, Activations) {
  for (std::vector<int64_t> dims : {std::vector<int64_t>{2, 3, 5, 7}, {17}, {3, 40}}) {
    EXPECT_TRUE(matches_portable(unary_case(Op::Tanh, dims), -3.0f, 3.0f));
    EXPECT_TRUE(matches_portable(unary_case(Op::Mish, dims), -6.0f, 6.0f));
    EXPECT_TRUE(matches_portable(unary_case(Op::Gelu, dims), -4.0f, 4.0f));
    EXPECT_TRUE(matches_portable(
        unary_case(Op::Gelu, dims, {ir::Attr::make_string("approximate", "tanh")}), -4.0f, 4.0f));
  }
}

TEST(OnednnUnary, Math) {
  for (std::vector<int64_t> dims : {std::vector<int64_t>{1, 5, 7, 3}, {31}}) {
    EXPECT_TRUE(matches_portable(unary_case(Op::Exp, dims), -3.0f, 3.0f));
  }
}

TEST(OnednnSoftmax, Axes) {
  for (int64_t axis : {-1, 1, 0}) {
    GraphCase c = unary_case(Op::Softmax, {3, 10, 4}, {ir::Attr::make_int("axis", axis)});
    EXPECT_TRUE(matches_portable(c, -4.0f, 4.0f)) << axis;
  }
  EXPECT_TRUE(matches_portable(unary_case(Op::Softmax, {2, 1000}), -8.0f, 8.0f));
}

TEST(OnednnUnary, ChainInPlace) {
  // Relu after a binary result that nothing else reads runs in place.
  GraphCase c;
  int a = c.input({2, 8, 4, 4});
  int b = c.input({2, 8, 4, 4});
  int s = c.tensor({2, 8, 4, 4});
  c.node(Op::Sub, {a, b}, s);
  int r = c.tensor({2, 8, 4, 4});
  c.node(Op::Sigmoid, {s}, r);
  int t = c.tensor({2, 8, 4, 4});
  c.node(Op::Mul, {r, a}, t);
  c.output(t);
  EXPECT_TRUE(matches_portable(c));
}

TEST(OnednnPRelu, SlopeFromAGraphInput) {
  EXPECT_TRUE(matches_portable(prelu_case({2, 3, 4}, {2, 3, 4}, false, 4)));  // full
  EXPECT_TRUE(matches_portable(prelu_case({2, 6, 5, 5}, {1, 6, 1, 1}, false, 5)));
}

TEST(OnednnPRelu, AfterAConvWithFusedClip) {
  GraphCase g;
  int x = g.input({1, 3, 7, 7});
  int y = g.tensor({1, 20, 7, 7});
  ir::Node& conv = g.node(Op::Conv, {x, g.constant({20, 3, 3, 3}), g.constant({20})}, y);
  conv.attrs.push_back(ir::Attr::make_ints("kernel_shape", {3, 3}));
  conv.attrs.push_back(ir::Attr::make_ints("pads", {1, 1, 1, 1}));
  int p = g.tensor({1, 20, 7, 7});
  ir::Node& pr = g.node(Op::PRelu, {y, g.constant({20, 1, 1})}, p);
  pr.activation = fb::Activation::Clip;
  pr.activation_min = -0.3f;
  pr.activation_max = 0.6f;
  g.output(p);
  EXPECT_TRUE(matches_portable(g));
}

TEST(OnednnPRelu, Rejected) {
  GraphCase c = prelu_case({2, 5}, {3}, true, 7);
  auto bytes = ir::encode_graph(c.graph);
  const fb::Graph* g = flatbuffers::GetRoot<fb::Graph>(bytes.data());
  std::string why;
  EXPECT_FALSE(onednn_supports(*g, *g->nodes()->Get(0), &why));
  EXPECT_NE(why.find("slope does not broadcast"), std::string::npos) << why;
}

}  // namespace
}  // namespace tessera::onednn::testing

namespace tessera::backend_testing {
INSTANTIATE_TEST_SUITE_P(Conformance, Binary, ::testing::Values(onednn::testing::kBackendName),
                         BackendParamName());
INSTANTIATE_TEST_SUITE_P(Conformance, Unary, ::testing::Values(onednn::testing::kBackendName),
                         BackendParamName());
INSTANTIATE_TEST_SUITE_P(Conformance, PRelu, ::testing::Values(onednn::testing::kBackendName),
                         BackendParamName());
}  // namespace tessera::backend_testing
