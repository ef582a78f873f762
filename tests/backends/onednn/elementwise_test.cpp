// Conformance: binary ops with broadcasting, eltwise activations and math, softmax, PRelu.
#include <gtest/gtest.h>

#include "harness.h"
#include "tessera/backends/onednn/supports.h"

namespace tessera::onednn::testing {
namespace {

using Op = fb::OpType;

constexpr Op kBinaryOps[] = {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Max, Op::Min};

GraphCase binary_case(Op op, std::vector<int64_t> a, std::vector<int64_t> b, bool b_constant,
                      uint32_t seed, fb::Activation act = fb::Activation::None) {
  GraphCase c;
  c.seed = seed;
  int x = c.input(std::vector<ir::Dim>(a.begin(), a.end()));
  int y = b_constant ? c.constant(b) : c.input(std::vector<ir::Dim>(b.begin(), b.end()));
  if (op == Op::Div && b_constant) {
    for (float& f : c.constants.back()) f = f < 0 ? f - 0.5f : f + 0.5f;
  }
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t da = d + a.size() >= rank ? a[d + a.size() - rank] : 1;
    const int64_t db = d + b.size() >= rank ? b[d + b.size() - rank] : 1;
    out[d] = std::max(da, db);
  }
  int z = c.tensor(std::vector<ir::Dim>(out.begin(), out.end()));
  c.node(op, {x, y}, z).activation = act;
  c.output(z);
  return c;
}

::testing::AssertionResult check(const GraphCase& c, Op op) {
  return op == Op::Div ? matches_portable(c, 0.5f, 1.5f) : matches_portable(c);
}

TEST(OnednnBinary, SameShape) {
  for (Op op : kBinaryOps) {
    EXPECT_TRUE(check(binary_case(op, {2, 3, 4, 5}, {2, 3, 4, 5}, false, 1), op))
        << fb::EnumNameOpType(op);
  }
}

TEST(OnednnBinary, Broadcast) {
  for (Op op : kBinaryOps) {
    SCOPED_TRACE(fb::EnumNameOpType(op));
    EXPECT_TRUE(check(binary_case(op, {1, 8, 5, 5}, {8, 1, 1}, true, 2), op));
    EXPECT_TRUE(check(binary_case(op, {2, 7, 6}, {6}, false, 3), op));
    EXPECT_TRUE(check(binary_case(op, {4, 9}, {1, 9}, true, 4), op));
  }
  // A broadcast first operand of a commutative op.
  EXPECT_TRUE(check(binary_case(Op::Mul, {1, 8, 1, 1}, {2, 8, 3, 3}, false, 5), Op::Mul));
}

TEST(OnednnBinary, FusedActivations) {
  EXPECT_TRUE(matches_portable(binary_case(Op::Add, {1, 4, 3, 3}, {1, 4, 3, 3}, false, 6,
                                           fb::Activation::Relu)));
  GraphCase c = binary_case(Op::Mul, {2, 16}, {16}, true, 7, fb::Activation::Clip);
  c.graph.nodes[0].activation_min = -0.2f;
  c.graph.nodes[0].activation_max = 0.4f;
  EXPECT_TRUE(matches_portable(c));
}

GraphCase unary_case(Op op, std::vector<int64_t> dims, std::vector<ir::Attr> attrs = {}) {
  GraphCase c = GraphCase::single(op, {dims}, dims);
  c.graph.nodes[0].attrs = std::move(attrs);
  return c;
}

TEST(OnednnUnary, Activations) {
  for (std::vector<int64_t> dims : {std::vector<int64_t>{2, 3, 5, 7}, {17}, {3, 40}}) {
    EXPECT_TRUE(matches_portable(unary_case(Op::Relu, dims)));
    EXPECT_TRUE(matches_portable(unary_case(Op::Clip, dims, {ir::Attr::make_float("min", 0.0f),
                                                             ir::Attr::make_float("max", 0.5f)})));
    EXPECT_TRUE(matches_portable(unary_case(Op::Clip, dims, {ir::Attr::make_float("max", 0.5f)})));
    EXPECT_TRUE(matches_portable(
        unary_case(Op::LeakyRelu, dims, {ir::Attr::make_float("alpha", 0.1f)}), -3.0f, 3.0f));
    EXPECT_TRUE(matches_portable(unary_case(Op::Sigmoid, dims), -6.0f, 6.0f));
    EXPECT_TRUE(matches_portable(unary_case(Op::Tanh, dims), -3.0f, 3.0f));
    EXPECT_TRUE(matches_portable(unary_case(Op::HardSwish, dims), -5.0f, 5.0f));
    EXPECT_TRUE(matches_portable(unary_case(Op::HardSigmoid, dims,
                                            {ir::Attr::make_float("alpha", 1.0f / 6.0f),
                                             ir::Attr::make_float("beta", 0.5f)}),
                                 -5.0f, 5.0f));
    EXPECT_TRUE(matches_portable(unary_case(Op::Gelu, dims), -4.0f, 4.0f));
    EXPECT_TRUE(matches_portable(
        unary_case(Op::Gelu, dims, {ir::Attr::make_string("approximate", "tanh")}), -4.0f, 4.0f));
  }
}

TEST(OnednnUnary, Math) {
  for (std::vector<int64_t> dims : {std::vector<int64_t>{1, 5, 7, 3}, {31}}) {
    EXPECT_TRUE(matches_portable(unary_case(Op::Neg, dims)));
    EXPECT_TRUE(matches_portable(unary_case(Op::Abs, dims)));
    EXPECT_TRUE(matches_portable(unary_case(Op::Exp, dims), -3.0f, 3.0f));
    EXPECT_TRUE(matches_portable(unary_case(Op::Sqrt, dims), 0.0f, 4.0f));
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

GraphCase prelu_case(std::vector<int64_t> x, std::vector<int64_t> slope, bool slope_constant,
                     uint32_t seed) {
  GraphCase c;
  c.seed = seed;
  int in = c.input(std::vector<ir::Dim>(x.begin(), x.end()));
  int s = slope_constant ? c.constant(slope)
                         : c.input(std::vector<ir::Dim>(slope.begin(), slope.end()));
  int y = c.tensor(std::vector<ir::Dim>(x.begin(), x.end()));
  c.node(Op::PRelu, {in, s}, y);
  c.output(y);
  return c;
}

TEST(OnednnPRelu, SlopeBroadcasts) {
  EXPECT_TRUE(matches_portable(prelu_case({2, 5, 7, 3}, {5, 1, 1}, true, 1)));  // per channel
  EXPECT_TRUE(matches_portable(prelu_case({2, 5, 7, 3}, {1}, true, 2)));        // scalar
  EXPECT_TRUE(matches_portable(prelu_case({3, 11}, {11}, true, 3)));            // last dim
  EXPECT_TRUE(matches_portable(prelu_case({2, 3, 4}, {2, 3, 4}, false, 4)));    // full, input
  EXPECT_TRUE(matches_portable(prelu_case({2, 6, 5, 5}, {1, 6, 1, 1}, false, 5)));
  EXPECT_TRUE(matches_portable(prelu_case({17}, {17}, true, 6)));
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
