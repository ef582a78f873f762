// Float32 elementwise functions and activations against double-precision references, and the
// fused activation (in-loop and through the generic wrapper).
#include <cmath>
#include <functional>

#include "kernel_test_util.h"

namespace tessera::kernel_test {
namespace {

using UnaryRef = std::function<double(double)>;

void check_unary(NodeSpec& spec, UnaryRef f, float lo, float hi, uint32_t seed,
                 std::vector<int64_t> sizes = {3, 5, 7}) {
  TestTensor x = TestTensor::random(sizes, seed, lo, hi);
  TestTensor y(ScalarType::Float32, sizes);
  Status st = run_op(spec.node(), {&x}, {&y});
  ASSERT_TRUE(st.is_ok()) << st.message();
  std::vector<double> ref;
  for (double v : x.doubles()) ref.push_back(f(v));
  expect_close(y.floats(), ref);
}

void check_unary(OpType op, UnaryRef f, float lo, float hi, uint32_t seed) {
  SCOPED_TRACE(fb::EnumNameOpType(op));
  NodeSpec spec(op, "act");
  check_unary(spec, f, lo, hi, seed);
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

TEST(Unary, Relu) { check_unary(OpType::Relu, [](double x) { return x < 0 ? 0 : x; }, -3, 3, 1); }
TEST(Unary, Sigmoid) { check_unary(OpType::Sigmoid, sigmoid, -20, 20, 2); }
TEST(Unary, Tanh) { check_unary(OpType::Tanh, [](double x) { return std::tanh(x); }, -5, 5, 3); }
TEST(Unary, Erf) { check_unary(OpType::Erf, [](double x) { return std::erf(x); }, -3, 3, 4); }
TEST(Unary, Sqrt) { check_unary(OpType::Sqrt, [](double x) { return std::sqrt(x); }, 0, 100, 5); }
TEST(Unary, Exp) { check_unary(OpType::Exp, [](double x) { return std::exp(x); }, -20, 20, 6); }
TEST(Unary, Neg) { check_unary(OpType::Neg, [](double x) { return -x; }, -3, 3, 7); }
TEST(Unary, Reciprocal) { check_unary(OpType::Reciprocal, [](double x) { return 1 / x; }, 0.1f, 9, 8); }
TEST(Unary, Abs) { check_unary(OpType::Abs, [](double x) { return std::fabs(x); }, -3, 3, 9); }

TEST(Unary, HardSwish) {
  check_unary(OpType::HardSwish,
              [](double x) { return x * std::max(0.0, std::min(1.0, x / 6 + 0.5)); }, -8, 8, 10);
}

TEST(Unary, HardSwishNearMinusThree) {
  // x / 6 + 0.5 cancels near x = -3; the kernel must still be accurate there.
  TestTensor x = TestTensor::f32({4}, {-2.9999f, -2.99f, -3.0f, -3.0001f});
  TestTensor y(ScalarType::Float32, {4});
  NodeSpec spec(OpType::HardSwish);
  ASSERT_TRUE(run_op(spec.node(), {&x}, {&y}).is_ok());
  std::vector<double> ref;
  for (double v : x.doubles()) ref.push_back(v * std::max(0.0, std::min(1.0, (v + 3) / 6)));
  expect_close(y.floats(), ref);
}

TEST(Unary, HardSigmoidDefaults) {
  check_unary(OpType::HardSigmoid,
              [](double x) { return std::max(0.0, std::min(1.0, 0.2 * x + 0.5)); }, -4, 4, 11);
}

TEST(Unary, HardSigmoidAttributes) {
  NodeSpec spec(OpType::HardSigmoid);
  spec.attr(attr_float("alpha", 0.5f)).attr(attr_float("beta", 0.25f));
  check_unary(spec, [](double x) { return std::max(0.0, std::min(1.0, 0.5 * x + 0.25)); }, -3, 3, 12);
}

TEST(Unary, LeakyReluDefaultAndAlpha) {
  NodeSpec dflt(OpType::LeakyRelu);
  check_unary(dflt, [](double x) { return x < 0 ? 0.01f * x : x; }, -3, 3, 13);
  NodeSpec custom(OpType::LeakyRelu);
  custom.attr(attr_float("alpha", 0.3f));
  check_unary(custom, [](double x) { return x < 0 ? 0.3f * x : x; }, -3, 3, 14);
}

TEST(Unary, Clip) {
  NodeSpec both(OpType::Clip);
  both.attr(attr_float("min", -0.5f)).attr(attr_float("max", 0.25f));
  check_unary(both, [](double x) { return std::min(std::max(x, -0.5), 0.25); }, -1, 1, 15);
  NodeSpec min_only(OpType::Clip);
  min_only.attr(attr_float("min", 0.0f));
  check_unary(min_only, [](double x) { return std::max(x, 0.0); }, -1, 1, 16);
  NodeSpec max_only(OpType::Clip);
  max_only.attr(attr_float("max", 0.0f));
  check_unary(max_only, [](double x) { return std::min(x, 0.0); }, -1, 1, 17);
  NodeSpec none(OpType::Clip);
  check_unary(none, [](double x) { return x; }, -1, 1, 18);
}

TEST(Unary, ClipMinAboveMaxGivesMax) {
  TestTensor x = TestTensor::f32({3}, {-1, 0.5f, 3});
  TestTensor y(ScalarType::Float32, {3});
  NodeSpec spec(OpType::Clip);
  spec.attr(attr_float("min", 2.0f)).attr(attr_float("max", 1.0f));
  ASSERT_TRUE(run_op(spec.node(), {&x}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{1, 1, 1}));
}

TEST(Unary, GeluExact) {
  NodeSpec spec(OpType::Gelu);
  check_unary(spec, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, -6, 6, 19);
  NodeSpec named(OpType::Gelu);
  named.attr(attr_string("approximate", "none"));
  check_unary(named, [](double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }, -6, 6, 20);
}

TEST(Unary, Mish) {
  NodeSpec spec(OpType::Mish);
  check_unary(
      spec, [](double x) { return x * std::tanh(std::log1p(std::exp(x))); }, -8, 8, 21);
}

TEST(Unary, Elu) {
  NodeSpec spec(OpType::Elu);  // alpha: the table's default, 1
  check_unary(
      spec, [](double x) { return x < 0 ? std::expm1(x) : x; }, -8, 8, 23);
  NodeSpec scaled(OpType::Elu);
  scaled.attr(attr_float("alpha", 0.25f));
  check_unary(
      scaled, [](double x) { return x < 0 ? 0.25 * std::expm1(x) : x; }, -8, 8, 24);
}

TEST(Unary, MishLargeInputsStayFinite) {
  TestTensor x = TestTensor::f32({4}, {-200.0f, 30.0f, 100.0f, 1e30f});
  TestTensor y(ScalarType::Float32, {4});
  ASSERT_TRUE(run_op(NodeSpec(OpType::Mish).node(), {&x}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{-0.0f, 30.0f, 100.0f, 1e30f}));
}

TEST(Unary, GeluTanh) {
  NodeSpec spec(OpType::Gelu);
  spec.attr(attr_string("approximate", "tanh"));
  check_unary(spec,
              [](double x) {
                const double u = std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
                return 0.5 * x * (1 + std::tanh(u));
              },
              -6, 6, 21);
}

TEST(Unary, ScalarAndEmpty) {
  TestTensor s = TestTensor::f32({}, {-2});
  TestTensor ys(ScalarType::Float32, {});
  NodeSpec spec(OpType::Abs);
  ASSERT_TRUE(run_op(spec.node(), {&s}, {&ys}).is_ok());
  EXPECT_EQ(ys.floats(), (std::vector<float>{2}));
  TestTensor e(ScalarType::Float32, {2, 0});
  TestTensor ye(ScalarType::Float32, {2, 0});
  EXPECT_TRUE(run_op(spec.node(), {&e}, {&ye}).is_ok());
}

TEST(Unary, SigmoidSaturatesWithoutNaN) {
  TestTensor x = TestTensor::f32({4}, {-1000, -100, 100, 1000});
  TestTensor y(ScalarType::Float32, {4});
  NodeSpec spec(OpType::Sigmoid);
  ASSERT_TRUE(run_op(spec.node(), {&x}, {&y}).is_ok());
  EXPECT_EQ(y.at(0), 0.0f);
  EXPECT_GT(y.at(1), 0.0f);
  EXPECT_EQ(y.at(2), 1.0f);
  EXPECT_EQ(y.at(3), 1.0f);
}

// ---- fused activations -------------------------------------------------------------------------

TEST(FusedActivation, InsideUnaryLoop) {
  NodeSpec spec(OpType::Tanh);
  spec.activation(fb::Activation::Clip, -0.5f, 0.5f);
  check_unary(spec, [](double x) { return std::min(std::max(std::tanh(x), -0.5), 0.5); }, -2, 2, 30);
}

TEST(FusedActivation, GenericWrapperOnDataMovementOp) {
  TestTensor x = TestTensor::f32({2, 3}, {-1, 2, -3, 4, -5, 6});
  TestTensor y(ScalarType::Float32, {3, 2});
  NodeSpec spec(OpType::Transpose);
  spec.activation(fb::Activation::Relu);
  ASSERT_TRUE(run_op(spec.node(), {&x}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{0, 4, 2, 0, 0, 6}));
}

TEST(FusedActivation, GenericWrapperOnSoftmaxAndReduce) {
  TestTensor x = TestTensor::f32({1, 4}, {0, 0, 0, 0});
  TestTensor y(ScalarType::Float32, {1, 4});
  NodeSpec softmax(OpType::Softmax);
  softmax.activation(fb::Activation::Clip, 0.0f, 0.2f);
  ASSERT_TRUE(run_op(softmax.node(), {&x}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{0.2f, 0.2f, 0.2f, 0.2f}));
  TestTensor a = TestTensor::f32({2, 2}, {-1, -2, 3, 4});
  TestTensor r(ScalarType::Float32, {2, 1});
  NodeSpec sum(OpType::ReduceSum);
  sum.attr(attr_ints("axes", {1})).activation(fb::Activation::Relu);
  ASSERT_TRUE(run_op(sum.node(), {&a}, {&r}).is_ok());
  EXPECT_EQ(r.floats(), (std::vector<float>{0, 7}));
}

TEST(FusedActivation, PoolAndBatchNorm) {
  TestTensor x = TestTensor::f32({1, 1, 2, 2}, {-4, -3, -2, -1});
  TestTensor y(ScalarType::Float32, {1, 1, 1, 1});
  NodeSpec pool(OpType::MaxPool);
  pool.attr(attr_ints("kernel_shape", {2, 2})).activation(fb::Activation::Relu);
  ASSERT_TRUE(run_op(pool.node(), {&x}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{0}));
  TestTensor scale = TestTensor::f32({1}, {1}), bias = TestTensor::f32({1}, {0});
  TestTensor mean = TestTensor::f32({1}, {0}), var = TestTensor::f32({1}, {1});
  TestTensor z(ScalarType::Float32, {1, 1, 2, 2});
  NodeSpec bn(OpType::BatchNormalization);
  bn.attr(attr_float("epsilon", 0.0f)).activation(fb::Activation::Clip, -3.5f, -1.5f);
  ASSERT_TRUE(run_op(bn.node(), {&x, &scale, &bias, &mean, &var}, {&z}).is_ok());
  EXPECT_EQ(z.floats(), (std::vector<float>{-3.5f, -3, -2, -1.5f}));
}

}  // namespace
}  // namespace tessera::kernel_test
