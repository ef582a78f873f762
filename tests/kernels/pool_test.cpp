// MaxPool, AveragePool and GlobalAveragePool against hand-computed values and a double reference.
#include <cmath>

#include "kernel_test_util.h"

namespace tessera::kernel_test {
namespace {

struct PoolCase {
  std::vector<int64_t> x;  // N, C, spatial...
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides = {}, pads = {}, dilations = {};
  bool ceil_mode = false;
  bool count_include_pad = false;
};

// Output sizes and values in double. Windows clipped to the input (max, avg) or to the padded
// input (avg with count_include_pad).
void pool_reference(const PoolCase& c, bool is_max, const TestTensor& x,
                    std::vector<int64_t>* out_sizes, std::vector<double>* ref) {
  const size_t ns = c.kernel.size();
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1};
  int64_t pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0}, out[3] = {1, 1, 1};
  for (size_t i = 0; i < ns; ++i) {
    const size_t j = 3 - ns + i;
    in[j] = c.x[2 + i];
    k[j] = c.kernel[i];
    if (!c.strides.empty()) s[j] = c.strides[i];
    if (!c.dilations.empty()) d[j] = c.dilations[i];
    if (!c.pads.empty()) {
      pb[j] = c.pads[i];
      pe[j] = c.pads[ns + i];
    }
  }
  *out_sizes = {c.x[0], c.x[1]};
  for (int j = 0; j < 3; ++j) {
    const int64_t span = in[j] + pb[j] + pe[j] - ((k[j] - 1) * d[j] + 1);
    out[j] = (c.ceil_mode ? (span + s[j] - 1) / s[j] : span / s[j]) + 1;
    if (c.ceil_mode && (out[j] - 1) * s[j] >= in[j] + pb[j]) --out[j];
    if (j >= static_cast<int>(3 - ns)) out_sizes->push_back(out[j]);
  }
  const std::vector<double> xv = x.doubles();
  const int64_t planes = c.x[0] * c.x[1];
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t o0 = 0; o0 < out[0]; ++o0)
      for (int64_t o1 = 0; o1 < out[1]; ++o1)
        for (int64_t o2 = 0; o2 < out[2]; ++o2) {
          double m = -INFINITY, sum = 0;
          int64_t valid = 0, padded = 0;
          for (int64_t k0 = 0; k0 < k[0]; ++k0)
            for (int64_t k1 = 0; k1 < k[1]; ++k1)
              for (int64_t k2 = 0; k2 < k[2]; ++k2) {
                const int64_t i0 = o0 * s[0] - pb[0] + k0 * d[0];
                const int64_t i1 = o1 * s[1] - pb[1] + k1 * d[1];
                const int64_t i2 = o2 * s[2] - pb[2] + k2 * d[2];
                if (i0 < in[0] + pe[0] && i1 < in[1] + pe[1] && i2 < in[2] + pe[2]) ++padded;
                if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] || i2 < 0 || i2 >= in[2]) continue;
                const double v = xv[((p * in[0] + i0) * in[1] + i1) * in[2] + i2];
                m = std::max(m, v);
                sum += v;
                ++valid;
              }
          ref->push_back(is_max ? m : sum / (c.count_include_pad ? padded : valid));
        }
}

void check_pool(const PoolCase& c, bool is_max, uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << (is_max ? "MaxPool" : "AveragePool") << " seed " << seed);
  TestTensor x = TestTensor::random(c.x, seed, -3, 3);
  std::vector<int64_t> out;
  std::vector<double> ref;
  pool_reference(c, is_max, x, &out, &ref);
  TestTensor y(ScalarType::Float32, out);
  NodeSpec spec(is_max ? OpType::MaxPool : OpType::AveragePool, "pool");
  spec.attr(attr_ints("kernel_shape", c.kernel));
  if (!c.strides.empty()) spec.attr(attr_ints("strides", c.strides));
  if (!c.pads.empty()) spec.attr(attr_ints("pads", c.pads));
  if (!c.dilations.empty()) spec.attr(attr_ints("dilations", c.dilations));
  if (c.ceil_mode) spec.attr(attr_int("ceil_mode", 1));
  if (c.count_include_pad) spec.attr(attr_int("count_include_pad", 1));
  Status st = run_op(spec.node(), {&x}, {&y});
  ASSERT_TRUE(st.is_ok()) << st.message();
  std::vector<double> mag;
  if (!is_max) {  // a mean of values in [-3, 3]
    mag.assign(ref.size(), 3.0);
  }
  expect_close(y.floats(), ref, mag);
}

TEST(MaxPool, HandComputed) {
  TestTensor x = TestTensor::f32({1, 1, 4, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
  TestTensor y(ScalarType::Float32, {1, 1, 2, 2});
  NodeSpec spec(OpType::MaxPool);
  spec.attr(attr_ints("kernel_shape", {2, 2})).attr(attr_ints("strides", {2, 2}));
  ASSERT_TRUE(run_op(spec.node(), {&x}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{6, 8, 14, 16}));
}

TEST(MaxPool, ResNetStem) { check_pool({{1, 3, 12, 12}, {3, 3}, {2, 2}, {1, 1, 1, 1}}, true, 1); }
TEST(MaxPool, NonSquareAsymmetricPads) { check_pool({{2, 2, 7, 9}, {2, 3}, {1, 2}, {0, 1, 1, 2}}, true, 2); }
TEST(MaxPool, Dilations) { check_pool({{1, 2, 9, 8}, {2, 2}, {1, 1}, {}, {2, 3}}, true, 3); }
TEST(MaxPool, CeilMode) { check_pool({{1, 2, 6, 7}, {3, 3}, {2, 2}, {}, {}, true}, true, 4); }
TEST(MaxPool, CeilModeLastWindowDropped) {
  // in 5, k 2, s 2, pad 1: ceil gives 4 windows but the last would start in the end padding.
  check_pool({{1, 1, 5, 5}, {2, 2}, {2, 2}, {1, 1, 1, 1}, {}, true}, true, 5);
}
TEST(MaxPool, OneDimensional) { check_pool({{2, 3, 10}, {3}, {2}, {1, 1}}, true, 6); }
TEST(MaxPool, ThreeDimensional) { check_pool({{1, 2, 5, 6, 4}, {2, 3, 2}, {2, 1, 2}, {1, 1, 0, 0, 1, 1}}, true, 7); }

TEST(MaxPool, AllNegativeWithPadding) {
  // Padding never wins a max.
  TestTensor x = TestTensor::f32({1, 1, 2, 2}, {-4, -3, -2, -1});
  TestTensor y(ScalarType::Float32, {1, 1, 2, 2});
  NodeSpec spec(OpType::MaxPool);
  spec.attr(attr_ints("kernel_shape", {2, 2})).attr(attr_ints("pads", {1, 1, 0, 0}));
  ASSERT_TRUE(run_op(spec.node(), {&x}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{-4, -3, -2, -1}));
}

TEST(MaxPool, IndicesOutputNotSupported) {
  TestTensor x = TestTensor::random({1, 1, 4, 4}, 1);
  TestTensor y(ScalarType::Float32, {1, 1, 2, 2}), idx(ScalarType::Int64, {1, 1, 2, 2});
  NodeSpec spec(OpType::MaxPool, "mp");
  spec.attr(attr_ints("kernel_shape", {2, 2})).attr(attr_ints("strides", {2, 2}));
  expect_error(prepare_op(spec.node(), {&x}, {&y, &idx}), Error::NotSupported, "Indices");
}

TEST(AveragePool, HandComputedExcludePad) {
  TestTensor x = TestTensor::f32({1, 1, 2, 2}, {1, 2, 3, 4});
  TestTensor y(ScalarType::Float32, {1, 1, 2, 2});
  NodeSpec spec(OpType::AveragePool);
  spec.attr(attr_ints("kernel_shape", {2, 2})).attr(attr_ints("pads", {1, 1, 0, 0}));
  ASSERT_TRUE(run_op(spec.node(), {&x}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{1, 1.5f, 2, 2.5f}));
}

TEST(AveragePool, HandComputedIncludePad) {
  TestTensor x = TestTensor::f32({1, 1, 2, 2}, {1, 2, 3, 4});
  TestTensor y(ScalarType::Float32, {1, 1, 2, 2});
  NodeSpec spec(OpType::AveragePool);
  spec.attr(attr_ints("kernel_shape", {2, 2})).attr(attr_ints("pads", {1, 1, 0, 0}));
  spec.attr(attr_int("count_include_pad", 1));
  ASSERT_TRUE(run_op(spec.node(), {&x}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{0.25f, 0.75f, 1, 2.5f}));
}

TEST(AveragePool, Basic) { check_pool({{2, 3, 8, 8}, {2, 2}, {2, 2}}, false, 10); }
TEST(AveragePool, PadsExcluded) { check_pool({{1, 2, 7, 6}, {3, 3}, {2, 2}, {1, 1, 1, 1}}, false, 11); }
TEST(AveragePool, PadsIncluded) { check_pool({{1, 2, 7, 6}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, false, true}, false, 12); }
TEST(AveragePool, CeilModeIncludePadClipsToPaddedInput) {
  check_pool({{1, 1, 6, 6}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, true, true}, false, 13);
}
TEST(AveragePool, CeilModeExcludePad) { check_pool({{1, 2, 7, 5}, {2, 3}, {2, 2}, {0, 1, 0, 1}, {}, true}, false, 14); }
TEST(AveragePool, Dilated) { check_pool({{1, 1, 9, 9}, {3, 3}, {1, 2}, {2, 2, 2, 2}, {2, 2}, false, true}, false, 15); }
TEST(AveragePool, OneDimensional) { check_pool({{1, 2, 11}, {4}, {3}, {2, 1}}, false, 16); }
TEST(AveragePool, ThreeDimensional) { check_pool({{1, 1, 4, 5, 6}, {2, 2, 3}, {2, 2, 2}, {0, 1, 1, 0, 0, 1}}, false, 17); }

TEST(Pool, ValidatesOutputShape) {
  TestTensor x = TestTensor::random({1, 1, 6, 6}, 1);
  TestTensor y(ScalarType::Float32, {1, 1, 3, 3});
  NodeSpec spec(OpType::MaxPool, "mp1");
  spec.attr(attr_ints("kernel_shape", {3, 3})).attr(attr_ints("strides", {2, 2}));
  expect_error(prepare_op(spec.node(), {&x}, {&y}), Error::ShapeMismatch,
               "MaxPool node 'mp1': output shape [1, 1, 3, 3] does not match computed [1, 1, 2, 2]");
  NodeSpec ceil(OpType::MaxPool, "mp1");
  ceil.attr(attr_ints("kernel_shape", {3, 3})).attr(attr_ints("strides", {2, 2}));
  ceil.attr(attr_int("ceil_mode", 1));
  EXPECT_TRUE(run_op(ceil.node(), {&x}, {&y}).is_ok());
}

TEST(GlobalAveragePool, Planes) {
  TestTensor x = TestTensor::random({2, 3, 5, 7}, 20);
  TestTensor y(ScalarType::Float32, {2, 3, 1, 1});
  NodeSpec spec(OpType::GlobalAveragePool);
  ASSERT_TRUE(run_op(spec.node(), {&x}, {&y}).is_ok());
  std::vector<double> ref;
  const std::vector<double> xv = x.doubles();
  for (int p = 0; p < 6; ++p) {
    double s = 0;
    for (int i = 0; i < 35; ++i) s += xv[p * 35 + i];
    ref.push_back(s / 35);
  }
  expect_close(y.floats(), ref, std::vector<double>(6, 1.0));
}

TEST(GlobalAveragePool, OneAndThreeDimensional) {
  TestTensor x1 = TestTensor::f32({1, 2, 3}, {1, 2, 3, 4, 5, 6});
  TestTensor y1(ScalarType::Float32, {1, 2, 1});
  NodeSpec spec(OpType::GlobalAveragePool);
  ASSERT_TRUE(run_op(spec.node(), {&x1}, {&y1}).is_ok());
  EXPECT_EQ(y1.floats(), (std::vector<float>{2, 5}));
  TestTensor x3 = TestTensor::f32({1, 1, 2, 1, 2}, {1, 2, 3, 6});
  TestTensor y3(ScalarType::Float32, {1, 1, 1, 1, 1});
  ASSERT_TRUE(run_op(spec.node(), {&x3}, {&y3}).is_ok());
  EXPECT_EQ(y3.floats(), (std::vector<float>{3}));
}

}  // namespace
}  // namespace tessera::kernel_test
