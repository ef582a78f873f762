// Conformance (conformance.h): Conv (regular, strided, dilated, pointwise, grouped, depthwise,
// fused activations, random shapes), ConvTranspose, binary ops with broadcasting, unary ops and
// PRelu, each against the portable kernels. Where the backends' tests used to differ in shapes,
// ranges or seeds, a case runs every one of those configurations, so no backend lost one.
#include <functional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "tests/backends/common/conformance.h"
#include "tests/backends/common/conv_cases.h"
#include "tests/backends/common/elementwise_cases.h"

namespace tessera::backend_testing {
namespace {

using Op = fb::OpType;

/// Random Conv shapes (regular, grouped, depthwise) under the given limits, each checked when
/// its kernel fits the padded input. `max_dw_group` bounds the depthwise groups, `max_per_group`
/// the channels per group of the others.
void check_random_convs(int iterations, int max_dw_group, int max_per_group,
                        const std::function<::testing::AssertionResult(const GraphCase&)>& match) {
  std::mt19937 rng(1234);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int iter = 0; iter < iterations; ++iter) {
    ConvCfg c{pick(1, 2), 0, pick(5, 14), pick(5, 14), 0, pick(1, 4), pick(1, 4)};
    const int kind = pick(0, 2);  // regular, grouped, depthwise
    c.group = kind == 0 ? 1 : (kind == 1 ? pick(2, 3) : pick(2, max_dw_group));
    c.cin = kind == 2 ? c.group : c.group * pick(1, max_per_group);
    c.cout = kind == 2 ? c.group * pick(1, 2) : c.group * pick(1, max_per_group);
    c.sh = pick(1, 3);
    c.sw = pick(1, 3);
    c.dh = pick(1, 2);
    c.dw = pick(1, 2);
    c.pt = pick(0, c.kh - 1);
    c.pb = pick(0, c.kh - 1);
    c.pl = pick(0, c.kw - 1);
    c.pr = pick(0, c.kw - 1);
    c.bias = pick(0, 1) == 1;
    c.act = pick(0, 1) ? fb::Activation::Relu : fb::Activation::None;
    if ((c.kh - 1) * c.dh + 1 > c.h + c.pt + c.pb || (c.kw - 1) * c.dw + 1 > c.w + c.pl + c.pr) {
      continue;
    }
    SCOPED_TRACE("iteration " + std::to_string(iter));
    EXPECT_TRUE(match(conv_case(c, 100 + static_cast<uint32_t>(iter))));
  }
}

}  // namespace

// ---- Conv ---------------------------------------------------------------------------------------

TEST_P(Conv, Basic3x3) {
  EXPECT_CONFORMS(conv_case({1, 3, 8, 8, 4, 3, 3}, 1));
}

TEST_P(Conv, OddSizesStridesPads) {
  ConvCfg c{2, 5, 13, 11, 7, 3, 5};
  c.sh = 2;
  c.sw = 3;
  c.pt = 1;
  c.pl = 2;
  c.pr = 1;
  EXPECT_CONFORMS(conv_case(c, 2));
}

TEST_P(Conv, Dilation) {
  for (ConvCfg c : {ConvCfg{1, 4, 17, 15, 6, 3, 3}, ConvCfg{1, 4, 11, 10, 6, 3, 3}}) {
    c.dh = 2;
    c.dw = 3;
    c.pt = c.pb = 2;
    c.pl = c.pr = 3;
    EXPECT_CONFORMS(conv_case(c, 3)) << c.h << "x" << c.w;
  }
}

TEST_P(Conv, PointwiseNoBias) {
  for (ConvCfg c : {ConvCfg{1, 16, 7, 9, 24, 1, 1}, ConvCfg{1, 16, 5, 7, 12, 1, 1}}) {
    c.bias = false;
    EXPECT_CONFORMS(conv_case(c, 4)) << c.h << "x" << c.w;
  }
}

TEST_P(Conv, Grouped) {
  ConvCfg c{1, 6, 9, 9, 9, 3, 3};
  c.group = 3;
  c.pt = c.pl = c.pb = c.pr = 1;
  EXPECT_CONFORMS(conv_case(c, 5));
  ConvCfg d{2, 8, 6, 7, 4, 2, 3};
  d.group = 2;
  d.sh = 2;
  EXPECT_CONFORMS(conv_case(d, 6));
}

TEST_P(Conv, Depthwise) {
  // 32 channels fill oneDNN's 16-wide blocks twice; 8 are fewer than one block.
  for (int64_t ch : {32, 8}) {
    ConvCfg c{1, ch, 12, 12, ch, 3, 3};
    c.group = ch;
    c.pt = c.pl = c.pb = c.pr = 1;
    EXPECT_CONFORMS(conv_case(c, 7)) << ch;
  }
  // Stride 2, 5x5, odd size.
  ConvCfg d{1, 5, 15, 13, 5, 5, 5};
  d.group = 5;
  d.sh = d.sw = 2;
  d.pt = d.pl = d.pb = d.pr = 2;
  EXPECT_CONFORMS(conv_case(d, 8));
}

TEST_P(Conv, DepthwiseStride2Relu) {
  ConvCfg c{1, 8, 10, 10, 8, 3, 3};
  c.group = 8;
  c.sh = c.sw = 2;
  c.pt = c.pl = c.pb = c.pr = 1;
  c.act = fb::Activation::Relu;
  EXPECT_CONFORMS(conv_case(c, 6));
}

TEST_P(Conv, DepthwiseMultiplier) {
  ConvCfg c{1, 3, 10, 11, 6, 3, 3};
  c.group = 3;
  c.pt = c.pl = 1;
  EXPECT_CONFORMS(conv_case(c, 9));
}

TEST_P(Conv, DepthwiseDilatedNoBias) {
  ConvCfg c{1, 4, 11, 11, 4, 3, 3};
  c.group = 4;
  c.dh = c.dw = 2;
  c.bias = false;
  EXPECT_CONFORMS(conv_case(c, 10));
}

TEST_P(Conv, FusedRelu) {
  ConvCfg c{1, 3, 9, 9, 5, 3, 3};
  c.act = fb::Activation::Relu;
  EXPECT_CONFORMS(conv_case(c, 11));
}

TEST_P(Conv, FusedClip) {
  // Depthwise with 16 and with 4 channels, and a regular convolution with other bounds.
  for (int64_t ch : {16, 4}) {
    ConvCfg c{1, ch, 8, 8, ch, 3, 3};
    c.group = ch;
    c.act = fb::Activation::Clip;
    c.act_min = -0.25f;
    c.act_max = 0.3f;
    EXPECT_CONFORMS(conv_case(c, 12)) << ch;
  }
  ConvCfg d{1, 3, 6, 6, 5, 3, 3};
  d.act = fb::Activation::Clip;
  d.act_min = 0.0f;
  d.act_max = 0.5f;
  EXPECT_CONFORMS(conv_case(d, 7));
}

TEST_P(Conv, OneDimensional) {
  GraphCase g;
  int x = g.input({2, 3, 12});
  int y = g.tensor({2, 4, 6});
  ir::Node& n = g.node(fb::OpType::Conv, {x, g.constant({4, 3, 3}), g.constant({4})}, y);
  n.attrs.push_back(ir::Attr::make_ints("kernel_shape", {3}));
  n.attrs.push_back(ir::Attr::make_ints("strides", {2}));
  n.attrs.push_back(ir::Attr::make_ints("pads", {1, 0}));
  g.output(y);
  EXPECT_CONFORMS(g);
}

TEST_P(Conv, RandomShapes) {
  auto match = [this](const GraphCase& g) {
    return accepts(g) ? matches_portable(g) : ::testing::AssertionSuccess();
  };
  {
    SCOPED_TRACE("wide");  // up to 20 depthwise groups, 12 channels per group
    check_random_convs(32, 20, 12, match);
  }
  {
    SCOPED_TRACE("narrow");  // up to 6 depthwise groups, 4 channels per group
    check_random_convs(24, 6, 4, match);
  }
}

// ---- ConvTranspose ------------------------------------------------------------------------------

namespace {

/// One 2-D ConvTranspose: NCHW input, weights (cin, cout_g, kh, kw), `group` groups.
struct DeconvCfg {
  int64_t n, cin, h, w, cout_g, kh, kw;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  int64_t ah = 0, aw = 0;  // output_padding
  int64_t group = 1;
  bool bias = true;
};

GraphCase deconv_case(const DeconvCfg& c, uint32_t seed) {
  GraphCase g;
  g.seed = seed;
  const int64_t oh = (c.h - 1) * c.sh + (c.kh - 1) * c.dh + 1 + c.ah - c.pt - c.pb;
  const int64_t ow = (c.w - 1) * c.sw + (c.kw - 1) * c.dw + 1 + c.aw - c.pl - c.pr;
  int x = g.input({c.n, c.cin, c.h, c.w});
  std::vector<int> ins = {x, g.constant({c.cin, c.cout_g, c.kh, c.kw})};
  if (c.bias) ins.push_back(g.constant({c.cout_g * c.group}));
  int y = g.tensor({c.n, c.cout_g * c.group, oh, ow});
  ir::Node& node = g.node(Op::ConvTranspose, ins, y);
  node.attrs.push_back(ir::Attr::make_ints("kernel_shape", {c.kh, c.kw}));
  node.attrs.push_back(ir::Attr::make_ints("strides", {c.sh, c.sw}));
  node.attrs.push_back(ir::Attr::make_ints("dilations", {c.dh, c.dw}));
  node.attrs.push_back(ir::Attr::make_ints("pads", {c.pt, c.pl, c.pb, c.pr}));
  node.attrs.push_back(ir::Attr::make_ints("output_padding", {c.ah, c.aw}));
  node.attrs.push_back(ir::Attr::make_int("group", c.group));
  g.output(y);
  return g;
}

}  // namespace

TEST_P(ConvTranspose, Stride2) {
  DeconvCfg c{1, 4, 5, 6, 3, 3, 3};
  c.sh = c.sw = 2;
  c.pt = c.pl = c.pb = c.pr = 1;
  c.ah = c.aw = 1;
  EXPECT_CONFORMS(deconv_case(c, 20));
  DeconvCfg d{2, 3, 4, 4, 5, 2, 2};
  d.sh = d.sw = 2;
  EXPECT_CONFORMS(deconv_case(d, 22));
}

TEST_P(ConvTranspose, GroupedDilatedOdd) {
  DeconvCfg c{2, 6, 7, 5, 2, 2, 3};
  c.group = 3;
  c.sh = 3;
  c.sw = 2;
  c.dh = 2;
  c.pt = 1;
  c.pr = 2;
  c.ah = 2;
  c.bias = false;
  EXPECT_CONFORMS(deconv_case(c, 21));
}

// ---- Binary ops ---------------------------------------------------------------------------------

namespace {

/// Inputs of Div (divisor) and Pow (base) stay in [0.5, 1.5]; the other ops take [-1, 1].
bool positive_inputs(Op op) {
  return op == Op::Div || op == Op::Pow;
}

}  // namespace

#define EXPECT_BINARY_CONFORMS(c) \
  EXPECT_CONFORMS(c, positive_inputs(op()) ? 0.5f : -1.0f, positive_inputs(op()) ? 1.5f : 1.0f)

TEST_P(Binary, SameShape) {
  EXPECT_BINARY_CONFORMS(binary_case(op(), {2, 3, 4, 5}, {2, 3, 4, 5}, false, 1));
  EXPECT_BINARY_CONFORMS(binary_case(op(), {2, 3, 5, 7}, {2, 3, 5, 7}, false, 1));
}

TEST_P(Binary, Broadcast) {
  EXPECT_BINARY_CONFORMS(binary_case(op(), {1, 8, 5, 5}, {8, 1, 1}, true, 2));
  EXPECT_BINARY_CONFORMS(binary_case(op(), {2, 7, 6}, {6}, false, 3));
  EXPECT_BINARY_CONFORMS(binary_case(op(), {4, 9}, {1, 9}, true, 4));
  // A broadcast first operand.
  EXPECT_BINARY_CONFORMS(binary_case(op(), {1, 8, 1, 1}, {2, 8, 3, 3}, false, 5));
}

TEST_P(Binary, BothSidesBroadcast) {
  EXPECT_BINARY_CONFORMS(GraphCase::single(op(), {{4, 1, 3}, {5, 1}}, {4, 5, 3}));
  for (const auto& [a, b, seed] :
       std::vector<std::tuple<std::vector<int64_t>, std::vector<int64_t>, uint32_t>>{
           {{2, 3, 4, 5}, {3, 1, 5}, 7},
           {{2, 1, 4, 1}, {1, 3, 1, 5}, 8},
           {{7, 1}, {1, 9}, 9},
           {{2, 1, 3, 1, 2, 3}, {3, 1, 2, 1}, 10}}) {
    SCOPED_TRACE(seed);
    EXPECT_BINARY_CONFORMS(binary_case(op(), a, b, false, seed));
  }
}

TEST_P(Binary, Chain) {
  // op(a, b) -> op(., c) with c broadcast -> op(., constant scalar), a fused Relu on the last
  // when the IR allows one; inputs in [0.5, 2].
  const bool fusable = op() == Op::Add || op() == Op::Sub || op() == Op::Mul || op() == Op::Div;
  GraphCase g;
  int a = g.input({2, 3, 4, 5});
  int b = g.input({2, 3, 4, 5});
  int c = g.input({3, 1, 5});
  int d = g.constant({1}, {fusable ? 1.5f : 0.75f});
  int t1 = g.tensor({2, 3, 4, 5});
  int t2 = g.tensor({2, 3, 4, 5});
  int y = g.tensor({2, 3, 4, 5});
  g.node(op(), {a, b}, t1);
  g.node(op(), {t1, c}, t2);
  g.node(op(), {t2, d}, y).activation = fusable ? fb::Activation::Relu : fb::Activation::None;
  g.output(y);
  EXPECT_CONFORMS(g, 0.5f, 2.0f);
}

TEST_P(Binary, ChannelBroadcastConstant) {
  for (const auto& [a, b, seed] :
       std::vector<std::tuple<std::vector<int64_t>, std::vector<int64_t>, uint32_t>>{
           {{1, 6, 5, 4}, {6, 1, 1}, 2},
           {{1, 6, 5, 4}, {1, 6, 1, 1}, 3},
           {{2, 6, 5, 4}, {4}, 4},
           {{2, 6, 5, 4}, {}, 5},
           {{2, 6, 5, 4}, {6, 5, 4}, 6}}) {
    SCOPED_TRACE(seed);
    EXPECT_BINARY_CONFORMS(binary_case(op(), a, b, true, seed));
  }
}

TEST_P(BinaryFused, Activations) {
  EXPECT_BINARY_CONFORMS(
      binary_case(op(), {1, 4, 3, 3}, {1, 4, 3, 3}, false, 6, fb::Activation::Relu));
  GraphCase c = binary_case(op(), {2, 16}, {16}, true, 7, fb::Activation::Clip);
  c.graph.nodes[0].activation_min = -0.2f;
  c.graph.nodes[0].activation_max = 0.4f;
  EXPECT_BINARY_CONFORMS(c);
  EXPECT_BINARY_CONFORMS(
      binary_case(op(), {1, 4, 3, 3}, {4, 1, 1}, true, 11, fb::Activation::Relu));
}

// ---- Unary ops ----------------------------------------------------------------------------------

namespace {

/// One configuration of a unary op: attributes and the input range.
struct UnaryCfg {
  std::vector<ir::Attr> attrs;
  float lo = -1.0f, hi = 1.0f;
};

/// The configurations each unary op is checked with.
std::vector<UnaryCfg> unary_cfgs(Op op) {
  using Attr = ir::Attr;
  switch (op) {
    case Op::Relu:
      return {{}, {{}, -3.0f, 3.0f}};
    case Op::Clip:
      return {{{Attr::make_float("min", 0.0f), Attr::make_float("max", 0.5f)}},
              {{Attr::make_float("min", 0.0f), Attr::make_float("max", 6.0f)}, -8.0f, 8.0f},
              {{Attr::make_float("max", 0.5f)}},
              {{Attr::make_float("min", -0.5f), Attr::make_float("max", 0.25f)}, -4.0f, 4.0f},
              {{Attr::make_float("min", 0.0f)}, -4.0f, 4.0f}};
    case Op::LeakyRelu:
      return {{{Attr::make_float("alpha", 0.1f)}, -3.0f, 3.0f},
              {{}, -3.0f, 3.0f},
              {{Attr::make_float("alpha", 0.3f)}}};
    case Op::Sigmoid:
      return {{{}, -6.0f, 6.0f}, {{}, -8.0f, 8.0f}};
    case Op::HardSwish:
      return {{{}, -5.0f, 5.0f}};
    case Op::HardSigmoid:
      return {
          {{}, -5.0f, 5.0f},
          {{Attr::make_float("alpha", 1.0f / 6.0f), Attr::make_float("beta", 0.5f)}, -5.0f, 5.0f},
          {{Attr::make_float("alpha", 0.4f), Attr::make_float("beta", 0.1f)}}};
    case Op::Tanh:
    case Op::Erf:
      return {{{}, -3.0f, 3.0f}, {{}, -4.0f, 4.0f}};
    case Op::Gelu:
      return {{{}, -4.0f, 4.0f}, {{Attr::make_string("approximate", "tanh")}, -4.0f, 4.0f}};
    case Op::Exp:
      return {{{}, -3.0f, 3.0f}};
    case Op::Mish:
      return {{{}, -6.0f, 6.0f}};
    case Op::Elu:
      return {{{}, -4.0f, 4.0f}, {{Attr::make_float("alpha", 0.5f)}, -6.0f, 3.0f}};
    case Op::Sqrt:
      return {{{}, 0.0f, 4.0f}};
    case Op::Reciprocal:
      return {{{}, 0.5f, 4.0f}};
    default:
      return {{}};
  }
}

}  // namespace

TEST_P(Unary, Shapes) {
  for (std::vector<int64_t> dims : {std::vector<int64_t>{2, 3, 5, 7},
                                    {17},
                                    {3, 40},
                                    {1, 5, 7, 3},
                                    {3, 17},
                                    {2, 3, 4, 5, 6},
                                    {31}}) {
    SCOPED_TRACE(::testing::PrintToString(dims));
    for (const UnaryCfg& cfg : unary_cfgs(op())) {
      EXPECT_CONFORMS(unary_case(op(), dims, cfg.attrs), cfg.lo, cfg.hi);
    }
  }
}

// ---- PRelu --------------------------------------------------------------------------------------

TEST_P(PRelu, SlopeShapes) {
  EXPECT_CONFORMS(prelu_case({2, 5, 7, 3}, {5, 1, 1}, true, 1));  // per channel
  EXPECT_CONFORMS(prelu_case({2, 5, 7, 3}, {1}, true, 2));        // scalar
  EXPECT_CONFORMS(prelu_case({3, 11}, {11}, true, 3));            // last dim
  EXPECT_CONFORMS(prelu_case({17}, {17}, true, 6));
  EXPECT_CONFORMS(prelu_case({1, 6, 5, 7}, {6, 1, 1}, true, 1));     // channels
  EXPECT_CONFORMS(prelu_case({2, 6, 5, 7}, {1, 6, 1, 1}, true, 2));  // channels
  EXPECT_CONFORMS(prelu_case({1, 6, 5, 7}, {7}, true, 3));           // innermost
  EXPECT_CONFORMS(prelu_case({1, 6, 5, 7}, {1}, true, 4));           // scalar
  EXPECT_CONFORMS(prelu_case({3, 10}, {10}, true, 5));               // 2-D
}

TEST_P(PRelu, SlopeFromAGraphInput) {
  EXPECT_CONFORMS(prelu_case({2, 3, 4}, {2, 3, 4}, false, 4));  // full
  EXPECT_CONFORMS(prelu_case({2, 6, 5, 5}, {1, 6, 1, 1}, false, 5));
}

}  // namespace tessera::backend_testing
