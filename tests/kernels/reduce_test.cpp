// ReduceMean, ReduceSum and ReduceMax against a double-precision reference.
#include <cmath>

#include "kernel_test_util.h"

namespace tessera::kernel_test {
namespace {

enum class Kind { Sum, Mean, Max };

void check_reduce(OpType op, std::vector<int64_t> sizes, std::vector<int64_t> axes, int keepdims,
                  uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << fb::EnumNameOpType(op) << " seed " << seed);
  const Kind kind = op == OpType::ReduceSum ? Kind::Sum : (op == OpType::ReduceMean ? Kind::Mean : Kind::Max);
  const int rank = static_cast<int>(sizes.size());
  std::vector<bool> reduced(rank, axes.empty());
  for (int64_t a : axes) reduced[a < 0 ? a + rank : a] = true;
  std::vector<int64_t> out_sizes, kept_sizes;  // kept_sizes: with 1s for reduced dims
  for (int d = 0; d < rank; ++d) {
    kept_sizes.push_back(reduced[d] ? 1 : sizes[d]);
    if (!reduced[d]) out_sizes.push_back(sizes[d]);
    else if (keepdims) out_sizes.push_back(1);
  }
  TestTensor x = TestTensor::random(sizes, seed, -2, 3);
  int64_t out_n = 1, count = 1;
  for (int d = 0; d < rank; ++d) {
    out_n *= kept_sizes[d];
    if (reduced[d]) count *= sizes[d];
  }
  std::vector<double> acc(out_n, kind == Kind::Max ? -INFINITY : 0.0), mag(out_n, 0.0);
  const std::vector<double> xv = x.doubles();
  for (size_t i = 0; i < xv.size(); ++i) {
    int64_t rem = static_cast<int64_t>(i), o = 0, stride = 1;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t idx = rem % sizes[d];
      rem /= sizes[d];
      if (!reduced[d]) o += idx * stride;
      stride *= kept_sizes[d];
    }
    if (kind == Kind::Max) {
      acc[o] = std::max(acc[o], xv[i]);
    } else {
      acc[o] += xv[i];
      mag[o] += std::fabs(xv[i]);
    }
  }
  if (kind == Kind::Mean) {
    for (int64_t o = 0; o < out_n; ++o) {
      acc[o] /= count;
      mag[o] /= count;
    }
  }
  TestTensor y(ScalarType::Float32, out_sizes);
  NodeSpec spec(op, "red");
  if (!axes.empty()) spec.attr(attr_ints("axes", axes));
  if (keepdims != 1) spec.attr(attr_int("keepdims", keepdims));
  Status st = run_op(spec.node(), {&x}, {&y});
  ASSERT_TRUE(st.is_ok()) << st.message();
  expect_close(y.floats(), acc, kind == Kind::Max ? std::vector<double>() : mag);
}

TEST(Reduce, SumLastAxis) { check_reduce(OpType::ReduceSum, {3, 17}, {1}, 1, 1); }
TEST(Reduce, SumFirstAxisNoKeepdims) { check_reduce(OpType::ReduceSum, {5, 4, 3}, {0}, 0, 2); }
TEST(Reduce, SumAllAxes) { check_reduce(OpType::ReduceSum, {2, 3, 4}, {}, 1, 3); }
TEST(Reduce, SumAllAxesNoKeepdims) { check_reduce(OpType::ReduceSum, {2, 3, 4}, {}, 0, 4); }
TEST(Reduce, MeanSpatial) { check_reduce(OpType::ReduceMean, {2, 3, 5, 7}, {2, 3}, 1, 5); }
TEST(Reduce, MeanNegativeAxes) { check_reduce(OpType::ReduceMean, {2, 3, 5, 7}, {-1, -3}, 0, 6); }
TEST(Reduce, MeanNonContiguousAxes) { check_reduce(OpType::ReduceMean, {4, 3, 2, 5}, {0, 2}, 1, 7); }
TEST(Reduce, MaxMiddle) { check_reduce(OpType::ReduceMax, {3, 8, 4}, {1}, 1, 8); }
TEST(Reduce, MaxLastNoKeepdims) { check_reduce(OpType::ReduceMax, {6, 9}, {-1}, 0, 9); }
TEST(Reduce, MaxAll) { check_reduce(OpType::ReduceMax, {3, 4, 5}, {}, 0, 10); }
TEST(Reduce, SizeOneDims) { check_reduce(OpType::ReduceSum, {1, 5, 1, 3}, {1, 2}, 1, 11); }
TEST(Reduce, LongRow) { check_reduce(OpType::ReduceMean, {2, 5000}, {1}, 1, 12); }

TEST(Reduce, HandComputed) {
  TestTensor x = TestTensor::f32({2, 3}, {1, 2, 3, 4, 5, 6});
  TestTensor y(ScalarType::Float32, {3});
  NodeSpec sum(OpType::ReduceSum);
  sum.attr(attr_ints("axes", {0})).attr(attr_int("keepdims", 0));
  ASSERT_TRUE(run_op(sum.node(), {&x}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{5, 7, 9}));
  TestTensor m(ScalarType::Float32, {2, 1});
  NodeSpec mean(OpType::ReduceMean);
  mean.attr(attr_ints("axes", {1}));
  ASSERT_TRUE(run_op(mean.node(), {&x}, {&m}).is_ok());
  EXPECT_EQ(m.floats(), (std::vector<float>{2, 5}));
}

TEST(Reduce, NoopWithEmptyAxes) {
  TestTensor x = TestTensor::f32({2, 2}, {1, 2, 3, 4});
  TestTensor y(ScalarType::Float32, {2, 2});
  NodeSpec spec(OpType::ReduceSum);
  spec.attr(attr_int("noop_with_empty_axes", 1));
  ASSERT_TRUE(run_op(spec.node(), {&x}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{1, 2, 3, 4}));
}

TEST(Reduce, EmptyReduction) {
  TestTensor x(ScalarType::Float32, {2, 0});
  TestTensor y(ScalarType::Float32, {2, 1});
  NodeSpec sum(OpType::ReduceSum);
  sum.attr(attr_ints("axes", {1}));
  ASSERT_TRUE(run_op(sum.node(), {&x}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{0, 0}));
  NodeSpec mx(OpType::ReduceMax);
  mx.attr(attr_ints("axes", {1}));
  ASSERT_TRUE(run_op(mx.node(), {&x}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{-INFINITY, -INFINITY}));
}

TEST(Reduce, MaxPropagatesNaN) {
  TestTensor x = TestTensor::f32({2, 2}, {1, NAN, 3, 4});
  TestTensor y(ScalarType::Float32, {2});
  NodeSpec spec(OpType::ReduceMax);
  spec.attr(attr_ints("axes", {1})).attr(attr_int("keepdims", 0));
  ASSERT_TRUE(run_op(spec.node(), {&x}, {&y}).is_ok());
  EXPECT_TRUE(std::isnan(y.at(0)));
  EXPECT_EQ(y.at(1), 4);
}

TEST(Reduce, RepeatedAxis) {
  TestTensor x = TestTensor::random({2, 3}, 1);
  TestTensor y(ScalarType::Float32, {2, 1});
  NodeSpec spec(OpType::ReduceSum, "red");
  spec.attr(attr_ints("axes", {1, -1}));
  expect_error(prepare_op(spec.node(), {&x}, {&y}), Error::InvalidProgram, "axis 1 is repeated");
}

}  // namespace
}  // namespace tessera::kernel_test
