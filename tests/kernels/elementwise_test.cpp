// Broadcasting elementwise ops (Add Sub Mul Div Pow Min Max, Equal Less Greater, Where, PRelu)
// and Cast.
#include <cmath>
#include <functional>

#include "kernel_test_util.h"

namespace tessera::kernel_test {
namespace {

std::vector<int64_t> broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i + a.size() >= r ? a[i + a.size() - r] : 1;
    const int64_t db = i + b.size() >= r ? b[i + b.size() - r] : 1;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// Index into an operand of `shape` for output element `i` of `out` (numpy broadcasting).
int64_t source_index(int64_t i, const std::vector<int64_t>& out, const std::vector<int64_t>& shape) {
  int64_t off = 0, stride = 1;
  for (int64_t d = static_cast<int64_t>(out.size()) - 1; d >= 0; --d) {
    const int64_t idx = i % out[d];
    i /= out[d];
    const int64_t sd = d - static_cast<int64_t>(out.size() - shape.size());
    if (sd >= 0) {
      if (shape[sd] != 1) off += idx * stride;
      stride *= shape[sd];
    }
  }
  return off;
}

int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

using BinaryRef = std::function<double(double, double)>;

void check_binary(OpType op, std::vector<int64_t> as, std::vector<int64_t> bs, BinaryRef f,
                  uint32_t seed, float lo = -2.0f, float hi = 2.0f) {
  SCOPED_TRACE(::testing::Message() << "op " << fb::EnumNameOpType(op) << " seed " << seed);
  TestTensor a = TestTensor::random(as, seed, lo, hi);
  TestTensor b = TestTensor::random(bs, seed + 1, lo, hi);
  const std::vector<int64_t> out = broadcast(as, bs);
  std::vector<double> ref;
  const std::vector<double> av = a.doubles(), bv = b.doubles();
  for (int64_t i = 0; i < numel(out); ++i) {
    ref.push_back(f(av[source_index(i, out, as)], bv[source_index(i, out, bs)]));
  }
  TestTensor y(ScalarType::Float32, out);
  NodeSpec spec(op, "bin");
  Status st = run_op(spec.node(), {&a, &b}, {&y});
  ASSERT_TRUE(st.is_ok()) << st.message();
  expect_close(y.floats(), ref);
}

const BinaryRef kAdd = [](double a, double b) { return a + b; };
const BinaryRef kSub = [](double a, double b) { return a - b; };
const BinaryRef kMul = [](double a, double b) { return a * b; };
const BinaryRef kDiv = [](double a, double b) { return a / b; };
const BinaryRef kMin = [](double a, double b) { return std::min(a, b); };
const BinaryRef kMax = [](double a, double b) { return std::max(a, b); };

// One float32 rounding per element: within 1e-5 relative of the double result, even when a sum
// cancels (the float inputs are exact in double).
TEST(Binary, AddSameShape) { check_binary(OpType::Add, {3, 5}, {3, 5}, kAdd, 1, 1, 2); }
TEST(Binary, AddRowBroadcast) { check_binary(OpType::Add, {4, 3, 5}, {5}, kAdd, 2, 1, 2); }
TEST(Binary, AddChannelBiasNCHW) { check_binary(OpType::Add, {2, 3, 4, 5}, {3, 1, 1}, kAdd, 3, 1, 2); }
TEST(Binary, AddBothSidesBroadcast) { check_binary(OpType::Add, {4, 1, 3}, {1, 5, 1}, kAdd, 4, 1, 2); }
TEST(Binary, AddScalar) { check_binary(OpType::Add, {}, {2, 3}, kAdd, 5, 1, 2); }
TEST(Binary, SubMiddleBroadcast) { check_binary(OpType::Sub, {2, 1, 4}, {2, 3, 4}, kSub, 6, 1, 2); }
TEST(Binary, SubScalarLeft) { check_binary(OpType::Sub, {1}, {3, 7}, kSub, 7, 3, 4); }
TEST(Binary, Mul) { check_binary(OpType::Mul, {2, 3, 4}, {3, 1}, kMul, 8); }
TEST(Binary, Div) { check_binary(OpType::Div, {5, 6}, {6}, kDiv, 9, 0.5f, 2.0f); }
TEST(Binary, Pow) {
  check_binary(OpType::Pow, {3, 4}, {4}, [](double a, double b) { return std::pow(a, b); }, 10,
               0.1f, 3.0f);
}
TEST(Binary, Min) { check_binary(OpType::Min, {3, 1, 4}, {5, 1}, kMin, 11); }
TEST(Binary, Max) { check_binary(OpType::Max, {6}, {2, 6}, kMax, 12); }
TEST(Binary, SizeOneAndOddDims) { check_binary(OpType::Mul, {1, 7, 1, 3}, {7, 5, 1}, kMul, 13); }
TEST(Binary, HighRank) { check_binary(OpType::Add, {2, 1, 2, 1, 2, 1, 2, 3}, {2, 1, 2, 1, 3}, kAdd, 14, 1, 2); }

TEST(Binary, HandComputedDivAndPow) {
  TestTensor a = TestTensor::f32({2, 2}, {1, 8, 9, 16});
  TestTensor b = TestTensor::f32({2}, {2, 0.5f});
  TestTensor y(ScalarType::Float32, {2, 2});
  NodeSpec div(OpType::Div);
  ASSERT_TRUE(run_op(div.node(), {&a, &b}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{0.5f, 16, 4.5f, 32}));
  NodeSpec pow(OpType::Pow);
  ASSERT_TRUE(run_op(pow.node(), {&a, &b}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{1, std::sqrt(8.0f), 81, 4}));
}

TEST(Binary, EmptyBroadcast) {
  TestTensor a(ScalarType::Float32, {0, 3});
  TestTensor b = TestTensor::f32({3}, {1, 2, 3});
  TestTensor y(ScalarType::Float32, {0, 3});
  NodeSpec spec(OpType::Add);
  EXPECT_TRUE(run_op(spec.node(), {&a, &b}, {&y}).is_ok());
}

TEST(Binary, VariadicMinMax) {
  TestTensor a = TestTensor::f32({2, 3}, {1, 5, -2, 0, 7, 3});
  TestTensor b = TestTensor::f32({3}, {2, 2, 2});
  TestTensor c = TestTensor::f32({2, 1}, {0, 4});
  TestTensor y(ScalarType::Float32, {2, 3});
  NodeSpec mx(OpType::Max);
  ASSERT_TRUE(run_op(mx.node(), {&a, &b, &c}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{2, 5, 2, 4, 7, 4}));
  NodeSpec mn(OpType::Min);
  ASSERT_TRUE(run_op(mn.node(), {&a, &b, &c}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{0, 0, -2, 0, 2, 2}));
}

TEST(Binary, SingleInputMaxIsIdentity) {
  TestTensor a = TestTensor::f32({3}, {1, -5, 2});
  TestTensor y(ScalarType::Float32, {3});
  NodeSpec spec(OpType::Max);
  ASSERT_TRUE(run_op(spec.node(), {&a}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{1, -5, 2}));
}

TEST(Binary, MinMaxPropagateNaN) {
  TestTensor a = TestTensor::f32({2}, {NAN, 1});
  TestTensor b = TestTensor::f32({2}, {0, NAN});
  TestTensor y(ScalarType::Float32, {2});
  NodeSpec spec(OpType::Min);
  ASSERT_TRUE(run_op(spec.node(), {&a, &b}, {&y}).is_ok());
  EXPECT_TRUE(std::isnan(y.at(0)));
  EXPECT_TRUE(std::isnan(y.at(1)));
}

TEST(Binary, FusedReluAndClip) {
  TestTensor a = TestTensor::f32({4}, {-3, -1, 1, 3});
  TestTensor b = TestTensor::f32({1}, {0.5f});
  TestTensor y(ScalarType::Float32, {4});
  NodeSpec relu(OpType::Add);
  relu.activation(fb::Activation::Relu);
  ASSERT_TRUE(run_op(relu.node(), {&a, &b}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{0, 0, 1.5f, 3.5f}));
  NodeSpec clip(OpType::Mul);
  clip.activation(fb::Activation::Clip, -1.0f, 1.0f);
  ASSERT_TRUE(run_op(clip.node(), {&a, &b}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{-1, -0.5f, 0.5f, 1}));
}

TEST(Binary, FusedActivationOnVariadicMax) {
  TestTensor a = TestTensor::f32({3}, {-3, 1, 9});
  TestTensor b = TestTensor::f32({3}, {-4, 0, 2});
  TestTensor c = TestTensor::f32({1}, {-5});
  TestTensor y(ScalarType::Float32, {3});
  NodeSpec spec(OpType::Max);
  spec.activation(fb::Activation::Clip, 0.0f, 6.0f);
  ASSERT_TRUE(run_op(spec.node(), {&a, &b, &c}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{0, 1, 6}));
}

// ---- integer arithmetic ------------------------------------------------------------------------

TEST(IntegerArithmetic, Int64ExactWithBroadcast) {
  const int64_t big = int64_t{1} << 40;
  TestTensor a = TestTensor::i64({2, 1}, {big, -7});
  TestTensor b = TestTensor::i64({3}, {3, -2, 1});
  TestTensor y(ScalarType::Int64, {2, 3});
  const struct {
    OpType op;
    std::vector<int64_t> want;
  } cases[] = {
      {OpType::Add, {big + 3, big - 2, big + 1, -4, -9, -6}},
      {OpType::Sub, {big - 3, big + 2, big - 1, -10, -5, -8}},
      {OpType::Mul, {3 * big, -2 * big, big, -21, 14, -7}},
      {OpType::Div, {big / 3, -big / 2, big, -2, 3, -7}},  // truncates toward zero
      {OpType::Min, {3, -2, 1, -7, -7, -7}},
      {OpType::Max, {big, big, big, 3, -2, 1}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(fb::EnumNameOpType(c.op));
    NodeSpec spec(c.op);
    ASSERT_TRUE(run_op(spec.node(), {&a, &b}, {&y}).is_ok());
    EXPECT_EQ(y.values<int64_t>(), c.want);
  }
}

TEST(IntegerArithmetic, Int32WrapsAndPow) {
  TestTensor a = TestTensor::i32({3}, {INT32_MAX, 3, -2});
  TestTensor b = TestTensor::i32({3}, {1, 4, 3});
  TestTensor y(ScalarType::Int32, {3});
  NodeSpec add(OpType::Add);
  ASSERT_TRUE(run_op(add.node(), {&a, &b}, {&y}).is_ok());
  EXPECT_EQ(y.values<int32_t>(), (std::vector<int32_t>{INT32_MIN, 7, 1}));
  NodeSpec pow(OpType::Pow);
  ASSERT_TRUE(run_op(pow.node(), {&a, &b}, {&y}).is_ok());
  EXPECT_EQ(y.values<int32_t>(), (std::vector<int32_t>{INT32_MAX, 81, -8}));
  TestTensor m = TestTensor::i32({1}, {INT32_MIN}), neg1 = TestTensor::i32({1}, {-1});
  TestTensor q(ScalarType::Int32, {1});
  NodeSpec div(OpType::Div);
  ASSERT_TRUE(run_op(div.node(), {&m, &neg1}, {&q}).is_ok());
  EXPECT_EQ(q.values<int32_t>(), (std::vector<int32_t>{INT32_MIN}));
}

TEST(IntegerArithmetic, DivisionByZeroAndNegativeExponentFailAtRun) {
  TestTensor a = TestTensor::i64({2}, {4, 5});
  TestTensor z = TestTensor::i64({2}, {1, 0});
  TestTensor y(ScalarType::Int64, {2});
  NodeSpec div(OpType::Div, "d");
  expect_error(run_op(div.node(), {&a, &z}, {&y}), Error::InvalidArgument,
               "Div node 'd': integer division by zero");
  TestTensor e = TestTensor::i64({2}, {2, -1});
  NodeSpec pow(OpType::Pow, "p");
  expect_error(run_op(pow.node(), {&a, &e}, {&y}), Error::InvalidArgument,
               "Pow node 'p': negative integer exponent");
}

TEST(IntegerArithmetic, VariadicMaxAndMixedDtypes) {
  TestTensor a = TestTensor::i64({2}, {1, 9});
  TestTensor b = TestTensor::i64({1}, {4});
  TestTensor c = TestTensor::i64({2}, {0, 12});
  TestTensor y(ScalarType::Int64, {2});
  NodeSpec mx(OpType::Max);
  ASSERT_TRUE(run_op(mx.node(), {&a, &b, &c}, {&y}).is_ok());
  EXPECT_EQ(y.values<int64_t>(), (std::vector<int64_t>{4, 12}));
  TestTensor f = TestTensor::f32({2}, {1, 2});
  NodeSpec add(OpType::Add, "mixed");
  expect_error(prepare_op(add.node(), {&a, &f}, {&y}), Error::InvalidProgram,
               "input 1 has dtype float32, expected int64");
  NodeSpec relu(OpType::Add, "act");
  relu.activation(fb::Activation::Relu);
  expect_error(prepare_op(relu.node(), {&a, &a}, {&y}), Error::NotSupported,
               "fused activation needs a float32 output");
}

TEST(IntegerUnary, NegAbsRelu) {
  TestTensor x = TestTensor::i64({4}, {-3, 0, 5, INT64_MIN});
  TestTensor y(ScalarType::Int64, {4});
  NodeSpec neg(OpType::Neg);
  ASSERT_TRUE(run_op(neg.node(), {&x}, {&y}).is_ok());
  EXPECT_EQ(y.values<int64_t>(), (std::vector<int64_t>{3, 0, -5, INT64_MIN}));
  NodeSpec abs(OpType::Abs);
  ASSERT_TRUE(run_op(abs.node(), {&x}, {&y}).is_ok());
  EXPECT_EQ(y.values<int64_t>(), (std::vector<int64_t>{3, 0, 5, INT64_MIN}));
  TestTensor x32 = TestTensor::i32({3}, {-3, 0, 5});
  TestTensor y32(ScalarType::Int32, {3});
  NodeSpec relu(OpType::Relu);
  ASSERT_TRUE(run_op(relu.node(), {&x32}, {&y32}).is_ok());
  EXPECT_EQ(y32.values<int32_t>(), (std::vector<int32_t>{0, 0, 5}));
  NodeSpec exp(OpType::Exp, "e");
  expect_error(prepare_op(exp.node(), {&x}, {&y}), Error::NotSupported,
               "Exp node 'e': dtype int64 of input 0 is not supported");
}

// ---- comparisons -------------------------------------------------------------------------------

TEST(Compare, FloatBroadcast) {
  TestTensor a = TestTensor::f32({2, 3}, {1, 2, 3, 4, 5, 6});
  TestTensor b = TestTensor::f32({3}, {2, 2, 7});
  TestTensor y(ScalarType::Bool, {2, 3});
  NodeSpec eq(OpType::Equal);
  ASSERT_TRUE(run_op(eq.node(), {&a, &b}, {&y}).is_ok());
  EXPECT_EQ(y.values<uint8_t>(), (std::vector<uint8_t>{0, 1, 0, 0, 0, 0}));
  NodeSpec lt(OpType::Less);
  ASSERT_TRUE(run_op(lt.node(), {&a, &b}, {&y}).is_ok());
  EXPECT_EQ(y.values<uint8_t>(), (std::vector<uint8_t>{1, 0, 1, 0, 0, 1}));
  NodeSpec gt(OpType::Greater);
  ASSERT_TRUE(run_op(gt.node(), {&a, &b}, {&y}).is_ok());
  EXPECT_EQ(y.values<uint8_t>(), (std::vector<uint8_t>{0, 0, 0, 1, 1, 0}));
}

TEST(Compare, Int64AndInt32) {
  TestTensor a = TestTensor::i64({3, 1}, {1, 5, int64_t{1} << 40});
  TestTensor b = TestTensor::i64({2}, {5, int64_t{1} << 40});
  TestTensor y(ScalarType::Bool, {3, 2});
  NodeSpec eq(OpType::Equal);
  ASSERT_TRUE(run_op(eq.node(), {&a, &b}, {&y}).is_ok());
  EXPECT_EQ(y.values<uint8_t>(), (std::vector<uint8_t>{0, 0, 1, 0, 0, 1}));
  TestTensor c = TestTensor::i32({3}, {-1, 0, 1});
  TestTensor d = TestTensor::i32({}, {0});
  TestTensor z(ScalarType::Bool, {3});
  NodeSpec gt(OpType::Greater);
  ASSERT_TRUE(run_op(gt.node(), {&c, &d}, {&z}).is_ok());
  EXPECT_EQ(z.values<uint8_t>(), (std::vector<uint8_t>{0, 0, 1}));
}

TEST(Compare, NaNIsNeverEqualOrOrdered) {
  TestTensor a = TestTensor::f32({1}, {NAN});
  TestTensor y(ScalarType::Bool, {1});
  for (OpType op : {OpType::Equal, OpType::Less, OpType::Greater}) {
    NodeSpec spec(op);
    ASSERT_TRUE(run_op(spec.node(), {&a, &a}, {&y}).is_ok());
    EXPECT_EQ(y.values<uint8_t>()[0], 0);
  }
}

// ---- Where -------------------------------------------------------------------------------------

TEST(Where, FloatThreeWayBroadcast) {
  TestTensor cond = TestTensor::boolean({2, 1}, {1, 0});
  TestTensor x = TestTensor::f32({3}, {1, 2, 3});
  TestTensor y = TestTensor::f32({2, 3}, {-1, -2, -3, -4, -5, -6});
  TestTensor out(ScalarType::Float32, {2, 3});
  NodeSpec spec(OpType::Where);
  ASSERT_TRUE(run_op(spec.node(), {&cond, &x, &y}, {&out}).is_ok());
  EXPECT_EQ(out.floats(), (std::vector<float>{1, 2, 3, -4, -5, -6}));
}

TEST(Where, Int64AndScalarOperands) {
  TestTensor cond = TestTensor::boolean({4}, {1, 0, 0, 1});
  TestTensor x = TestTensor::i64({4}, {10, 20, 30, 40});
  TestTensor y = TestTensor::i64({}, {-1});
  TestTensor out(ScalarType::Int64, {4});
  NodeSpec spec(OpType::Where);
  ASSERT_TRUE(run_op(spec.node(), {&cond, &x, &y}, {&out}).is_ok());
  EXPECT_EQ(out.values<int64_t>(), (std::vector<int64_t>{10, -1, -1, 40}));
}

TEST(Where, EveryElementSize) {
  for (ScalarType t : {ScalarType::Float16, ScalarType::Int32, ScalarType::UInt8, ScalarType::Int8,
                       ScalarType::Bool}) {
    TestTensor cond = TestTensor::boolean({3}, {0, 1, 0});
    TestTensor x(t, {3}), y(t, {3}), out(t, {3});
    std::memset(x.data(), 0x11, x.nbytes());
    std::memset(y.data(), 0x01, y.nbytes());
    NodeSpec spec(OpType::Where);
    ASSERT_TRUE(run_op(spec.node(), {&cond, &x, &y}, {&out}).is_ok());
    const size_t es = element_size(t);
    const auto* o = static_cast<const uint8_t*>(out.data());
    for (size_t i = 0; i < 3 * es; ++i) EXPECT_EQ(o[i], (i / es) == 1 ? 0x11 : 0x01);
  }
}

// ---- PRelu -------------------------------------------------------------------------------------

TEST(PRelu, ChannelSlope) {
  TestTensor x = TestTensor::random({2, 3, 4, 5}, 1, -2, 2);
  TestTensor slope = TestTensor::f32({3, 1, 1}, {0.1f, 0.2f, -0.5f});
  TestTensor y(ScalarType::Float32, {2, 3, 4, 5});
  NodeSpec spec(OpType::PRelu);
  ASSERT_TRUE(run_op(spec.node(), {&x, &slope}, {&y}).is_ok());
  std::vector<double> ref;
  const std::vector<double> xv = x.doubles();
  for (size_t i = 0; i < xv.size(); ++i) {
    const double s = slope.doubles()[(i / 20) % 3];
    ref.push_back(xv[i] < 0 ? xv[i] * s : xv[i]);
  }
  expect_close(y.floats(), ref);
}

TEST(PRelu, FullAndScalarSlope) {
  TestTensor x = TestTensor::f32({2, 2}, {-1, 2, -3, 4});
  TestTensor full = TestTensor::f32({2, 2}, {1, 2, 3, 4});
  TestTensor scalar = TestTensor::f32({1}, {0.25f});
  TestTensor y(ScalarType::Float32, {2, 2});
  NodeSpec spec(OpType::PRelu);
  ASSERT_TRUE(run_op(spec.node(), {&x, &full}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{-1, 2, -9, 4}));
  ASSERT_TRUE(run_op(spec.node(), {&x, &scalar}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{-0.25f, 2, -0.75f, 4}));
}

TEST(PRelu, SlopeMustBroadcastToX) {
  TestTensor x = TestTensor::random({2, 3}, 1);
  TestTensor slope = TestTensor::random({2, 1, 3}, 2);
  TestTensor y(ScalarType::Float32, {2, 3});
  NodeSpec spec(OpType::PRelu, "prelu");
  expect_error(prepare_op(spec.node(), {&x, &slope}, {&y}), Error::ShapeMismatch,
               "slope shape [2, 1, 3] does not broadcast to X shape [2, 3]");
}

// ---- Cast --------------------------------------------------------------------------------------

template <typename T>
TestTensor typed(ScalarType t, std::vector<int64_t> sizes, const std::vector<T>& v) {
  TestTensor x(t, std::move(sizes));
  std::memcpy(x.data(), v.data(), v.size() * sizeof(T));
  return x;
}

Status cast(TestTensor& x, TestTensor& y) {
  NodeSpec spec(OpType::Cast, "cast");
  spec.attr(attr_int("to", static_cast<int64_t>(y.dtype())));
  return run_op(spec.node(), {&x}, {&y});
}

TEST(Cast, FloatToIntegersTruncatesAndSaturates) {
  TestTensor x = TestTensor::f32({7}, {1.9f, -1.9f, 300.0f, -300.0f, NAN, 1e20f, -0.5f});
  TestTensor i64(ScalarType::Int64, {7}), i32(ScalarType::Int32, {7}), i8(ScalarType::Int8, {7}),
      u8(ScalarType::UInt8, {7});
  ASSERT_TRUE(cast(x, i64).is_ok());
  EXPECT_EQ(i64.values<int64_t>(),
            (std::vector<int64_t>{1, -1, 300, -300, 0, INT64_MAX, 0}));
  ASSERT_TRUE(cast(x, i32).is_ok());
  EXPECT_EQ(i32.values<int32_t>(), (std::vector<int32_t>{1, -1, 300, -300, 0, INT32_MAX, 0}));
  ASSERT_TRUE(cast(x, i8).is_ok());
  EXPECT_EQ(i8.values<int8_t>(), (std::vector<int8_t>{1, -1, 127, -128, 0, 127, 0}));
  ASSERT_TRUE(cast(x, u8).is_ok());
  EXPECT_EQ(u8.values<uint8_t>(), (std::vector<uint8_t>{1, 0, 255, 0, 0, 255, 0}));
}

TEST(Cast, ToAndFromBool) {
  TestTensor x = TestTensor::f32({4}, {0.0f, -0.0f, 2.5f, NAN});
  TestTensor b(ScalarType::Bool, {4});
  ASSERT_TRUE(cast(x, b).is_ok());
  EXPECT_EQ(b.values<uint8_t>(), (std::vector<uint8_t>{0, 0, 1, 1}));
  TestTensor f(ScalarType::Float32, {4});
  ASSERT_TRUE(cast(b, f).is_ok());
  EXPECT_EQ(f.floats(), (std::vector<float>{0, 0, 1, 1}));
  TestTensor i = TestTensor::i64({3}, {0, 7, -1});
  TestTensor bi(ScalarType::Bool, {3});
  ASSERT_TRUE(cast(i, bi).is_ok());
  EXPECT_EQ(bi.values<uint8_t>(), (std::vector<uint8_t>{0, 1, 1}));
}

TEST(Cast, Float16RoundTrip) {
  TestTensor x = TestTensor::f32({5}, {1.0f, -2.5f, 65504.0f, 0.1f, 1e6f});
  TestTensor h(ScalarType::Float16, {5});
  ASSERT_TRUE(cast(x, h).is_ok());
  EXPECT_EQ(h.values<uint16_t>()[0], 0x3c00);
  EXPECT_EQ(h.values<uint16_t>()[4], 0x7c00);  // overflow to +inf
  TestTensor back(ScalarType::Float32, {5});
  ASSERT_TRUE(cast(h, back).is_ok());
  EXPECT_EQ(back.at(0), 1.0f);
  EXPECT_EQ(back.at(1), -2.5f);
  EXPECT_EQ(back.at(2), 65504.0f);
  EXPECT_NEAR(back.at(3), 0.1f, 1e-4);
  EXPECT_TRUE(std::isinf(back.at(4)));
  TestTensor i(ScalarType::Int32, {5});
  ASSERT_TRUE(cast(h, i).is_ok());
  EXPECT_EQ(i.values<int32_t>(), (std::vector<int32_t>{1, -2, 65504, 0, INT32_MAX}));
}

TEST(Cast, IntegerConversionsWrapLikeNumpy) {
  TestTensor x = TestTensor::i64({4}, {1, -1, 300, (int64_t{1} << 40) + 5});
  TestTensor i32(ScalarType::Int32, {4}), u8(ScalarType::UInt8, {4}), f(ScalarType::Float32, {4});
  ASSERT_TRUE(cast(x, i32).is_ok());
  EXPECT_EQ(i32.values<int32_t>(), (std::vector<int32_t>{1, -1, 300, 5}));
  ASSERT_TRUE(cast(x, u8).is_ok());
  EXPECT_EQ(u8.values<uint8_t>(), (std::vector<uint8_t>{1, 255, 44, 5}));
  ASSERT_TRUE(cast(x, f).is_ok());
  EXPECT_EQ(f.floats(), (std::vector<float>{1, -1, 300, static_cast<float>((int64_t{1} << 40) + 5)}));
  TestTensor u = typed<uint8_t>(ScalarType::UInt8, {2}, {200, 7});
  TestTensor i8(ScalarType::Int8, {2}), i64(ScalarType::Int64, {2});
  ASSERT_TRUE(cast(u, i8).is_ok());
  EXPECT_EQ(i8.values<int8_t>(), (std::vector<int8_t>{-56, 7}));
  ASSERT_TRUE(cast(u, i64).is_ok());
  EXPECT_EQ(i64.values<int64_t>(), (std::vector<int64_t>{200, 7}));
}

TEST(Cast, EveryPairRunsAndSameTypeCopies) {
  const ScalarType all[] = {ScalarType::Float32, ScalarType::Float16, ScalarType::Int64,
                            ScalarType::Int32,   ScalarType::Int8,    ScalarType::UInt8,
                            ScalarType::Bool};
  for (ScalarType from : all) {
    for (ScalarType to : all) {
      // Small non-negative integers survive every conversion except to bool.
      TestTensor f = TestTensor::f32({3}, {0, 1, 5});
      TestTensor src(from, {3});
      ASSERT_TRUE(cast(f, src).is_ok());
      TestTensor dst(to, {3});
      ASSERT_TRUE(cast(src, dst).is_ok()) << scalar_type_name(from) << " -> " << scalar_type_name(to);
      TestTensor back(ScalarType::Float32, {3});
      ASSERT_TRUE(cast(dst, back).is_ok());
      const bool lossy = from == ScalarType::Bool || to == ScalarType::Bool;
      EXPECT_EQ(back.floats(), lossy ? (std::vector<float>{0, 1, 1}) : (std::vector<float>{0, 1, 5}))
          << scalar_type_name(from) << " -> " << scalar_type_name(to);
    }
  }
}

}  // namespace
}  // namespace tessera::kernel_test
