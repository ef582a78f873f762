// Multi-op delegates: layouts stay NHWC inside, conversions only at the boundary or where an op
// needs another memory order; outputs, repeated outputs, pass-through values, symbolic dims.
#include <gtest/gtest.h>

#include "harness.h"

namespace tessera::xnnpack::testing {
namespace {

using Op = fb::OpType;

int conv(GraphCase& c, int x, int64_t cin, int64_t cout, int64_t h, int64_t w, ir::Dim n = 1,
         int64_t group = 1, fb::Activation act = fb::Activation::None) {
  int wt = c.constant({cout, cin / group, 3, 3});
  int b = c.constant({cout});
  int y = c.tensor({n, cout, h, w});
  ir::Node& node = c.node(Op::Conv, {x, wt, b}, y);
  node.attrs = {ir::Attr::make_ints("kernel_shape", {3, 3}),
                ir::Attr::make_ints("pads", {1, 1, 1, 1}), ir::Attr::make_int("group", group)};
  node.activation = act;
  return y;
}

// Runs `c` through both paths and returns the delegate's summary.
DelegateSummary expect_matches(const GraphCase& c) {
  std::vector<Floats> inputs = random_inputs(c, 42);
  Result<std::vector<Floats>> want = run_portable(c, inputs);
  EXPECT_TRUE(want.ok()) << want.status().message();
  Session s;
  Status st = s.init(c);
  EXPECT_TRUE(st.is_ok()) << st.message();
  if (!st.is_ok() || !want.ok()) return {};
  std::vector<Floats> got;
  st = s.run(inputs, &got);
  EXPECT_TRUE(st.is_ok()) << st.message();
  EXPECT_TRUE(close(got, *want));
  return s.summary();
}

// Executes of `c` with inputs a, b, then a again: the two of a give the same result and b's
// another, so no buffer relies on what an earlier execute left in the shared arena.
void expect_repeatable(const GraphCase& c) {
  Session session;
  ASSERT_TRUE(session.init(c).is_ok());
  const std::vector<Floats> a = random_inputs(c, 1), b = random_inputs(c, 2);
  std::vector<Floats> first, other, again;
  ASSERT_TRUE(session.run(a, &first).is_ok());
  ASSERT_TRUE(session.run(b, &other).is_ok());
  ASSERT_TRUE(session.run(a, &again).is_ok());
  EXPECT_EQ(first, again);
  EXPECT_NE(first, other);
}

TEST(XnnpackLayout, ConvNetStaysChannelsLast) {
  GraphCase c;
  int x = c.input({1, 3, 16, 16});
  int a = conv(c, x, 3, 8, 16, 16, 1, 1, fb::Activation::Relu);
  int p = c.tensor({1, 8, 8, 8});
  c.node(Op::MaxPool, {a}, p).attrs = {ir::Attr::make_ints("kernel_shape", {2, 2}),
                                       ir::Attr::make_ints("strides", {2, 2})};
  int d = conv(c, p, 8, 8, 8, 8, 1, 8);
  int s = c.tensor({1, 8, 8, 8});
  c.node(Op::Add, {d, p}, s).activation = fb::Activation::Relu;  // residual
  int hs = c.tensor({1, 8, 8, 8});
  c.node(Op::HardSwish, {s}, hs);
  int g = c.tensor({1, 8, 1, 1});
  c.node(Op::GlobalAveragePool, {hs}, g);
  int f = c.tensor({1, 8});
  c.node(Op::Flatten, {g}, f).attrs = {ir::Attr::make_int("axis", 1)};
  int w = c.constant({10, 8});
  int b = c.constant({10});
  int logits = c.tensor({1, 10});
  c.node(Op::Gemm, {f, w, b}, logits).attrs = {ir::Attr::make_int("transB", 1)};
  int prob = c.tensor({1, 10});
  c.node(Op::Softmax, {logits}, prob);
  c.output(prob);
  DelegateSummary s1 = expect_matches(c);
  EXPECT_EQ(s1.runtimes, 1u);
  EXPECT_EQ(s1.conversions, 0u);
}

TEST(XnnpackLayout, FlattenOfSpatialMapSplitsOnce) {
  GraphCase c;
  int x = c.input({2, 3, 6, 5});
  int a = conv(c, x, 3, 4, 6, 5, 2);
  int f = c.tensor({2, 120});
  c.node(Op::Flatten, {a}, f).attrs = {ir::Attr::make_int("axis", 1)};
  int w = c.constant({120, 7});
  int y = c.tensor({2, 7});
  c.node(Op::MatMul, {f, w}, y);
  c.output(y);
  DelegateSummary s = expect_matches(c);
  EXPECT_EQ(s.runtimes, 2u);
  EXPECT_EQ(s.conversions, 1u);
}

TEST(XnnpackLayout, InputReadInBothLayouts) {
  GraphCase c;
  int x = c.input({1, 2, 4, 5});
  int a = conv(c, x, 2, 3, 4, 5);
  int r = c.tensor({1, 40});
  c.node(Op::Reshape, {x}, r);
  c.output(a);
  c.output(r);
  DelegateSummary s = expect_matches(c);
  EXPECT_EQ(s.runtimes, 1u);
  EXPECT_EQ(s.conversions, 1u);  // the reshape reads the input converted back to NCHW
}

TEST(XnnpackLayout, InnerSoftmaxSplitsTwice) {
  GraphCase c;
  int x = c.input({1, 3, 5, 6});
  int a = conv(c, x, 3, 4, 5, 6);
  int s = c.tensor({1, 4, 5, 6});
  c.node(Op::Softmax, {a}, s);  // over W: needs NCHW
  int b = conv(c, s, 4, 2, 5, 6);
  c.output(b);
  DelegateSummary sum = expect_matches(c);
  EXPECT_EQ(sum.runtimes, 3u);
  EXPECT_EQ(sum.conversions, 2u);
}

TEST(XnnpackLayout, IntermediateOutputsAndRepeats) {
  GraphCase c;
  int x = c.input({1, 3, 7, 7});
  int a = conv(c, x, 3, 4, 7, 7);
  int b = conv(c, a, 4, 4, 7, 7);
  int r = c.tensor({1, 4, 7, 7});
  c.node(Op::Relu, {b}, r);
  c.output(a);  // also consumed inside
  c.output(r);
  c.output(r);  // twice
  c.output(x);  // pass-through input
  expect_matches(c);
}

TEST(XnnpackLayout, FreeViewsForUnitSpatialDims) {
  // [N, C, 1, 1] is the same bytes in NCHW and NHWC: squeeze/unsqueeze around 1x1 convs (a
  // squeeze-excitation block) needs no conversion.
  GraphCase c;
  int x = c.input({1, 6, 5, 5});
  int g = c.tensor({1, 6, 1, 1});
  c.node(Op::GlobalAveragePool, {x}, g);
  int sq = c.tensor({1, 6});
  c.node(Op::Squeeze, {g}, sq).attrs = {ir::Attr::make_ints("axes", {2, 3})};
  int w1 = c.constant({6, 3});
  int h = c.tensor({1, 3});
  c.node(Op::MatMul, {sq, w1}, h).activation = fb::Activation::Relu;
  int w2 = c.constant({3, 6});
  int e = c.tensor({1, 6});
  c.node(Op::MatMul, {h, w2}, e);
  int us = c.tensor({1, 6, 1, 1});
  c.node(Op::Unsqueeze, {e}, us).attrs = {ir::Attr::make_ints("axes", {2, 3})};
  int hsig = c.tensor({1, 6, 1, 1});
  c.node(Op::HardSigmoid, {us}, hsig);
  int y = c.tensor({1, 6, 5, 5});
  c.node(Op::Mul, {x, hsig}, y);
  c.output(y);
  DelegateSummary s = expect_matches(c);
  EXPECT_EQ(s.runtimes, 1u);
  EXPECT_EQ(s.conversions, 0u);
}

TEST(XnnpackLayout, FireModuleConcatStaysChannelsLast) {
  // SqueezeNet's fire module: squeeze 1x1, expand 1x1 and 3x3, concat on channels, then a conv.
  GraphCase c;
  int x = c.input({2, 6, 7, 7});
  int a = conv(c, x, 6, 4, 7, 7, 2, 1, fb::Activation::Relu);
  int e1w = c.constant({5, 4, 1, 1});
  int e1 = c.tensor({2, 5, 7, 7});
  c.node(Op::Conv, {a, e1w}, e1).activation = fb::Activation::Relu;
  int e3 = conv(c, a, 4, 3, 7, 7, 2, 1, fb::Activation::Relu);
  int cat = c.tensor({2, 8, 7, 7});
  c.node(Op::Concat, {e1, e3}, cat).attrs = {ir::Attr::make_int("axis", 1)};
  int y = conv(c, cat, 8, 4, 7, 7, 2);
  c.output(y);
  c.output(cat);
  DelegateSummary s = expect_matches(c);
  EXPECT_EQ(s.concats, 1u);
  EXPECT_EQ(s.runtimes, 2u);
  EXPECT_EQ(s.conversions, 0u);
}

TEST(XnnpackLayout, ConcatOfInputAndConvOutput) {
  GraphCase c;
  int x = c.input({1, 3, 5, 5});
  int a = conv(c, x, 3, 2, 5, 5);
  int cat = c.tensor({1, 5, 5, 5});
  c.node(Op::Concat, {x, a}, cat).attrs = {ir::Attr::make_int("axis", 1)};
  int r = c.tensor({1, 5, 5, 5});
  c.node(Op::Relu, {cat}, r);
  c.output(r);
  DelegateSummary s = expect_matches(c);
  EXPECT_EQ(s.concats, 1u);
  EXPECT_EQ(s.conversions, 0u);
}

TEST(XnnpackLayout, DenseBlockBuffersShareOneArena) {
  // DenseNet's dense block: each layer's 3x3 Conv reads the concatenation of everything before
  // it, and its output joins the next concatenation. Each Concat is a step between runtimes with
  // a buffer of its own; a buffer no later step reads leaves its memory to the next ones.
  GraphCase c;
  int64_t channels = 4;
  int cat = c.input({1, channels, 6, 6});
  for (int layer = 0; layer < 5; ++layer) {
    const int r = c.tensor({1, channels, 6, 6});
    c.node(Op::Relu, {cat}, r);
    const int grown = conv(c, r, channels, 3, 6, 6);
    const int next = c.tensor({1, channels + 3, 6, 6});
    c.node(Op::Concat, {cat, grown}, next).attrs = {ir::Attr::make_int("axis", 1)};
    cat = next;
    channels += 3;
  }
  const int y = conv(c, cat, channels, 2, 6, 6);
  c.output(y);
  const DelegateSummary s = expect_matches(c);
  EXPECT_EQ(s.concats, 5u);
  EXPECT_GT(s.buffer_bytes, 0u);
  EXPECT_LT(s.buffer_bytes, s.unshared_buffer_bytes)
      << "arena " << s.buffer_bytes << " bytes, unshared " << s.unshared_buffer_bytes;

  expect_repeatable(c);
}

TEST(XnnpackLayout, ValuesInsideARuntimeShareTheArenaNodeByNode) {
  // Ten 3x3 Convs in one runtime, the fifth's output also read by a residual Add three Convs on:
  // every value is in the delegate's arena (not XNNPACK's workspace, which gives each its own
  // memory), and a value's memory is free again after the last node reading it, so the arena
  // holds about three values' worth, not ten.
  GraphCase c;
  const int64_t ch = 8, hw = 12;
  int v = c.input({1, ch, hw, hw});
  int kept = -1;
  for (int layer = 0; layer < 10; ++layer) {
    v = conv(c, v, ch, ch, hw, hw, 1, 1, fb::Activation::Relu);
    if (layer == 4) kept = v;
    if (layer == 7) {
      const int sum = c.tensor({1, ch, hw, hw});
      c.node(Op::Add, {v, kept}, sum);
      v = sum;
    }
  }
  c.output(v);
  const DelegateSummary s = expect_matches(c);
  EXPECT_EQ(s.runtimes, 1u);
  EXPECT_EQ(s.conversions, 0u);
  const size_t value_bytes = static_cast<size_t>(ch * hw * hw) * sizeof(float);
  EXPECT_GE(s.unshared_buffer_bytes, 10 * value_bytes);
  EXPECT_GT(s.buffer_bytes, 0u);
  EXPECT_LE(s.buffer_bytes, 4 * (value_bytes + 64))
      << "arena " << s.buffer_bytes << " bytes, unshared " << s.unshared_buffer_bytes;

  expect_repeatable(c);
}

TEST(XnnpackLayout, SymbolicBatch) {
  GraphCase c;
  const int batch = c.symbol("batch", 4, 3);
  const ir::Dim n = ir::Dim::symbol(batch, 4);
  int x = c.input({n, 3, 6, 6});
  int a = conv(c, x, 3, 5, 6, 6, n, 1, fb::Activation::Relu);
  c.output(a);
  expect_matches(c);
}

}  // namespace
}  // namespace tessera::xnnpack::testing
