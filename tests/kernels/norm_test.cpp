// Softmax, LayerNormalization and BatchNormalization against double-precision references.
#include <cmath>

#include "kernel_test_util.h"

namespace tessera::kernel_test {
namespace {

// Softmax over `axis` of a row-major tensor of `sizes`, in double.
std::vector<double> softmax_reference(const std::vector<double>& x, const std::vector<int64_t>& sizes,
                                      int axis) {
  int64_t outer = 1, n = sizes[axis], inner = 1;
  for (int d = 0; d < axis; ++d) outer *= sizes[d];
  for (size_t d = axis + 1; d < sizes.size(); ++d) inner *= sizes[d];
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      double m = -INFINITY, s = 0;
      for (int64_t a = 0; a < n; ++a) m = std::max(m, x[(o * n + a) * inner + j]);
      for (int64_t a = 0; a < n; ++a) s += std::exp(x[(o * n + a) * inner + j] - m);
      for (int64_t a = 0; a < n; ++a) {
        y[(o * n + a) * inner + j] = std::exp(x[(o * n + a) * inner + j] - m) / s;
      }
    }
  return y;
}

void check_softmax(std::vector<int64_t> sizes, int64_t axis_attr, bool set_axis, uint32_t seed,
                   float lo = -5, float hi = 5) {
  SCOPED_TRACE(::testing::Message() << "softmax axis " << axis_attr);
  TestTensor x = TestTensor::random(sizes, seed, lo, hi);
  TestTensor y(ScalarType::Float32, sizes);
  NodeSpec spec(OpType::Softmax);
  if (set_axis) spec.attr(attr_int("axis", axis_attr));
  ASSERT_TRUE(run_op(spec.node(), {&x}, {&y}).is_ok());
  const int rank = static_cast<int>(sizes.size());
  const int axis = static_cast<int>(axis_attr < 0 ? axis_attr + rank : axis_attr);
  expect_close(y.floats(), softmax_reference(x.doubles(), sizes, axis));
}

TEST(Softmax, DefaultLastAxis) { check_softmax({3, 17}, -1, false, 1); }
TEST(Softmax, LongRow) { check_softmax({2, 1000}, -1, true, 2); }
TEST(Softmax, FirstAxis) { check_softmax({5, 3, 4}, 0, true, 3); }
TEST(Softmax, MiddleAxisNegative) { check_softmax({2, 6, 5}, -2, true, 4); }
TEST(Softmax, LargeValuesAreStable) { check_softmax({4, 9}, 1, true, 5, 500, 1000); }
TEST(Softmax, OneDimensional) { check_softmax({7}, 0, true, 6); }
TEST(Softmax, SizeOneAxis) { check_softmax({3, 1, 4}, 1, true, 7); }

TEST(Softmax, HandComputed) {
  TestTensor x = TestTensor::f32({2}, {0, std::log(3.0f)});
  TestTensor y(ScalarType::Float32, {2});
  NodeSpec spec(OpType::Softmax);
  ASSERT_TRUE(run_op(spec.node(), {&x}, {&y}).is_ok());
  expect_close(y.floats(), {0.25, 0.75});
}

// ---- LayerNormalization ------------------------------------------------------------------------

void check_layer_norm(std::vector<int64_t> sizes, int axis, std::vector<int64_t> scale_sizes,
                      bool bias, bool stats, uint32_t seed, float eps = 1e-5f) {
  SCOPED_TRACE(::testing::Message() << "layer norm axis " << axis);
  const int rank = static_cast<int>(sizes.size());
  const int a = axis < 0 ? axis + rank : axis;
  TestTensor x = TestTensor::random(sizes, seed, -3, 5);
  TestTensor scale = TestTensor::random(scale_sizes, seed + 1, 0.5f, 2);
  TestTensor b = TestTensor::random(scale_sizes, seed + 2, -1, 1);
  std::vector<int64_t> norm(sizes.begin() + a, sizes.end());
  int64_t n = 1, outer = 1;
  for (int64_t d : norm) n *= d;
  for (int d = 0; d < a; ++d) outer *= sizes[d];
  std::vector<int64_t> stat_sizes(sizes);
  for (int d = a; d < rank; ++d) stat_sizes[d] = 1;
  // Parameter index of normalized element i (right-aligned broadcast).
  auto pidx = [&](int64_t i) {
    int64_t off = 0, stride = 1;
    for (int64_t d = static_cast<int64_t>(norm.size()) - 1; d >= 0; --d) {
      const int64_t idx = i % norm[d];
      i /= norm[d];
      const int64_t sd = d - static_cast<int64_t>(norm.size() - scale_sizes.size());
      if (sd >= 0) {
        if (scale_sizes[sd] != 1) off += idx * stride;
        stride *= scale_sizes[sd];
      }
    }
    return off;
  };
  const std::vector<double> xv = x.doubles(), sv = scale.doubles(), bv = b.doubles();
  std::vector<double> ref, mean_ref, inv_ref, mag;
  for (int64_t o = 0; o < outer; ++o) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i) mean += xv[o * n + i];
    mean /= n;
    for (int64_t i = 0; i < n; ++i) var += (xv[o * n + i] - mean) * (xv[o * n + i] - mean);
    var /= n;
    const double inv = 1 / std::sqrt(var + eps);
    mean_ref.push_back(mean);
    inv_ref.push_back(inv);
    for (int64_t i = 0; i < n; ++i) {
      const double z = (xv[o * n + i] - mean) * inv * sv[pidx(i)];
      ref.push_back(z + (bias ? bv[pidx(i)] : 0));
      mag.push_back(std::fabs(z) + (bias ? std::fabs(bv[pidx(i)]) : 0));
    }
  }
  TestTensor y(ScalarType::Float32, sizes);
  TestTensor mean_out(ScalarType::Float32, stat_sizes), inv_out(ScalarType::Float32, stat_sizes);
  NodeSpec spec(OpType::LayerNormalization, "ln");
  if (axis != -1) spec.attr(attr_int("axis", axis));
  if (eps != 1e-5f) spec.attr(attr_float("epsilon", eps));
  std::vector<TestTensor*> outs = {&y};
  if (stats) outs = {&y, &mean_out, &inv_out};
  Status st = run_op(spec.node(), {&x, &scale, bias ? &b : nullptr}, outs);
  ASSERT_TRUE(st.is_ok()) << st.message();
  expect_close(y.floats(), ref, mag);
  if (stats) {
    expect_close(mean_out.floats(), mean_ref, std::vector<double>(mean_ref.size(), 5.0));
    expect_close(inv_out.floats(), inv_ref);
  }
}

TEST(LayerNorm, LastAxisWithBias) { check_layer_norm({4, 33}, -1, {33}, true, false, 1); }
TEST(LayerNorm, NoBias) { check_layer_norm({2, 3, 16}, -1, {16}, false, false, 2); }
TEST(LayerNorm, MultiDimNormalizedShape) { check_layer_norm({2, 3, 4, 5}, 1, {3, 4, 5}, true, false, 3); }
TEST(LayerNorm, BroadcastScale) { check_layer_norm({2, 3, 4}, -2, {1, 4}, true, false, 4); }
TEST(LayerNorm, MeanAndInvStdDevOutputs) { check_layer_norm({3, 2, 8}, 2, {8}, true, true, 5); }
TEST(LayerNorm, AxisZero) { check_layer_norm({3, 5}, 0, {3, 5}, true, true, 6); }
TEST(LayerNorm, Epsilon) { check_layer_norm({2, 4}, -1, {4}, true, false, 7, 0.5f); }

TEST(LayerNorm, ConstantRowIsBias) {
  TestTensor x = TestTensor::f32({1, 3}, {2, 2, 2});
  TestTensor g = TestTensor::f32({3}, {1, 1, 1});
  TestTensor b = TestTensor::f32({3}, {0.5f, -1, 2});
  TestTensor y(ScalarType::Float32, {1, 3});
  NodeSpec spec(OpType::LayerNormalization);
  ASSERT_TRUE(run_op(spec.node(), {&x, &g, &b}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{0.5f, -1, 2}));
}

TEST(LayerNorm, ScaleMustBroadcast) {
  TestTensor x = TestTensor::random({2, 4}, 1);
  TestTensor g = TestTensor::random({3}, 2);
  TestTensor y(ScalarType::Float32, {2, 4});
  NodeSpec spec(OpType::LayerNormalization, "ln");
  expect_error(prepare_op(spec.node(), {&x, &g}, {&y}), Error::ShapeMismatch,
               "input 1 shape [3] does not broadcast to [4]");
}

// ---- BatchNormalization ------------------------------------------------------------------------

void check_batch_norm(std::vector<int64_t> sizes, uint32_t seed, float eps) {
  const int64_t c = sizes[1];
  TestTensor x = TestTensor::random(sizes, seed, -2, 2);
  TestTensor scale = TestTensor::random({c}, seed + 1, 0.5f, 2);
  TestTensor bias = TestTensor::random({c}, seed + 2);
  TestTensor mean = TestTensor::random({c}, seed + 3);
  TestTensor var = TestTensor::random({c}, seed + 4, 0.1f, 3);
  TestTensor y(ScalarType::Float32, sizes);
  NodeSpec spec(OpType::BatchNormalization, "bn");
  spec.attr(attr_float("epsilon", eps));
  ASSERT_TRUE(run_op(spec.node(), {&x, &scale, &bias, &mean, &var}, {&y}).is_ok());
  int64_t spatial = 1;
  for (size_t d = 2; d < sizes.size(); ++d) spatial *= sizes[d];
  std::vector<double> ref, mag;
  const std::vector<double> xv = x.doubles();
  for (size_t i = 0; i < xv.size(); ++i) {
    const int64_t ch = (static_cast<int64_t>(i) / spatial) % c;
    const double z = (xv[i] - mean.doubles()[ch]) / std::sqrt(var.doubles()[ch] + eps) *
                     scale.doubles()[ch];
    ref.push_back(z + bias.doubles()[ch]);
    mag.push_back(std::fabs(z) + std::fabs(bias.doubles()[ch]));
  }
  expect_close(y.floats(), ref, mag);
}

TEST(BatchNorm, NCHW) { check_batch_norm({2, 3, 4, 5}, 1, 1e-5f); }
TEST(BatchNorm, NC) { check_batch_norm({4, 6}, 2, 1e-3f); }
TEST(BatchNorm, NCL) { check_batch_norm({1, 5, 9}, 3, 0.1f); }
TEST(BatchNorm, NCDHW) { check_batch_norm({1, 2, 3, 2, 2}, 4, 1e-5f); }

TEST(BatchNorm, TrainingModeNotSupported) {
  TestTensor x = TestTensor::random({1, 2, 2}, 1);
  TestTensor p = TestTensor::f32({2}, {1, 1});
  TestTensor y(ScalarType::Float32, {1, 2, 2});
  NodeSpec spec(OpType::BatchNormalization, "bn");
  spec.attr(attr_int("training_mode", 1));
  expect_error(prepare_op(spec.node(), {&x, &p, &p, &p, &p}, {&y}), Error::NotSupported,
               "training_mode");
}

TEST(BatchNorm, ParameterShapes) {
  TestTensor x = TestTensor::random({1, 2, 2}, 1);
  TestTensor p = TestTensor::f32({2}, {1, 1});
  TestTensor bad = TestTensor::f32({3}, {1, 1, 1});
  TestTensor y(ScalarType::Float32, {1, 2, 2});
  NodeSpec spec(OpType::BatchNormalization, "bn");
  expect_error(prepare_op(spec.node(), {&x, &p, &p, &p, &bad}, {&y}), Error::ShapeMismatch,
               "input_var has shape [3], expected [2]");
}

}  // namespace
}  // namespace tessera::kernel_test
