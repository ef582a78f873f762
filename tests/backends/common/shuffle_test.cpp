// Conformance (conformance.h): ChannelShuffle, the op the compiler makes of ShuffleNet's
// Reshape -> Transpose(0, 2, 1, 3, 4) -> Reshape. Output channel j*g + i is input channel
// i*(C/g) + j; the portable kernel is the reference, and the compiler tests check it against the
// unfused graph.
#include <vector>

#include "tests/backends/common/conformance.h"

namespace tessera::backend_testing {
namespace {

using Op = fb::OpType;

GraphCase shuffle_case(std::vector<int64_t> dims, int64_t group) {
  GraphCase c = GraphCase::single(Op::ChannelShuffle, {dims}, dims);
  c.graph.nodes[0].attrs = {ir::Attr::make_int("group", group)};
  return c;
}

TEST_P(ChannelShuffle, Groups) {
  EXPECT_CONFORMS(shuffle_case({2, 8, 3, 5}, 2));
  EXPECT_CONFORMS(shuffle_case({1, 12, 4, 4}, 3));
  EXPECT_CONFORMS(shuffle_case({1, 116, 7, 7}, 2));  // ShuffleNetV2 x1.0's first stage
  EXPECT_CONFORMS(shuffle_case({1, 6, 2, 3}, 1));    // one group: a copy
  EXPECT_CONFORMS(shuffle_case({1, 6, 2, 3}, 6));    // one channel per group: a copy
}

TEST_P(ChannelShuffle, OtherRanks) {
  EXPECT_CONFORMS(shuffle_case({3, 10}, 2));
  EXPECT_CONFORMS(shuffle_case({2, 12, 7}, 4));
}

// Between two convolutions, as in ShuffleNet: a backend that keeps convolution outputs in a
// blocked or channels-last layout shuffles that layout (32 channels: two 16-wide blocks).
TEST_P(ChannelShuffle, BetweenConvolutions) {
  GraphCase c;
  const int x = c.input({1, 16, 6, 6});
  const int a = c.tensor({1, 32, 6, 6});
  ir::Node& conv = c.node(Op::Conv, {x, c.constant({32, 16, 1, 1}), c.constant({32})}, a);
  conv.activation = fb::Activation::Relu;
  const int s = c.tensor({1, 32, 6, 6});
  c.node(Op::ChannelShuffle, {a}, s).attrs = {ir::Attr::make_int("group", 2)};
  const int y = c.tensor({1, 8, 6, 6});
  c.node(Op::Conv, {s, c.constant({8, 32, 1, 1})}, y);
  c.output(y);
  EXPECT_CONFORMS(c);
}

// After a Concat along the channels, as in ShuffleNet (a backend may write each part straight
// into its shuffled channels): parts from a convolution and from a graph input; as many parts as
// groups, and a group count that differs from the number of parts.
GraphCase concat_shuffle_case(int parts, int64_t group, int64_t batch) {
  GraphCase c;
  const int64_t per = 8;
  std::vector<int> ins;
  for (int i = 0; i < parts; ++i) {
    if (i == 0) {
      const int x = c.input({batch, 4, 5, 5});
      const int a = c.tensor({batch, per, 5, 5});
      c.node(Op::Conv, {x, c.constant({per, 4, 1, 1}), c.constant({per})}, a);
      ins.push_back(a);
    } else {
      ins.push_back(c.input({batch, per, 5, 5}));
    }
  }
  const int cat = c.tensor({batch, per * parts, 5, 5});
  c.node(Op::Concat, ins, cat).attrs = {ir::Attr::make_int("axis", 1)};
  const int y = c.tensor({batch, per * parts, 5, 5});
  c.node(Op::ChannelShuffle, {cat}, y).attrs = {ir::Attr::make_int("group", group)};
  c.output(y);
  return c;
}

TEST_P(ChannelShuffle, AfterConcat) {
  EXPECT_CONFORMS(concat_shuffle_case(2, 2, 1));
  EXPECT_CONFORMS(concat_shuffle_case(2, 2, 3));
  EXPECT_CONFORMS(concat_shuffle_case(3, 3, 1));
  EXPECT_CONFORMS(concat_shuffle_case(2, 4, 1));
  // The Concat's output is also a graph output: both are built.
  GraphCase both = concat_shuffle_case(2, 2, 1);
  both.output(both.graph.nodes[1].outputs[0]);
  EXPECT_CONFORMS(both);
}

// A symbolic batch, run at a size below its bound.
TEST_P(ChannelShuffle, SymbolicBatch) {
  GraphCase c;
  const int n = c.symbol("batch", 4, 3);
  const std::vector<ir::Dim> dims = {ir::Dim::symbol(n, 4), 24, 3, 3};
  const int x = c.input(dims);
  const int y = c.tensor(dims);
  c.node(Op::ChannelShuffle, {x}, y).attrs = {ir::Attr::make_int("group", 2)};
  c.output(y);
  EXPECT_CONFORMS(c);
}

}  // namespace
}  // namespace tessera::backend_testing
