// Conv and ConvTranspose against hand-computed values and a double-precision reference.
#include <cmath>

#include "kernel_test_util.h"

namespace tessera::kernel_test {
namespace {

struct ConvCase {
  std::vector<int64_t> x;  // N, C, spatial...
  int64_t m;               // output channels
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides = {}, dilations = {}, pads = {};  // empty = defaults
  int64_t group = 1;
  bool bias = true;
};

// Lifts 1-D/2-D geometry to 3-D (leading size-1 dims) for the reference loops.
struct Geo3 {
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1};
  int64_t pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0}, out[3] = {1, 1, 1};
};

Geo3 lift(const std::vector<int64_t>& in, const std::vector<int64_t>& k,
          const std::vector<int64_t>& s, const std::vector<int64_t>& d,
          const std::vector<int64_t>& pads) {
  Geo3 g;
  const size_t n = k.size();
  for (size_t i = 0; i < n; ++i) {
    const size_t j = 3 - n + i;
    g.in[j] = in[i];
    g.k[j] = k[i];
    g.s[j] = s.empty() ? 1 : s[i];
    g.d[j] = d.empty() ? 1 : d[i];
    g.pb[j] = pads.empty() ? 0 : pads[i];
    g.pe[j] = pads.empty() ? 0 : pads[n + i];
  }
  return g;
}

// Double-precision convolution; also returns sum |terms| per output for the tolerance.
void conv_reference(const ConvCase& c, const TestTensor& x, const TestTensor& w,
                    const TestTensor* b, std::vector<int64_t>* out_sizes,
                    std::vector<double>* ref, std::vector<double>* mag) {
  const size_t ns = c.kernel.size();
  std::vector<int64_t> in(c.x.begin() + 2, c.x.end());
  Geo3 g = lift(in, c.kernel, c.strides, c.dilations, c.pads);
  for (int j = 0; j < 3; ++j) {
    g.out[j] = (g.in[j] + g.pb[j] + g.pe[j] - ((g.k[j] - 1) * g.d[j] + 1)) / g.s[j] + 1;
  }
  *out_sizes = {c.x[0], c.m};
  for (size_t i = 0; i < ns; ++i) out_sizes->push_back(g.out[3 - ns + i]);
  const int64_t N = c.x[0], C = c.x[1], M = c.m, cg = C / c.group, mg = M / c.group;
  const std::vector<double> xv = x.doubles(), wv = w.doubles();
  const std::vector<double> bv = b ? b->doubles() : std::vector<double>();
  ref->clear();
  mag->clear();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t od = 0; od < g.out[0]; ++od)
        for (int64_t oh = 0; oh < g.out[1]; ++oh)
          for (int64_t ow = 0; ow < g.out[2]; ++ow) {
            double acc = b ? bv[m] : 0.0, sum_abs = b ? std::fabs(bv[m]) : 0.0;
            const int64_t grp = m / mg;
            for (int64_t cl = 0; cl < cg; ++cl) {
              const int64_t ch = grp * cg + cl;
              for (int64_t kd = 0; kd < g.k[0]; ++kd)
                for (int64_t kh = 0; kh < g.k[1]; ++kh)
                  for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                    const int64_t iz = od * g.s[0] - g.pb[0] + kd * g.d[0];
                    const int64_t iy = oh * g.s[1] - g.pb[1] + kh * g.d[1];
                    const int64_t ix = ow * g.s[2] - g.pb[2] + kw * g.d[2];
                    if (iz < 0 || iz >= g.in[0] || iy < 0 || iy >= g.in[1] || ix < 0 ||
                        ix >= g.in[2])
                      continue;
                    const double xe = xv[(((n * C + ch) * g.in[0] + iz) * g.in[1] + iy) * g.in[2] + ix];
                    const double we = wv[(((m * cg + cl) * g.k[0] + kd) * g.k[1] + kh) * g.k[2] + kw];
                    acc += xe * we;
                    sum_abs += std::fabs(xe * we);
                  }
            }
            ref->push_back(acc);
            mag->push_back(sum_abs);
          }
}

NodeSpec conv_node(const ConvCase& c) {
  NodeSpec spec(OpType::Conv, "conv1");
  if (!c.strides.empty()) spec.attr(attr_ints("strides", c.strides));
  if (!c.dilations.empty()) spec.attr(attr_ints("dilations", c.dilations));
  if (!c.pads.empty()) spec.attr(attr_ints("pads", c.pads));
  if (c.group != 1) spec.attr(attr_int("group", c.group));
  return spec;
}

void check_conv(const ConvCase& c, uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << "conv case seed " << seed);
  TestTensor x = TestTensor::random(c.x, seed);
  std::vector<int64_t> wsizes = {c.m, c.x[1] / c.group};
  wsizes.insert(wsizes.end(), c.kernel.begin(), c.kernel.end());
  TestTensor w = TestTensor::random(wsizes, seed + 1);
  TestTensor b = TestTensor::random({c.m}, seed + 2);
  std::vector<int64_t> out_sizes;
  std::vector<double> ref, mag;
  conv_reference(c, x, w, c.bias ? &b : nullptr, &out_sizes, &ref, &mag);
  TestTensor y(ScalarType::Float32, out_sizes);
  NodeSpec spec = conv_node(c);
  ASSERT_TRUE(run_op(spec.node(), {&x, &w, c.bias ? &b : nullptr}, {&y}).is_ok());
  expect_close(y.floats(), ref, mag);
}

TEST(Conv, HandComputed2x2) {
  // x = 1..9 (3x3), w = [[1, 0], [0, -1]]: each output is x[i][j] - x[i+1][j+1] = -4, plus bias.
  TestTensor x = TestTensor::f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  TestTensor w = TestTensor::f32({1, 1, 2, 2}, {1, 0, 0, -1});
  TestTensor b = TestTensor::f32({1}, {0.5f});
  TestTensor y(ScalarType::Float32, {1, 1, 2, 2});
  NodeSpec spec(OpType::Conv);
  ASSERT_TRUE(run_op(spec.node(), {&x, &w, &b}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{-3.5f, -3.5f, -3.5f, -3.5f}));
}

TEST(Conv, HandComputedPaddedStrided) {
  // 2 input channels, 3x3 ones kernel, stride 2, pad 1: corner windows see 4 inputs per channel.
  TestTensor x = TestTensor::f32({1, 2, 3, 3}, std::vector<float>(18, 1.0f));
  TestTensor w = TestTensor::f32({1, 2, 3, 3}, std::vector<float>(18, 1.0f));
  TestTensor y(ScalarType::Float32, {1, 1, 2, 2});
  NodeSpec spec(OpType::Conv);
  spec.attr(attr_ints("strides", {2, 2})).attr(attr_ints("pads", {1, 1, 1, 1}));
  ASSERT_TRUE(run_op(spec.node(), {&x, &w}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{8, 8, 8, 8}));
}

TEST(Conv, Im2colSquare) { check_conv({{1, 3, 7, 7}, 4, {3, 3}, {}, {}, {1, 1, 1, 1}}, 1); }

TEST(Conv, NonSquareKernelStridesDilationsAsymmetricPadsGroups) {
  check_conv({{2, 4, 9, 8}, 6, {3, 2}, {2, 1}, {1, 2}, {1, 0, 2, 1}, 2}, 2);
}

TEST(Conv, Depthwise) { check_conv({{1, 6, 8, 8}, 6, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}, 6}, 3); }

TEST(Conv, DepthwiseMultiplierDilated) {
  check_conv({{2, 3, 7, 6}, 6, {3, 3}, {}, {2, 2}, {2, 2, 2, 2}, 3}, 4);
}

TEST(Conv, DepthwiseStridedOddSizesNoBias) {
  ConvCase c{{1, 5, 9, 7}, 5, {3, 5}, {2, 3}, {}, {0, 2, 1, 1}, 5};
  c.bias = false;
  check_conv(c, 5);
}

TEST(Conv, SingleInputChannelManyOutputs) { check_conv({{2, 1, 6, 6}, 4, {3, 3}}, 6); }

TEST(Conv, Pointwise) { check_conv({{2, 8, 5, 5}, 5, {1, 1}}, 7); }

TEST(Conv, PointwiseGrouped) { check_conv({{1, 8, 3, 5}, 4, {1, 1}, {}, {}, {}, 2}, 8); }

TEST(Conv, PointwiseStridedUsesIm2col) { check_conv({{1, 6, 7, 7}, 3, {1, 1}, {2, 2}}, 9); }

TEST(Conv, CrossesGemmPanelBlocks) {
  // K = 32 * 9 = 288 > 256 and 20 * 20 = 400 output positions > 256; M = 10 is not a multiple
  // of the register block.
  check_conv({{1, 32, 20, 20}, 10, {3, 3}, {}, {}, {1, 1, 1, 1}}, 10);
}

TEST(Conv, KernelCoversPaddedInput) { check_conv({{1, 2, 3, 4}, 3, {5, 4}, {}, {}, {1, 0, 1, 0}}, 11); }

TEST(Conv, OneDimensional) { check_conv({{2, 3, 11}, 4, {3}, {2}, {2}, {1, 2}}, 12); }

TEST(Conv, OneDimensionalDepthwise) { check_conv({{1, 4, 10}, 4, {3}, {1}, {1}, {1, 1}, 4}, 13); }

TEST(Conv, ThreeDimensional) {
  check_conv({{1, 2, 4, 5, 6}, 3, {2, 3, 2}, {1, 2, 1}, {}, {1, 0, 1, 0, 1, 1}}, 14);
}

TEST(Conv, ThreeDimensionalDepthwise) {
  check_conv({{1, 3, 4, 4, 4}, 3, {3, 3, 3}, {}, {}, {1, 1, 1, 1, 1, 1}, 3}, 15);
}

TEST(Conv, FusedRelu) {
  ConvCase c{{1, 3, 6, 6}, 4, {3, 3}, {}, {}, {1, 1, 1, 1}};
  TestTensor x = TestTensor::random(c.x, 20);
  TestTensor w = TestTensor::random({4, 3, 3, 3}, 21);
  TestTensor b = TestTensor::random({4}, 22);
  std::vector<int64_t> out;
  std::vector<double> ref, mag;
  conv_reference(c, x, w, &b, &out, &ref, &mag);
  for (double& r : ref) r = r < 0 ? 0 : r;
  TestTensor y(ScalarType::Float32, out);
  NodeSpec spec = conv_node(c);
  spec.activation(fb::Activation::Relu);
  ASSERT_TRUE(run_op(spec.node(), {&x, &w, &b}, {&y}).is_ok());
  expect_close(y.floats(), ref, mag);
}

TEST(Conv, FusedClipOnEveryPath) {
  const ConvCase cases[] = {
      {{1, 4, 6, 6}, 4, {3, 3}, {}, {}, {1, 1, 1, 1}, 4},  // direct
      {{1, 4, 6, 6}, 3, {1, 1}},                           // pointwise
      {{1, 4, 6, 6}, 3, {3, 3}},                           // im2col
  };
  uint32_t seed = 30;
  for (const ConvCase& c : cases) {
    TestTensor x = TestTensor::random(c.x, seed++, -2, 2);
    std::vector<int64_t> wsizes = {c.m, c.x[1] / c.group};
    wsizes.insert(wsizes.end(), c.kernel.begin(), c.kernel.end());
    TestTensor w = TestTensor::random(wsizes, seed++);
    TestTensor b = TestTensor::random({c.m}, seed++);
    std::vector<int64_t> out;
    std::vector<double> ref, mag;
    conv_reference(c, x, w, &b, &out, &ref, &mag);
    for (double& r : ref) r = r < -0.5 ? -0.5 : (r > 0.75 ? 0.75 : r);
    TestTensor y(ScalarType::Float32, out);
    NodeSpec spec = conv_node(c);
    spec.activation(fb::Activation::Clip, -0.5f, 0.75f);
    ASSERT_TRUE(run_op(spec.node(), {&x, &w, &b}, {&y}).is_ok());
    expect_close(y.floats(), ref, mag);
  }
}

TEST(Conv, KernelShapeAttributeMustMatchWeights) {
  TestTensor x = TestTensor::random({1, 1, 4, 4}, 1);
  TestTensor w = TestTensor::random({1, 1, 3, 3}, 2);
  TestTensor y(ScalarType::Float32, {1, 1, 2, 2});
  NodeSpec ok(OpType::Conv);
  ok.attr(attr_ints("kernel_shape", {3, 3}));
  EXPECT_TRUE(run_op(ok.node(), {&x, &w}, {&y}).is_ok());
  NodeSpec bad(OpType::Conv);
  bad.attr(attr_ints("kernel_shape", {2, 3}));
  expect_error(prepare_op(bad.node(), {&x, &w}, {&y}), Error::InvalidProgram, "kernel_shape");
}

TEST(Conv, ZeroBatch) {
  TestTensor x(ScalarType::Float32, {0, 2, 4, 4});
  TestTensor w = TestTensor::random({3, 2, 3, 3}, 1);
  TestTensor y(ScalarType::Float32, {0, 3, 2, 2});
  NodeSpec spec(OpType::Conv);
  EXPECT_TRUE(run_op(spec.node(), {&x, &w}, {&y}).is_ok());
}

// ---- ConvTranspose -----------------------------------------------------------------------------

struct ConvTCase {
  std::vector<int64_t> x;
  int64_t m;
  std::vector<int64_t> kernel = {}, strides = {}, dilations = {}, pads = {}, output_padding = {};
  int64_t group = 1;
  bool bias = true;
};

void conv_transpose_reference(const ConvTCase& c, const TestTensor& x, const TestTensor& w,
                              const TestTensor* b, std::vector<int64_t>* out_sizes,
                              std::vector<double>* ref, std::vector<double>* mag) {
  const size_t ns = c.kernel.size();
  std::vector<int64_t> in(c.x.begin() + 2, c.x.end());
  Geo3 g = lift(in, c.kernel, c.strides, c.dilations, c.pads);
  int64_t op[3] = {0, 0, 0};
  for (size_t i = 0; i < ns && !c.output_padding.empty(); ++i) op[3 - ns + i] = c.output_padding[i];
  for (int j = 0; j < 3; ++j) {
    g.out[j] = g.s[j] * (g.in[j] - 1) + op[j] + (g.k[j] - 1) * g.d[j] + 1 - g.pb[j] - g.pe[j];
  }
  *out_sizes = {c.x[0], c.m};
  for (size_t i = 0; i < ns; ++i) out_sizes->push_back(g.out[3 - ns + i]);
  const int64_t N = c.x[0], C = c.x[1], M = c.m, cg = C / c.group, mg = M / c.group;
  const int64_t out_vol = g.out[0] * g.out[1] * g.out[2];
  const std::vector<double> xv = x.doubles(), wv = w.doubles();
  ref->assign(static_cast<size_t>(N * M * out_vol), 0.0);
  mag->assign(ref->size(), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t i = 0; i < out_vol; ++i) {
        (*ref)[(n * M + m) * out_vol + i] = b ? b->doubles()[m] : 0.0;
        (*mag)[(n * M + m) * out_vol + i] = b ? std::fabs(b->doubles()[m]) : 0.0;
      }
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ch = 0; ch < C; ++ch) {
      const int64_t grp = ch / cg;
      for (int64_t ml = 0; ml < mg; ++ml) {
        const int64_t m = grp * mg + ml;
        for (int64_t iz = 0; iz < g.in[0]; ++iz)
          for (int64_t iy = 0; iy < g.in[1]; ++iy)
            for (int64_t ix = 0; ix < g.in[2]; ++ix)
              for (int64_t kd = 0; kd < g.k[0]; ++kd)
                for (int64_t kh = 0; kh < g.k[1]; ++kh)
                  for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                    const int64_t oz = iz * g.s[0] - g.pb[0] + kd * g.d[0];
                    const int64_t oy = iy * g.s[1] - g.pb[1] + kh * g.d[1];
                    const int64_t ox = ix * g.s[2] - g.pb[2] + kw * g.d[2];
                    if (oz < 0 || oz >= g.out[0] || oy < 0 || oy >= g.out[1] || ox < 0 ||
                        ox >= g.out[2])
                      continue;
                    const double xe =
                        xv[(((n * C + ch) * g.in[0] + iz) * g.in[1] + iy) * g.in[2] + ix];
                    const double we =
                        wv[(((ch * mg + ml) * g.k[0] + kd) * g.k[1] + kh) * g.k[2] + kw];
                    const int64_t o = (n * M + m) * out_vol + (oz * g.out[1] + oy) * g.out[2] + ox;
                    (*ref)[o] += xe * we;
                    (*mag)[o] += std::fabs(xe * we);
                  }
      }
    }
}

void check_conv_transpose(const ConvTCase& c, uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << "conv transpose case seed " << seed);
  TestTensor x = TestTensor::random(c.x, seed);
  std::vector<int64_t> wsizes = {c.x[1], c.m / c.group};
  wsizes.insert(wsizes.end(), c.kernel.begin(), c.kernel.end());
  TestTensor w = TestTensor::random(wsizes, seed + 1);
  TestTensor b = TestTensor::random({c.m}, seed + 2);
  std::vector<int64_t> out_sizes;
  std::vector<double> ref, mag;
  conv_transpose_reference(c, x, w, c.bias ? &b : nullptr, &out_sizes, &ref, &mag);
  TestTensor y(ScalarType::Float32, out_sizes);
  NodeSpec spec(OpType::ConvTranspose, "deconv");
  if (!c.strides.empty()) spec.attr(attr_ints("strides", c.strides));
  if (!c.dilations.empty()) spec.attr(attr_ints("dilations", c.dilations));
  if (!c.pads.empty()) spec.attr(attr_ints("pads", c.pads));
  if (!c.output_padding.empty()) spec.attr(attr_ints("output_padding", c.output_padding));
  if (c.group != 1) spec.attr(attr_int("group", c.group));
  Status st = run_op(spec.node(), {&x, &w, c.bias ? &b : nullptr}, {&y});
  ASSERT_TRUE(st.is_ok()) << st.message();
  expect_close(y.floats(), ref, mag);
}

TEST(ConvTranspose, HandComputed) {
  // One input channel [1, 2], kernel [1, 1], stride 2: y = [1, 1, 2, 2].
  TestTensor x = TestTensor::f32({1, 1, 2}, {1, 2});
  TestTensor w = TestTensor::f32({1, 1, 2}, {1, 1});
  TestTensor y(ScalarType::Float32, {1, 1, 4});
  NodeSpec spec(OpType::ConvTranspose);
  spec.attr(attr_ints("strides", {2}));
  ASSERT_TRUE(run_op(spec.node(), {&x, &w}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{1, 1, 2, 2}));
}

TEST(ConvTranspose, StridedPaddedOutputPadding) {
  check_conv_transpose({{1, 2, 3, 3}, 3, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}, {1, 1}}, 40);
}

TEST(ConvTranspose, Grouped) { check_conv_transpose({{2, 4, 4, 3}, 6, {2, 3}, {1, 2}, {}, {}, {}, 2}, 41); }

TEST(ConvTranspose, DilatedAsymmetricPadsNoBias) {
  ConvTCase c{{1, 3, 4, 5}, 2, {3, 2}, {2, 1}, {2, 3}, {1, 0, 2, 1}, {}};
  c.bias = false;
  check_conv_transpose(c, 42);
}

TEST(ConvTranspose, OneDimensional) { check_conv_transpose({{2, 3, 7}, 4, {4}, {3}, {}, {1, 2}, {}}, 43); }

TEST(ConvTranspose, ThreeDimensional) {
  check_conv_transpose({{1, 2, 3, 2, 3}, 2, {2, 2, 3}, {2, 1, 2}, {}, {0, 1, 0, 1, 0, 1}, {}}, 44);
}

TEST(ConvTranspose, LargeTiles) {
  // 40 * 9 = 360 weight rows and 600 input positions: several column tiles.
  check_conv_transpose({{1, 16, 20, 30}, 40, {3, 3}, {1, 1}, {}, {1, 1, 1, 1}, {}}, 45);
}

TEST(ConvTranspose, OutputShapeAttributeDerivesPads) {
  // in 3, stride 2, kernel 3: full output 7; output_shape 6 gives total padding 1 = (1, 0).
  TestTensor x = TestTensor::random({1, 1, 3}, 50);
  TestTensor w = TestTensor::random({1, 1, 3}, 51);
  ConvTCase c{{1, 1, 3}, 1, {3}, {2}, {}, {1, 0}, {}};
  c.bias = false;
  std::vector<int64_t> out;
  std::vector<double> ref, mag;
  conv_transpose_reference(c, x, w, nullptr, &out, &ref, &mag);
  ASSERT_EQ(out, (std::vector<int64_t>{1, 1, 6}));
  TestTensor y(ScalarType::Float32, out);
  NodeSpec spec(OpType::ConvTranspose);
  spec.attr(attr_ints("strides", {2})).attr(attr_ints("output_shape", {6}));
  ASSERT_TRUE(run_op(spec.node(), {&x, &w}, {&y}).is_ok());
  expect_close(y.floats(), ref, mag);
}

TEST(ConvTranspose, ValidatesOutputShape) {
  TestTensor x = TestTensor::random({1, 2, 3, 3}, 1);
  TestTensor w = TestTensor::random({2, 4, 3, 3}, 2);
  TestTensor y(ScalarType::Float32, {1, 4, 6, 6});
  NodeSpec spec(OpType::ConvTranspose, "up1");
  spec.attr(attr_ints("strides", {2, 2})).attr(attr_ints("pads", {1, 1, 1, 1}));
  expect_error(prepare_op(spec.node(), {&x, &w}, {&y}), Error::ShapeMismatch,
               "ConvTranspose node 'up1': output shape [1, 4, 6, 6] does not match computed "
               "[1, 4, 5, 5]");
}

TEST(ConvTranspose, FusedRelu) {
  ConvTCase c{{1, 2, 3, 3}, 2, {2, 2}, {2, 2}, {}, {}, {}};
  TestTensor x = TestTensor::random(c.x, 60);
  TestTensor w = TestTensor::random({2, 2, 2, 2}, 61);
  TestTensor b = TestTensor::random({2}, 62);
  std::vector<int64_t> out;
  std::vector<double> ref, mag;
  conv_transpose_reference(c, x, w, &b, &out, &ref, &mag);
  for (double& r : ref) r = r < 0 ? 0 : r;
  TestTensor y(ScalarType::Float32, out);
  NodeSpec spec(OpType::ConvTranspose);
  spec.attr(attr_ints("strides", {2, 2})).activation(fb::Activation::Relu);
  ASSERT_TRUE(run_op(spec.node(), {&x, &w, &b}, {&y}).is_ok());
  expect_close(y.floats(), ref, mag);
}

}  // namespace
}  // namespace tessera::kernel_test
