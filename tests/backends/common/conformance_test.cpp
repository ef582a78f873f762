// Conformance cases shared by the backends (see conformance.h): Conv (regular, strided, dilated,
// pointwise, grouped, depthwise, fused activations, random shapes), binary ops with
// broadcasting, unary ops and PRelu, each against the portable kernels. Where the backends'
// tests used to differ in shapes, ranges or seeds, a case runs every one of those
// configurations, so no backend lost one.
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
  EXPECT_TRUE(matches_portable(conv_case({1, 3, 8, 8, 4, 3, 3}, 1)));
}

TEST_P(Conv, OddSizesStridesPads) {
  ConvCfg c{2, 5, 13, 11, 7, 3, 5};
  c.sh = 2;
  c.sw = 3;
  c.pt = 1;
  c.pl = 2;
  c.pr = 1;
  EXPECT_TRUE(matches_portable(conv_case(c, 2)));
}

TEST_P(Conv, Dilation) {
  for (ConvCfg c : {ConvCfg{1, 4, 17, 15, 6, 3, 3}, ConvCfg{1, 4, 11, 10, 6, 3, 3}}) {
    c.dh = 2;
    c.dw = 3;
    c.pt = c.pb = 2;
    c.pl = c.pr = 3;
    EXPECT_TRUE(matches_portable(conv_case(c, 3))) << c.h << "x" << c.w;
  }
}

TEST_P(Conv, PointwiseNoBias) {
  for (ConvCfg c : {ConvCfg{1, 16, 7, 9, 24, 1, 1}, ConvCfg{1, 16, 5, 7, 12, 1, 1}}) {
    c.bias = false;
    EXPECT_TRUE(matches_portable(conv_case(c, 4))) << c.h << "x" << c.w;
  }
}

TEST_P(Conv, Grouped) {
  ConvCfg c{1, 6, 9, 9, 9, 3, 3};
  c.group = 3;
  c.pt = c.pl = c.pb = c.pr = 1;
  EXPECT_TRUE(matches_portable(conv_case(c, 5)));
  ConvCfg d{2, 8, 6, 7, 4, 2, 3};
  d.group = 2;
  d.sh = 2;
  EXPECT_TRUE(matches_portable(conv_case(d, 6)));
}

TEST_P(Conv, Depthwise) {
  // 32 channels fill oneDNN's 16-wide blocks twice; 8 are fewer than one block.
  for (int64_t ch : {32, 8}) {
    ConvCfg c{1, ch, 12, 12, ch, 3, 3};
    c.group = ch;
    c.pt = c.pl = c.pb = c.pr = 1;
    EXPECT_TRUE(matches_portable(conv_case(c, 7))) << ch;
  }
  // Stride 2, 5x5, odd size.
  ConvCfg d{1, 5, 15, 13, 5, 5, 5};
  d.group = 5;
  d.sh = d.sw = 2;
  d.pt = d.pl = d.pb = d.pr = 2;
  EXPECT_TRUE(matches_portable(conv_case(d, 8)));
}

TEST_P(Conv, DepthwiseStride2Relu) {
  ConvCfg c{1, 8, 10, 10, 8, 3, 3};
  c.group = 8;
  c.sh = c.sw = 2;
  c.pt = c.pl = c.pb = c.pr = 1;
  c.act = fb::Activation::Relu;
  EXPECT_TRUE(matches_portable(conv_case(c, 6)));
}

TEST_P(Conv, DepthwiseMultiplier) {
  ConvCfg c{1, 3, 10, 11, 6, 3, 3};
  c.group = 3;
  c.pt = c.pl = 1;
  EXPECT_TRUE(matches_portable(conv_case(c, 9)));
}

TEST_P(Conv, DepthwiseDilatedNoBias) {
  ConvCfg c{1, 4, 11, 11, 4, 3, 3};
  c.group = 4;
  c.dh = c.dw = 2;
  c.bias = false;
  EXPECT_TRUE(matches_portable(conv_case(c, 10)));
}

TEST_P(Conv, FusedRelu) {
  ConvCfg c{1, 3, 9, 9, 5, 3, 3};
  c.act = fb::Activation::Relu;
  EXPECT_TRUE(matches_portable(conv_case(c, 11)));
}

TEST_P(Conv, FusedClip) {
  // Depthwise with 16 and with 4 channels, and a regular convolution with other bounds.
  for (int64_t ch : {16, 4}) {
    ConvCfg c{1, ch, 8, 8, ch, 3, 3};
    c.group = ch;
    c.act = fb::Activation::Clip;
    c.act_min = -0.25f;
    c.act_max = 0.3f;
    EXPECT_TRUE(matches_portable(conv_case(c, 12))) << ch;
  }
  ConvCfg d{1, 3, 6, 6, 5, 3, 3};
  d.act = fb::Activation::Clip;
  d.act_min = 0.0f;
  d.act_max = 0.5f;
  EXPECT_TRUE(matches_portable(conv_case(d, 7)));
}

TEST_P(Conv, RandomShapes) {
  auto match = [this](const GraphCase& g) { return matches_portable(g); };
  {
    SCOPED_TRACE("wide");  // up to 20 depthwise groups, 12 channels per group
    check_random_convs(32, 20, 12, match);
  }
  {
    SCOPED_TRACE("narrow");  // up to 6 depthwise groups, 4 channels per group
    check_random_convs(24, 6, 4, match);
  }
}

// ---- Binary ops ---------------------------------------------------------------------------------

TEST_P(Binary, SameShape) {
  for (Op op : kBinaryOps) {
    SCOPED_TRACE(fb::EnumNameOpType(op));
    EXPECT_TRUE(binary_matches_portable(backend(),
                                        binary_case(op, {2, 3, 4, 5}, {2, 3, 4, 5}, false, 1), op));
    EXPECT_TRUE(binary_matches_portable(backend(),
                                        binary_case(op, {2, 3, 5, 7}, {2, 3, 5, 7}, false, 1), op));
  }
}

TEST_P(Binary, Broadcast) {
  for (Op op : kBinaryOps) {
    SCOPED_TRACE(fb::EnumNameOpType(op));
    EXPECT_TRUE(
        binary_matches_portable(backend(), binary_case(op, {1, 8, 5, 5}, {8, 1, 1}, true, 2), op));
    EXPECT_TRUE(binary_matches_portable(backend(), binary_case(op, {2, 7, 6}, {6}, false, 3), op));
    EXPECT_TRUE(binary_matches_portable(backend(), binary_case(op, {4, 9}, {1, 9}, true, 4), op));
  }
  // A broadcast first operand of a commutative op.
  EXPECT_TRUE(binary_matches_portable(
      backend(), binary_case(Op::Mul, {1, 8, 1, 1}, {2, 8, 3, 3}, false, 5), Op::Mul));
}

TEST_P(Binary, ChannelBroadcastConstant) {
  for (Op op : kBinaryOps) {
    SCOPED_TRACE(fb::EnumNameOpType(op));
    for (const auto& [a, b, seed] :
         std::vector<std::tuple<std::vector<int64_t>, std::vector<int64_t>, uint32_t>>{
             {{1, 6, 5, 4}, {6, 1, 1}, 2},
             {{1, 6, 5, 4}, {1, 6, 1, 1}, 3},
             {{2, 6, 5, 4}, {4}, 4},
             {{2, 6, 5, 4}, {}, 5},
             {{2, 6, 5, 4}, {6, 5, 4}, 6}}) {
      EXPECT_TRUE(binary_matches_portable(backend(), binary_case(op, a, b, true, seed), op))
          << seed;
    }
  }
}

TEST_P(Binary, FusedActivations) {
  EXPECT_TRUE(matches_portable(
      binary_case(Op::Add, {1, 4, 3, 3}, {1, 4, 3, 3}, false, 6, fb::Activation::Relu)));
  GraphCase c = binary_case(Op::Mul, {2, 16}, {16}, true, 7, fb::Activation::Clip);
  c.graph.nodes[0].activation_min = -0.2f;
  c.graph.nodes[0].activation_max = 0.4f;
  EXPECT_TRUE(matches_portable(c));
  for (Op op : {Op::Add, Op::Sub, Op::Mul, Op::Div}) {
    SCOPED_TRACE(fb::EnumNameOpType(op));
    EXPECT_TRUE(binary_matches_portable(
        backend(), binary_case(op, {1, 4, 3, 3}, {4, 1, 1}, true, 11, fb::Activation::Relu), op));
  }
}

// ---- Unary ops ----------------------------------------------------------------------------------

TEST_P(Unary, Activations) {
  using Attr = ir::Attr;
  for (std::vector<int64_t> dims :
       {std::vector<int64_t>{2, 3, 5, 7}, {17}, {3, 40}, {1, 5, 7, 3}, {3, 17}, {2, 3, 4, 5, 6}}) {
    SCOPED_TRACE(::testing::PrintToString(dims));
    EXPECT_TRUE(matches_portable(unary_case(Op::Relu, dims)));
    EXPECT_TRUE(matches_portable(unary_case(Op::Relu, dims), -3.0f, 3.0f));
    EXPECT_TRUE(matches_portable(unary_case(
        Op::Clip, dims, {Attr::make_float("min", 0.0f), Attr::make_float("max", 0.5f)})));
    EXPECT_TRUE(matches_portable(
        unary_case(Op::Clip, dims, {Attr::make_float("min", 0.0f), Attr::make_float("max", 6.0f)}),
        -8.0f, 8.0f));
    EXPECT_TRUE(matches_portable(unary_case(Op::Clip, dims, {Attr::make_float("max", 0.5f)})));
    EXPECT_TRUE(matches_portable(unary_case(Op::LeakyRelu, dims, {Attr::make_float("alpha", 0.1f)}),
                                 -3.0f, 3.0f));
    EXPECT_TRUE(matches_portable(unary_case(Op::LeakyRelu, dims), -3.0f, 3.0f));
    EXPECT_TRUE(matches_portable(unary_case(Op::Sigmoid, dims), -6.0f, 6.0f));
    EXPECT_TRUE(matches_portable(unary_case(Op::Sigmoid, dims), -8.0f, 8.0f));
    EXPECT_TRUE(matches_portable(unary_case(Op::HardSwish, dims), -5.0f, 5.0f));
    EXPECT_TRUE(matches_portable(unary_case(Op::HardSigmoid, dims), -5.0f, 5.0f));
    EXPECT_TRUE(matches_portable(
        unary_case(Op::HardSigmoid, dims,
                   {Attr::make_float("alpha", 1.0f / 6.0f), Attr::make_float("beta", 0.5f)}),
        -5.0f, 5.0f));
  }
}

TEST_P(Unary, Math) {
  for (std::vector<int64_t> dims : {std::vector<int64_t>{1, 5, 7, 3}, {31}}) {
    SCOPED_TRACE(::testing::PrintToString(dims));
    EXPECT_TRUE(matches_portable(unary_case(Op::Neg, dims)));
    EXPECT_TRUE(matches_portable(unary_case(Op::Abs, dims)));
    EXPECT_TRUE(matches_portable(unary_case(Op::Sqrt, dims), 0.0f, 4.0f));
    EXPECT_TRUE(matches_portable(unary_case(Op::Identity, dims)));
  }
}

// ---- PRelu --------------------------------------------------------------------------------------

// Constant slopes; a slope from a graph input is oneDNN's own case (XNNPACK needs a constant).
TEST_P(PRelu, SlopeShapes) {
  EXPECT_TRUE(matches_portable(prelu_case({2, 5, 7, 3}, {5, 1, 1}, true, 1)));  // per channel
  EXPECT_TRUE(matches_portable(prelu_case({2, 5, 7, 3}, {1}, true, 2)));        // scalar
  EXPECT_TRUE(matches_portable(prelu_case({3, 11}, {11}, true, 3)));            // last dim
  EXPECT_TRUE(matches_portable(prelu_case({17}, {17}, true, 6)));
  EXPECT_TRUE(matches_portable(prelu_case({1, 6, 5, 7}, {6, 1, 1}, true, 1)));     // channels
  EXPECT_TRUE(matches_portable(prelu_case({2, 6, 5, 7}, {1, 6, 1, 1}, true, 2)));  // channels
  EXPECT_TRUE(matches_portable(prelu_case({1, 6, 5, 7}, {7}, true, 3)));           // innermost
  EXPECT_TRUE(matches_portable(prelu_case({1, 6, 5, 7}, {1}, true, 4)));           // scalar
  EXPECT_TRUE(matches_portable(prelu_case({3, 10}, {10}, true, 5)));               // 2-D
}

// Not every backend implements every family (the OpenCL backend has no Max/Min nor PRelu here).
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Binary);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Unary);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(PRelu);

}  // namespace tessera::backend_testing
