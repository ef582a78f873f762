// Conformance: Pad, Reshape/Flatten/Squeeze/Unsqueeze, Softmax, Resize (bilinear).
#include <gtest/gtest.h>

#include "harness.h"

namespace tessera::xnnpack::testing {
namespace {

using Op = fb::OpType;

TEST(XnnpackShape, PadConstant) {
  GraphCase c = GraphCase::single(Op::Pad, {{1, 3, 5, 4}}, {1, 3, 8, 7});
  c.graph.nodes[0].attrs = {ir::Attr::make_ints("pads", {0, 0, 1, 2, 0, 0, 2, 1}),
                            ir::Attr::make_float("value", 0.5f)};
  EXPECT_TRUE(matches_portable(c));
  GraphCase d = GraphCase::single(Op::Pad, {{2, 3, 5, 4}}, {2, 6, 5, 5});
  d.graph.nodes[0].attrs = {ir::Attr::make_ints("pads", {0, 1, 0, 0, 0, 2, 0, 1})};
  EXPECT_TRUE(matches_portable(d));
  GraphCase e = GraphCase::single(Op::Pad, {{3, 7}}, {6, 8});
  e.graph.nodes[0].attrs = {ir::Attr::make_ints("pads", {1, 0, 2, 1})};
  EXPECT_TRUE(matches_portable(e));
}

TEST(XnnpackShape, ReshapeFamily) {
  EXPECT_TRUE(matches_portable(GraphCase::single(Op::Reshape, {{2, 3, 4, 5}}, {6, 20})));
  GraphCase f = GraphCase::single(Op::Flatten, {{2, 3, 4, 5}}, {2, 60});
  f.graph.nodes[0].attrs = {ir::Attr::make_int("axis", 1)};
  EXPECT_TRUE(matches_portable(f));
  GraphCase s = GraphCase::single(Op::Squeeze, {{2, 1, 5, 1}}, {2, 5});
  s.graph.nodes[0].attrs = {ir::Attr::make_ints("axes", {1, 3})};
  EXPECT_TRUE(matches_portable(s));
  GraphCase u = GraphCase::single(Op::Unsqueeze, {{2, 5}}, {2, 1, 5, 1});
  u.graph.nodes[0].attrs = {ir::Attr::make_ints("axes", {1, 3})};
  EXPECT_TRUE(matches_portable(u));
}

TEST(XnnpackShape, Softmax) {
  EXPECT_TRUE(
      matches_portable(GraphCase::single(Op::Softmax, {{3, 1000}}, {3, 1000}), -5.0f, 5.0f));
  GraphCase last = GraphCase::single(Op::Softmax, {{2, 3, 4, 7}}, {2, 3, 4, 7});
  EXPECT_TRUE(matches_portable(last, -5.0f, 5.0f));
  GraphCase channels = GraphCase::single(Op::Softmax, {{2, 5, 3, 4}}, {2, 5, 3, 4});
  channels.graph.nodes[0].attrs = {ir::Attr::make_int("axis", 1)};
  EXPECT_TRUE(matches_portable(channels, -5.0f, 5.0f));
}

GraphCase concat_case(std::vector<std::vector<int64_t>> ins, int64_t axis) {
  std::vector<int64_t> out = ins[0];
  const size_t a = static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(out.size()) : axis);
  out[a] = 0;
  for (auto& d : ins) out[a] += d[a];
  GraphCase c = GraphCase::single(Op::Concat, ins, out);
  c.graph.nodes[0].attrs = {ir::Attr::make_int("axis", axis)};
  return c;
}

TEST(XnnpackShape, ConcatOfInputs) {
  EXPECT_TRUE(matches_portable(concat_case({{1, 3, 4, 5}, {1, 2, 4, 5}}, 1)));
  EXPECT_TRUE(matches_portable(concat_case({{2, 3, 4, 5}, {2, 3, 1, 5}, {2, 3, 2, 5}}, 2)));
  EXPECT_TRUE(matches_portable(concat_case({{2, 3, 4, 5}, {2, 3, 4, 1}}, -1)));
  EXPECT_TRUE(matches_portable(concat_case({{3, 7}, {3, 2}, {3, 1}, {3, 5}}, 1)));
  EXPECT_TRUE(matches_portable(concat_case({{3, 7}, {2, 7}}, 0)));
}

GraphCase resize_case(std::vector<int64_t> in, int64_t oh, int64_t ow, const char* ctm) {
  GraphCase c = GraphCase::single(Op::Resize, {in}, {in[0], in[1], oh, ow});
  c.graph.nodes[0].attrs = {ir::Attr::make_string("mode", "linear"),
                            ir::Attr::make_string("coordinate_transformation_mode", ctm)};
  return c;
}

TEST(XnnpackShape, ResizeBilinear) {
  for (const char* ctm : {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"}) {
    SCOPED_TRACE(ctm);
    EXPECT_TRUE(matches_portable(resize_case({1, 3, 4, 5}, 8, 10, ctm)));
    EXPECT_TRUE(matches_portable(resize_case({2, 2, 7, 6}, 11, 9, ctm)));
    EXPECT_TRUE(matches_portable(resize_case({1, 4, 9, 8}, 5, 3, ctm)));
  }
}

}  // namespace
}  // namespace tessera::xnnpack::testing
