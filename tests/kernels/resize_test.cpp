// Resize (nearest and linear) against hand-computed values and a double-precision reference.
#include <cmath>
#include <string>

#include "kernel_test_util.h"

namespace tessera::kernel_test {
namespace {

struct ResizeCase {
  std::string mode = "nearest";
  std::string ctm = "half_pixel";
  std::string nearest_mode = "round_prefer_floor";
  std::vector<float> scales = {};
};

double source(const ResizeCase& c, int64_t o, double scale, int64_t in, int64_t out) {
  const double x = static_cast<double>(o);
  if (c.ctm == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (c.ctm == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (c.ctm == "align_corners") return out == 1 ? 0.0 : x * (in - 1) / (out - 1);
  if (c.ctm == "asymmetric") return x / scale;
  return (x + 0.5) / scale;  // tf_half_pixel_for_nearest
}

int64_t nearest_index(const ResizeCase& c, double x, int64_t in) {
  int64_t i;
  const bool tie = x - std::floor(x) == 0.5;
  if (c.nearest_mode == "round_prefer_floor") i = static_cast<int64_t>(tie ? std::floor(x) : std::round(x));
  else if (c.nearest_mode == "round_prefer_ceil") i = static_cast<int64_t>(tie ? std::ceil(x) : std::round(x));
  else if (c.nearest_mode == "floor") i = static_cast<int64_t>(std::floor(x));
  else i = static_cast<int64_t>(std::ceil(x));
  return std::max<int64_t>(0, std::min(in - 1, i));
}

// Double reference: separable per-dim neighbours and weights, summed over all corners.
void resize_reference(const ResizeCase& c, const TestTensor& x, const std::vector<int64_t>& out,
                      std::vector<double>* ref, std::vector<double>* mag) {
  const std::vector<int64_t>& in = x.sizes();
  const size_t r = in.size();
  std::vector<std::vector<int64_t>> i0(r), i1(r);
  std::vector<std::vector<double>> w(r);
  for (size_t d = 0; d < r; ++d) {
    const double scale = c.scales.empty() ? static_cast<double>(out[d]) / in[d] : c.scales[d];
    for (int64_t o = 0; o < out[d]; ++o) {
      double s = source(c, o, scale, in[d], out[d]);
      if (c.mode == "nearest") {
        i0[d].push_back(nearest_index(c, s, in[d]));
        i1[d].push_back(0);
        w[d].push_back(0);
      } else {
        s = std::max(0.0, std::min(static_cast<double>(in[d] - 1), s));
        const int64_t a = static_cast<int64_t>(std::floor(s));
        i0[d].push_back(a);
        i1[d].push_back(std::min(a + 1, in[d] - 1));
        w[d].push_back(s - a);
      }
    }
  }
  const std::vector<double> xv = x.doubles();
  int64_t n = 1;
  for (int64_t o : out) n *= o;
  for (int64_t e = 0; e < n; ++e) {
    std::vector<int64_t> idx(r);
    int64_t rem = e;
    for (size_t d = r; d-- > 0;) {
      idx[d] = rem % out[d];
      rem /= out[d];
    }
    double v = 0, m = 0;
    for (int64_t corner = 0; corner < (int64_t{1} << r); ++corner) {
      double weight = 1;
      int64_t off = 0;
      for (size_t d = 0; d < r; ++d) {
        const bool hi = (corner >> d) & 1;
        weight *= hi ? w[d][idx[d]] : 1 - w[d][idx[d]];
        off = off * in[d] + (hi ? i1[d][idx[d]] : i0[d][idx[d]]);
      }
      if (weight == 0) continue;
      v += weight * xv[off];
      m += std::fabs(weight * xv[off]);
    }
    ref->push_back(v);
    mag->push_back(m);
  }
}

void check_resize(const ResizeCase& c, std::vector<int64_t> in, std::vector<int64_t> out,
                  uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << c.mode << " " << c.ctm << " " << c.nearest_mode);
  TestTensor x = TestTensor::random(in, seed, -2, 2);
  std::vector<double> ref, mag;
  resize_reference(c, x, out, &ref, &mag);
  TestTensor y(ScalarType::Float32, out);
  NodeSpec spec(OpType::Resize, "resize");
  spec.attr(attr_string("mode", c.mode));
  spec.attr(attr_string("coordinate_transformation_mode", c.ctm));
  spec.attr(attr_string("nearest_mode", c.nearest_mode));
  if (!c.scales.empty()) spec.attr(attr_floats("scales", c.scales));
  Status st = run_op(spec.node(), {&x}, {&y});
  ASSERT_TRUE(st.is_ok()) << st.message();
  expect_close(y.floats(), ref, mag);
}

TEST(Resize, NearestAsymmetricFloorUpsample) {
  TestTensor x = TestTensor::f32({1, 1, 2, 2}, {1, 2, 3, 4});
  TestTensor y(ScalarType::Float32, {1, 1, 4, 4});
  NodeSpec spec(OpType::Resize);
  spec.attr(attr_string("coordinate_transformation_mode", "asymmetric"));
  spec.attr(attr_string("nearest_mode", "floor"));
  ASSERT_TRUE(run_op(spec.node(), {&x}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
}

TEST(Resize, NearestTiesFollowNearestMode) {
  // half_pixel 2 -> 5: output 2 maps to exactly 0.5.
  TestTensor x = TestTensor::f32({2}, {10, 20});
  TestTensor y(ScalarType::Float32, {5});
  NodeSpec floor(OpType::Resize);
  ASSERT_TRUE(run_op(floor.node(), {&x}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{10, 10, 10, 20, 20}));
  NodeSpec ceil(OpType::Resize);
  ceil.attr(attr_string("nearest_mode", "round_prefer_ceil"));
  ASSERT_TRUE(run_op(ceil.node(), {&x}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{10, 10, 20, 20, 20}));
}

TEST(Resize, LinearHandComputed) {
  // align_corners 2 -> 3 on the last dim: the middle sample is the average.
  TestTensor x = TestTensor::f32({1, 1, 1, 2}, {0, 10});
  TestTensor y(ScalarType::Float32, {1, 1, 1, 3});
  NodeSpec spec(OpType::Resize);
  spec.attr(attr_string("mode", "linear"));
  spec.attr(attr_string("coordinate_transformation_mode", "align_corners"));
  ASSERT_TRUE(run_op(spec.node(), {&x}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{0, 5, 10}));
}

ResizeCase linear(std::string ctm, std::vector<float> scales = {}) {
  ResizeCase c;
  c.mode = "linear";
  c.ctm = std::move(ctm);
  c.scales = std::move(scales);
  return c;
}

ResizeCase nearest(std::string ctm, std::string mode, std::vector<float> scales = {}) {
  ResizeCase c;
  c.ctm = std::move(ctm);
  c.nearest_mode = std::move(mode);
  c.scales = std::move(scales);
  return c;
}

TEST(Resize, BilinearHalfPixelUpsample) { check_resize(linear("half_pixel"), {2, 3, 3, 4}, {2, 3, 5, 7}, 1); }
TEST(Resize, BilinearHalfPixelDownsample) { check_resize(linear("half_pixel"), {1, 2, 9, 8}, {1, 2, 4, 3}, 2); }
TEST(Resize, BilinearAlignCorners) { check_resize(linear("align_corners"), {1, 2, 6, 5}, {1, 2, 4, 9}, 3); }
TEST(Resize, BilinearPytorchHalfPixelToSizeOne) {
  check_resize(linear("pytorch_half_pixel"), {1, 1, 4, 6}, {1, 1, 1, 3}, 4);
}
TEST(Resize, BilinearAsymmetricWithScales) {
  check_resize(linear("asymmetric", {1, 1, 2, 2}), {1, 3, 3, 3}, {1, 3, 6, 6}, 5);
}
TEST(Resize, ScalesDifferFromSizeRatio) {
  // scale 1.8 given although 5 / 3 was chosen for the output: the transform uses the scale.
  check_resize(linear("half_pixel", {1, 1, 1.8f, 1.8f}), {1, 1, 3, 3}, {1, 1, 5, 5}, 6);
}
TEST(Resize, TrilinearNd) { check_resize(linear("half_pixel"), {2, 3, 4}, {3, 5, 6}, 7); }
TEST(Resize, LinearOnlyInnerDims1d) { check_resize(linear("align_corners"), {3, 5}, {3, 8}, 8); }
TEST(Resize, LinearSameSizeIsIdentity) { check_resize(linear("half_pixel"), {1, 2, 3, 3}, {1, 2, 3, 3}, 9); }

TEST(Resize, NearestModes) {
  check_resize(nearest("half_pixel", "round_prefer_floor"), {1, 1, 3, 4}, {1, 1, 7, 9}, 10);
  check_resize(nearest("half_pixel", "round_prefer_ceil"), {1, 1, 3, 4}, {1, 1, 7, 9}, 11);
  check_resize(nearest("asymmetric", "floor"), {1, 2, 5, 5}, {1, 2, 3, 2}, 12);
  check_resize(nearest("asymmetric", "ceil"), {1, 2, 5, 5}, {1, 2, 8, 7}, 13);
  check_resize(nearest("align_corners", "round_prefer_floor"), {1, 1, 4, 3}, {1, 1, 7, 6}, 14);
  check_resize(nearest("tf_half_pixel_for_nearest", "floor"), {1, 1, 3, 3}, {1, 1, 6, 5}, 15);
  check_resize(nearest("pytorch_half_pixel", "round_prefer_floor"), {1, 1, 4, 4}, {1, 1, 1, 3}, 16);
}

TEST(Resize, NearestInt64Data) {
  TestTensor x = TestTensor::i64({1, 3}, {7, 8, 9});
  TestTensor y(ScalarType::Int64, {2, 6});
  NodeSpec spec(OpType::Resize);
  spec.attr(attr_string("coordinate_transformation_mode", "asymmetric"));
  spec.attr(attr_string("nearest_mode", "floor"));
  ASSERT_TRUE(run_op(spec.node(), {&x}, {&y}).is_ok());
  EXPECT_EQ(y.values<int64_t>(), (std::vector<int64_t>{7, 7, 8, 8, 9, 9, 7, 7, 8, 8, 9, 9}));
}

TEST(Resize, UnsupportedModes) {
  TestTensor x = TestTensor::random({1, 1, 2, 2}, 1);
  TestTensor y(ScalarType::Float32, {1, 1, 4, 4});
  NodeSpec cubic(OpType::Resize, "rs");
  cubic.attr(attr_string("mode", "cubic"));
  expect_error(prepare_op(cubic.node(), {&x}, {&y}), Error::NotSupported, "mode 'cubic'");
  NodeSpec crop(OpType::Resize, "rs");
  crop.attr(attr_string("coordinate_transformation_mode", "tf_crop_and_resize"));
  expect_error(prepare_op(crop.node(), {&x}, {&y}), Error::NotSupported, "tf_crop_and_resize");
  NodeSpec bogus(OpType::Resize, "rs");
  bogus.attr(attr_string("nearest_mode", "nearest"));
  expect_error(prepare_op(bogus.node(), {&x}, {&y}), Error::InvalidProgram, "nearest_mode 'nearest'");
  TestTensor xi = TestTensor::i64({1, 2}, {1, 2});
  TestTensor yi(ScalarType::Int64, {1, 4});
  NodeSpec lin(OpType::Resize, "rs");
  lin.attr(attr_string("mode", "linear"));
  expect_error(prepare_op(lin.node(), {&xi}, {&yi}), Error::NotSupported, "dtype int64");
  NodeSpec scales(OpType::Resize, "rs");
  scales.attr(attr_floats("scales", {1, 1, 0, 2}));
  expect_error(prepare_op(scales.node(), {&x}, {&y}), Error::InvalidProgram, "must be positive");
}

}  // namespace
}  // namespace tessera::kernel_test
