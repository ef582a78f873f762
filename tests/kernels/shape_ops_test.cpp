// Data movement: Identity, Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split,
// Slice, Gather, Pad, across dtypes.
#include <cmath>
#include <numeric>

#include "kernel_test_util.h"

namespace tessera::kernel_test {
namespace {

std::vector<float> iota(int64_t n, float start = 0) {
  std::vector<float> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return v;
}

std::vector<int64_t> iota64(int64_t n, int64_t start = 0) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return v;
}

// ---- Identity and the reshape family -----------------------------------------------------------

TEST(Identity, CopiesEveryDtype) {
  TestTensor x = TestTensor::i64({2, 2}, {1, -2, 3, 1 << 30});
  TestTensor y(ScalarType::Int64, {2, 2});
  NodeSpec spec(OpType::Identity);
  ASSERT_TRUE(run_op(spec.node(), {&x}, {&y}).is_ok());
  EXPECT_EQ(y.values<int64_t>(), x.values<int64_t>());
}

TEST(Reshape, UsesOutputShape) {
  TestTensor x = TestTensor::f32({2, 3, 4}, iota(24));
  TestTensor y(ScalarType::Float32, {4, 6});
  NodeSpec spec(OpType::Reshape);
  ASSERT_TRUE(run_op(spec.node(), {&x}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), iota(24));
}

TEST(Reshape, ElementCountMustMatch) {
  TestTensor x = TestTensor::f32({2, 3}, iota(6));
  TestTensor y(ScalarType::Float32, {4, 2});
  NodeSpec spec(OpType::Reshape, "r");
  expect_error(prepare_op(spec.node(), {&x}, {&y}), Error::ShapeMismatch,
               "output shape [4, 2] has 8 elements, input [2, 3] has 6");
}

TEST(Flatten, Axes) {
  TestTensor x = TestTensor::f32({2, 3, 4}, iota(24));
  struct Case {
    int64_t axis;
    std::vector<int64_t> out;
  };
  for (const Case& c : {Case{1, {2, 12}}, Case{0, {1, 24}}, Case{3, {24, 1}}, Case{-1, {6, 4}},
                        Case{2, {6, 4}}}) {
    TestTensor y(ScalarType::Float32, c.out);
    NodeSpec spec(OpType::Flatten);
    spec.attr(attr_int("axis", c.axis));
    ASSERT_TRUE(run_op(spec.node(), {&x}, {&y}).is_ok()) << "axis " << c.axis;
    EXPECT_EQ(y.floats(), iota(24));
  }
  TestTensor wrong(ScalarType::Float32, {4, 6});
  NodeSpec dflt(OpType::Flatten, "f");
  expect_error(prepare_op(dflt.node(), {&x}, {&wrong}), Error::ShapeMismatch,
               "output shape [4, 6] does not match computed [2, 12]");
}

TEST(Squeeze, WithAndWithoutAxes) {
  TestTensor x = TestTensor::f32({1, 3, 1, 2}, iota(6));
  TestTensor y(ScalarType::Float32, {3, 1, 2});
  NodeSpec spec(OpType::Squeeze);
  spec.attr(attr_ints("axes", {0}));
  ASSERT_TRUE(run_op(spec.node(), {&x}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), iota(6));
  TestTensor z(ScalarType::Float32, {3, 2});
  NodeSpec neg(OpType::Squeeze);
  neg.attr(attr_ints("axes", {-2, 0}));
  ASSERT_TRUE(run_op(neg.node(), {&x}, {&z}).is_ok());
  NodeSpec none(OpType::Squeeze);
  ASSERT_TRUE(run_op(none.node(), {&x}, {&z}).is_ok());
  NodeSpec bad(OpType::Squeeze, "sq");
  bad.attr(attr_ints("axes", {1}));
  expect_error(prepare_op(bad.node(), {&x}, {&y}), Error::InvalidProgram,
               "cannot squeeze dim 1 of size 3");
}

TEST(Unsqueeze, Axes) {
  TestTensor x = TestTensor::f32({3, 2}, iota(6));
  TestTensor y(ScalarType::Float32, {1, 3, 1, 2});
  NodeSpec spec(OpType::Unsqueeze);
  spec.attr(attr_ints("axes", {0, -2}));
  ASSERT_TRUE(run_op(spec.node(), {&x}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), iota(6));
  TestTensor wrong(ScalarType::Float32, {3, 1, 1, 2});
  NodeSpec w(OpType::Unsqueeze, "u");
  w.attr(attr_ints("axes", {0, -2}));
  expect_error(prepare_op(w.node(), {&x}, {&wrong}), Error::ShapeMismatch,
               "does not match computed [1, 3, 1, 2]");
}

// ---- Transpose ---------------------------------------------------------------------------------

std::vector<int64_t> transpose_reference(const std::vector<int64_t>& x,
                                         const std::vector<int64_t>& sizes,
                                         const std::vector<int64_t>& perm) {
  const size_t r = sizes.size();
  std::vector<int64_t> out_sizes(r), in_strides(r), ref;
  int64_t s = 1;
  for (size_t d = r; d-- > 0;) {
    in_strides[d] = s;
    s *= sizes[d];
  }
  for (size_t d = 0; d < r; ++d) out_sizes[d] = sizes[perm[d]];
  for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) {
    int64_t rem = i, off = 0;
    for (size_t d = r; d-- > 0;) {
      off += (rem % out_sizes[d]) * in_strides[perm[d]];
      rem /= out_sizes[d];
    }
    ref.push_back(x[off]);
  }
  return ref;
}

TEST(Transpose, PermutationsAndDtypes) {
  struct Case {
    std::vector<int64_t> sizes, perm;
  };
  const Case cases[] = {{{2, 3}, {1, 0}},          {{2, 3, 4}, {2, 0, 1}},
                        {{2, 3, 4, 5}, {0, 2, 3, 1}}, {{3, 1, 4, 2}, {3, 1, 0, 2}},
                        {{5, 7, 3}, {0, 1, 2}},    {{2, 2, 2, 2, 2}, {4, 3, 2, 1, 0}}};
  for (const Case& c : cases) {
    int64_t n = 1;
    for (int64_t d : c.sizes) n *= d;
    const std::vector<int64_t> data = iota64(n, 100);
    const std::vector<int64_t> ref = transpose_reference(data, c.sizes, c.perm);
    std::vector<int64_t> out_sizes;
    for (int64_t p : c.perm) out_sizes.push_back(c.sizes[p]);
    for (ScalarType t : {ScalarType::Int64, ScalarType::Float32, ScalarType::Float16,
                         ScalarType::UInt8}) {
      TestTensor x(t, c.sizes);
      for (int64_t i = 0; i < n; ++i) {
        const int64_t v = data[i];
        switch (element_size(t)) {
          case 8: static_cast<int64_t*>(x.data())[i] = v; break;
          case 4: static_cast<int32_t*>(x.data())[i] = static_cast<int32_t>(v); break;
          case 2: static_cast<int16_t*>(x.data())[i] = static_cast<int16_t>(v); break;
          default: static_cast<uint8_t*>(x.data())[i] = static_cast<uint8_t>(v); break;
        }
      }
      TestTensor y(t, out_sizes);
      NodeSpec spec(OpType::Transpose);
      spec.attr(attr_ints("perm", c.perm));
      ASSERT_TRUE(run_op(spec.node(), {&x}, {&y}).is_ok());
      for (int64_t i = 0; i < n; ++i) {
        int64_t got;
        switch (element_size(t)) {
          case 8: got = static_cast<int64_t*>(y.data())[i]; break;
          case 4: got = static_cast<int32_t*>(y.data())[i]; break;
          case 2: got = static_cast<int16_t*>(y.data())[i]; break;
          default: got = static_cast<uint8_t*>(y.data())[i]; break;
        }
        const int64_t want = element_size(t) == 1 ? static_cast<uint8_t>(ref[i]) : ref[i];
        ASSERT_EQ(got, want) << "element " << i << " dtype " << scalar_type_name(t);
      }
    }
  }
}

TEST(Transpose, DefaultReversesDims) {
  TestTensor x = TestTensor::f32({2, 3}, iota(6));
  TestTensor y(ScalarType::Float32, {3, 2});
  NodeSpec spec(OpType::Transpose);
  ASSERT_TRUE(run_op(spec.node(), {&x}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

// ---- ChannelShuffle ----------------------------------------------------------------------------

// [1, 6, 1, 2] with group 2: channels 0 1 2 | 3 4 5 come out as 0 3 1 4 2 5.
TEST(ChannelShuffle, InterleavesTheGroups) {
  TestTensor x = TestTensor::f32({1, 6, 1, 2}, iota(12));
  TestTensor y(ScalarType::Float32, {1, 6, 1, 2});
  NodeSpec spec(OpType::ChannelShuffle);
  spec.attr(attr_int("group", 2));
  ASSERT_TRUE(run_op(spec.node(), {&x}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11}));
  // Group 3 on two batches of [6, 1]: 0 2 4 1 3 5 in each.
  TestTensor x2 = TestTensor::f32({2, 6}, iota(12));
  TestTensor y2(ScalarType::Float32, {2, 6});
  NodeSpec three(OpType::ChannelShuffle);
  three.attr(attr_int("group", 3));
  ASSERT_TRUE(run_op(three.node(), {&x2}, {&y2}).is_ok());
  EXPECT_EQ(y2.floats(), (std::vector<float>{0, 2, 4, 1, 3, 5, 6, 8, 10, 7, 9, 11}));
}

TEST(ChannelShuffle, BadGroupsAreErrors) {
  TestTensor x = TestTensor::f32({1, 6, 1, 2}, iota(12));
  TestTensor y(ScalarType::Float32, {1, 6, 1, 2});
  NodeSpec missing(OpType::ChannelShuffle, "s");
  expect_error(prepare_op(missing.node(), {&x}, {&y}), Error::InvalidProgram, "group");
  for (int64_t g : {0, -2, 4}) {
    NodeSpec spec(OpType::ChannelShuffle, "s");
    spec.attr(attr_int("group", g));
    expect_error(prepare_op(spec.node(), {&x}, {&y}), Error::InvalidProgram,
                 "does not divide the 6 channels");
  }
  TestTensor v = TestTensor::f32({6}, iota(6));
  TestTensor w(ScalarType::Float32, {6});
  NodeSpec rank1(OpType::ChannelShuffle, "s");
  rank1.attr(attr_int("group", 2));
  expect_error(prepare_op(rank1.node(), {&v}, {&w}), Error::InvalidProgram, "rank 1");
  TestTensor wrong(ScalarType::Float32, {1, 6, 2, 1});
  NodeSpec shape(OpType::ChannelShuffle, "s");
  shape.attr(attr_int("group", 2));
  expect_error(prepare_op(shape.node(), {&x}, {&wrong}), Error::ShapeMismatch, "output shape");
}

// ---- Concat and Split --------------------------------------------------------------------------

TEST(Concat, Axes) {
  TestTensor a = TestTensor::f32({2, 2}, {1, 2, 3, 4});
  TestTensor b = TestTensor::f32({2, 1}, {5, 6});
  TestTensor c = TestTensor::f32({2, 3}, {7, 8, 9, 10, 11, 12});
  TestTensor y(ScalarType::Float32, {2, 6});
  NodeSpec spec(OpType::Concat);
  spec.attr(attr_int("axis", -1));
  ASSERT_TRUE(run_op(spec.node(), {&a, &b, &c}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{1, 2, 5, 7, 8, 9, 3, 4, 6, 10, 11, 12}));
  TestTensor d = TestTensor::f32({1, 2}, {13, 14});
  TestTensor z(ScalarType::Float32, {3, 2});
  NodeSpec rows(OpType::Concat);
  rows.attr(attr_int("axis", 0));
  ASSERT_TRUE(run_op(rows.node(), {&a, &d}, {&z}).is_ok());
  EXPECT_EQ(z.floats(), (std::vector<float>{1, 2, 3, 4, 13, 14}));
}

TEST(Concat, MiddleAxisInt32WithEmptyInput) {
  TestTensor a = TestTensor::i32({2, 1, 2}, {1, 2, 3, 4});
  TestTensor e(ScalarType::Int32, {2, 0, 2});
  TestTensor b = TestTensor::i32({2, 2, 2}, {5, 6, 7, 8, 9, 10, 11, 12});
  TestTensor y(ScalarType::Int32, {2, 3, 2});
  NodeSpec spec(OpType::Concat);
  spec.attr(attr_int("axis", 1));
  ASSERT_TRUE(run_op(spec.node(), {&a, &e, &b}, {&y}).is_ok());
  EXPECT_EQ(y.values<int32_t>(), (std::vector<int32_t>{1, 2, 5, 6, 7, 8, 3, 4, 9, 10, 11, 12}));
}

TEST(Concat, ShapeMismatch) {
  TestTensor a = TestTensor::f32({2, 2}, iota(4));
  TestTensor b = TestTensor::f32({3, 1}, iota(3));
  TestTensor y(ScalarType::Float32, {2, 3});
  NodeSpec spec(OpType::Concat, "cat");
  spec.attr(attr_int("axis", 1));
  expect_error(prepare_op(spec.node(), {&a, &b}, {&y}), Error::ShapeMismatch,
               "input 1 shape [3, 1] does not match [2, 2] outside axis 1");
}

TEST(Split, UnequalSizesFromOutputs) {
  TestTensor x = TestTensor::f32({2, 5}, iota(10));
  TestTensor a(ScalarType::Float32, {2, 2}), b(ScalarType::Float32, {2, 3});
  NodeSpec spec(OpType::Split);
  spec.attr(attr_int("axis", 1));
  ASSERT_TRUE(run_op(spec.node(), {&x}, {&a, &b}).is_ok());
  EXPECT_EQ(a.floats(), (std::vector<float>{0, 1, 5, 6}));
  EXPECT_EQ(b.floats(), (std::vector<float>{2, 3, 4, 7, 8, 9}));
}

TEST(Split, DefaultAxisSplitAttrAndInt64) {
  TestTensor x = TestTensor::i64({3, 2}, iota64(6));
  TestTensor a(ScalarType::Int64, {1, 2}), b(ScalarType::Int64, {2, 2});
  NodeSpec spec(OpType::Split);
  spec.attr(attr_ints("split", {1, 2}));
  ASSERT_TRUE(run_op(spec.node(), {&x}, {&a, &b}).is_ok());
  EXPECT_EQ(a.values<int64_t>(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(b.values<int64_t>(), (std::vector<int64_t>{2, 3, 4, 5}));
  NodeSpec wrong(OpType::Split, "s");
  wrong.attr(attr_ints("split", {2, 1}));
  expect_error(prepare_op(wrong.node(), {&x}, {&a, &b}), Error::ShapeMismatch,
               "output 0 shape [1, 2] does not match computed [2, 2]");
}

TEST(Split, SplitAttributeValues) {
  TestTensor x = TestTensor::f32({6}, iota(6));
  TestTensor a(ScalarType::Float32, {2}), b(ScalarType::Float32, {4});
  NodeSpec negative(OpType::Split, "s");
  negative.attr(attr_ints("split", {-2, 8}));
  expect_error(prepare_op(negative.node(), {&x}, {&a, &b}), Error::InvalidProgram,
               "'split'[0] is -2, expected 0 to 6");
  NodeSpec sum(OpType::Split, "s");
  sum.attr(attr_ints("split", {2, 3}));
  expect_error(prepare_op(sum.node(), {&x}, {&a, &b}), Error::InvalidProgram,
               "'split' adds up to 5, axis 0 has 6");
}

TEST(Split, SizesMustAddUp) {
  TestTensor x = TestTensor::f32({6}, iota(6));
  TestTensor a(ScalarType::Float32, {2}), b(ScalarType::Float32, {3});
  NodeSpec spec(OpType::Split, "s");
  expect_error(prepare_op(spec.node(), {&x}, {&a, &b}), Error::ShapeMismatch,
               "outputs add up to 5 along axis 0, input has 6");
}

// ---- Slice -------------------------------------------------------------------------------------

struct SliceCase {
  std::vector<int64_t> starts, ends, axes, steps;
  std::vector<int64_t> out_sizes;
  std::vector<float> expected;
};

void check_slice(const TestTensor& x_in, const SliceCase& c) {
  TestTensor x = x_in;
  TestTensor y(ScalarType::Float32, c.out_sizes);
  NodeSpec spec(OpType::Slice, "sl");
  spec.attr(attr_ints("starts", c.starts)).attr(attr_ints("ends", c.ends));
  if (!c.axes.empty()) spec.attr(attr_ints("axes", c.axes));
  if (!c.steps.empty()) spec.attr(attr_ints("steps", c.steps));
  Status st = run_op(spec.node(), {&x}, {&y});
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(y.floats(), c.expected);
}

TEST(Slice, OnnxSemantics) {
  constexpr int64_t kMax = INT64_MAX, kMin = INT64_MIN;
  TestTensor x = TestTensor::f32({3, 4}, iota(12));  // rows 0-3, 4-7, 8-11
  const SliceCase cases[] = {
      {{0, 1}, {2, 3}, {}, {}, {2, 2}, {1, 2, 5, 6}},
      {{1}, {kMax}, {1}, {}, {3, 3}, {1, 2, 3, 5, 6, 7, 9, 10, 11}},
      {{-1}, {kMax}, {0}, {}, {1, 4}, {8, 9, 10, 11}},
      {{0}, {-1}, {-1}, {2}, {3, 2}, {0, 2, 4, 6, 8, 10}},
      {{-1, kMax}, {kMin, kMin}, {0, 1}, {-1, -2}, {3, 2}, {11, 9, 7, 5, 3, 1}},
      {{10}, {20}, {1}, {}, {3, 0}, {}},
      {{2}, {0}, {1}, {-1}, {3, 2}, {2, 1, 6, 5, 10, 9}},
      {{-100}, {100}, {0}, {5}, {1, 4}, {0, 1, 2, 3}},
      {{3}, {-100}, {1}, {kMin}, {3, 1}, {3, 7, 11}},
      {{0}, {4}, {1}, {kMax}, {3, 1}, {0, 4, 8}},
  };
  for (const SliceCase& c : cases) check_slice(x, c);
}

TEST(Slice, ThreeDimensionalInt64) {
  TestTensor x = TestTensor::i64({2, 3, 4}, iota64(24));
  TestTensor y(ScalarType::Int64, {2, 2, 2});
  NodeSpec spec(OpType::Slice);
  spec.attr(attr_ints("starts", {0, 1})).attr(attr_ints("ends", {4, 3}));
  spec.attr(attr_ints("axes", {2, 1})).attr(attr_ints("steps", {2, 1}));
  ASSERT_TRUE(run_op(spec.node(), {&x}, {&y}).is_ok());
  EXPECT_EQ(y.values<int64_t>(), (std::vector<int64_t>{4, 6, 8, 10, 16, 18, 20, 22}));
}

TEST(Slice, ZeroStepIsInvalid) {
  TestTensor x = TestTensor::f32({4}, iota(4));
  TestTensor y(ScalarType::Float32, {4});
  NodeSpec spec(OpType::Slice, "sl");
  spec.attr(attr_ints("starts", {0})).attr(attr_ints("ends", {4})).attr(attr_ints("steps", {0}));
  expect_error(prepare_op(spec.node(), {&x}, {&y}), Error::InvalidProgram, "step for axis 0 is 0");
}

// ---- Gather ------------------------------------------------------------------------------------

TEST(Gather, Axis0Int64Indices) {
  TestTensor x = TestTensor::f32({3, 2}, {1, 2, 3, 4, 5, 6});
  TestTensor idx = TestTensor::i64({2, 2}, {0, 2, -1, 1});
  TestTensor y(ScalarType::Float32, {2, 2, 2});
  NodeSpec spec(OpType::Gather);
  ASSERT_TRUE(run_op(spec.node(), {&x, &idx}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{1, 2, 5, 6, 5, 6, 3, 4}));
}

TEST(Gather, Axis1Int32IndicesInt64Data) {
  TestTensor x = TestTensor::i64({2, 3, 2}, iota64(12));
  TestTensor idx = TestTensor::i32({2}, {2, -3});
  TestTensor y(ScalarType::Int64, {2, 2, 2});
  NodeSpec spec(OpType::Gather);
  spec.attr(attr_int("axis", -2));
  ASSERT_TRUE(run_op(spec.node(), {&x, &idx}, {&y}).is_ok());
  EXPECT_EQ(y.values<int64_t>(), (std::vector<int64_t>{4, 5, 0, 1, 10, 11, 6, 7}));
}

TEST(Gather, ScalarIndexDropsAxis) {
  TestTensor x = TestTensor::f32({2, 3}, iota(6));
  TestTensor idx = TestTensor::i64({}, {1});
  TestTensor y(ScalarType::Float32, {2});
  NodeSpec spec(OpType::Gather);
  spec.attr(attr_int("axis", 1));
  ASSERT_TRUE(run_op(spec.node(), {&x, &idx}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{1, 4}));
}

TEST(Gather, OutOfRangeIndexFailsAtRun) {
  TestTensor x = TestTensor::f32({3, 2}, iota(6));
  TestTensor idx = TestTensor::i64({2}, {1, 3});
  TestTensor y(ScalarType::Float32, {2, 2});
  NodeSpec spec(OpType::Gather, "embed");
  EXPECT_TRUE(prepare_op(spec.node(), {&x, &idx}, {&y}).is_ok());
  expect_error(run_op(spec.node(), {&x, &idx}, {&y}), Error::InvalidArgument,
               "Gather node 'embed': index 3 is out of range for axis 0 of size 3");
  TestTensor neg = TestTensor::i64({1}, {-4});
  TestTensor y1(ScalarType::Float32, {1, 2});
  expect_error(run_op(spec.node(), {&x, &neg}, {&y1}), Error::InvalidArgument, "index -4");
}

// ---- Pad ---------------------------------------------------------------------------------------

Status pad(TestTensor& x, TestTensor& y, std::vector<int64_t> pads, const char* mode,
           float value = 0, std::vector<int64_t> axes = {}) {
  NodeSpec spec(OpType::Pad, "pad");
  spec.attr(attr_ints("pads", pads)).attr(attr_string("mode", mode));
  if (value != 0) spec.attr(attr_float("value", value));
  if (!axes.empty()) spec.attr(attr_ints("axes", axes));
  return run_op(spec.node(), {&x}, {&y});
}

TEST(Pad, Constant) {
  TestTensor x = TestTensor::f32({2, 2}, {1, 2, 3, 4});
  TestTensor y(ScalarType::Float32, {3, 5});
  ASSERT_TRUE(pad(x, y, {1, 2, 0, 1}, "constant", 9).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{9, 9, 9, 9, 9, 9, 9, 1, 2, 9, 9, 9, 3, 4, 9}));
}

TEST(Pad, Reflect) {
  TestTensor x = TestTensor::f32({2, 3}, {1, 2, 3, 4, 5, 6});
  TestTensor y(ScalarType::Float32, {4, 7});
  ASSERT_TRUE(pad(x, y, {1, 2, 1, 2}, "reflect").is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{6, 5, 4, 5, 6, 5, 4,  //
                                            3, 2, 1, 2, 3, 2, 1,  //
                                            6, 5, 4, 5, 6, 5, 4,  //
                                            3, 2, 1, 2, 3, 2, 1}));
}

TEST(Pad, Edge) {
  TestTensor x = TestTensor::f32({2, 2}, {1, 2, 3, 4});
  TestTensor y(ScalarType::Float32, {3, 5});
  ASSERT_TRUE(pad(x, y, {0, 2, 1, 1}, "edge").is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{1, 1, 1, 2, 2, 3, 3, 3, 4, 4, 3, 3, 3, 4, 4}));
}

TEST(Pad, NegativePadsCrop) {
  TestTensor x = TestTensor::f32({2, 4}, iota(8));
  TestTensor y(ScalarType::Float32, {2, 3});
  ASSERT_TRUE(pad(x, y, {0, -1, 0, 0}, "constant").is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{1, 2, 3, 5, 6, 7}));
  TestTensor z(ScalarType::Float32, {2, 4});
  ASSERT_TRUE(pad(x, z, {0, -2, 0, 2}, "constant", 7).is_ok());
  EXPECT_EQ(z.floats(), (std::vector<float>{2, 3, 7, 7, 6, 7, 7, 7}));
}

TEST(Pad, Int64ConstantAndAxes) {
  TestTensor x = TestTensor::i64({2, 2}, {1, 2, 3, 4});
  TestTensor y(ScalarType::Int64, {2, 4});
  ASSERT_TRUE(pad(x, y, {1, 1}, "constant", -5, {-1}).is_ok());
  EXPECT_EQ(y.values<int64_t>(), (std::vector<int64_t>{-5, 1, 2, -5, -5, 3, 4, -5}));
}

TEST(Pad, NCHWReflectInnerDims) {
  TestTensor x = TestTensor::f32({1, 2, 2, 2}, iota(8));
  TestTensor y(ScalarType::Float32, {1, 2, 4, 3});
  ASSERT_TRUE(pad(x, y, {0, 0, 1, 0, 0, 0, 1, 1}, "reflect").is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{2, 3, 2, 0, 1, 0, 2, 3, 2, 0, 1, 0,  //
                                            6, 7, 6, 4, 5, 4, 6, 7, 6, 4, 5, 4}));
}

TEST(Pad, Float16AndUInt8Constant) {
  TestTensor h(ScalarType::Float16, {2});
  static_cast<uint16_t*>(h.data())[0] = 0x3c00;  // 1.0
  static_cast<uint16_t*>(h.data())[1] = 0x4000;  // 2.0
  TestTensor hy(ScalarType::Float16, {3});
  ASSERT_TRUE(pad(h, hy, {0, 1}, "constant", -2.0f).is_ok());
  EXPECT_EQ(hy.values<uint16_t>(), (std::vector<uint16_t>{0x3c00, 0x4000, 0xc000}));
  TestTensor u(ScalarType::UInt8, {1});
  static_cast<uint8_t*>(u.data())[0] = 7;
  TestTensor uy(ScalarType::UInt8, {3});
  ASSERT_TRUE(pad(u, uy, {1, 1}, "constant", 300.0f).is_ok());
  EXPECT_EQ(uy.values<uint8_t>(), (std::vector<uint8_t>{255, 7, 255}));
}

TEST(Pad, ReflectBeyondOnePeriodAndSizeOne) {
  TestTensor x = TestTensor::f32({3}, {1, 2, 3});
  TestTensor y(ScalarType::Float32, {9});
  ASSERT_TRUE(pad(x, y, {3, 3}, "reflect").is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{2, 3, 2, 1, 2, 3, 2, 1, 2}));
  TestTensor one = TestTensor::f32({1}, {4});
  TestTensor oy(ScalarType::Float32, {3});
  ASSERT_TRUE(pad(one, oy, {1, 1}, "reflect").is_ok());
  EXPECT_EQ(oy.floats(), (std::vector<float>{4, 4, 4}));
}

TEST(Pad, Modes) {
  TestTensor x = TestTensor::f32({2}, {1, 2});
  TestTensor y(ScalarType::Float32, {4});
  expect_error(pad(x, y, {1, 1}, "wrap"), Error::NotSupported, "mode 'wrap'");
  expect_error(pad(x, y, {1, 1}, "mirror"), Error::InvalidProgram, "mode 'mirror'");
}

}  // namespace
}  // namespace tessera::kernel_test
