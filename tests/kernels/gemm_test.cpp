// Gemm and MatMul against a double-precision reference.
#include <cmath>

#include "kernel_test_util.h"

namespace tessera::kernel_test {
namespace {

// C[i, j] = sum_k A[i, k] B[k, j] on row-major doubles, with sum |terms|.
void matmul_reference(const std::vector<double>& a, const std::vector<double>& b, int64_t m,
                      int64_t k, int64_t n, std::vector<double>* out, std::vector<double>* mag) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0, s = 0;
      for (int64_t p = 0; p < k; ++p) {
        acc += a[i * k + p] * b[p * n + j];
        s += std::fabs(a[i * k + p] * b[p * n + j]);
      }
      out->push_back(acc);
      mag->push_back(s);
    }
}

std::vector<double> transpose(const std::vector<double>& v, int64_t rows, int64_t cols) {
  std::vector<double> t(v.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t[c * rows + r] = v[r * cols + c];
  return t;
}

struct GemmCase {
  int64_t m, k, n;
  bool trans_a = false, trans_b = false;
  float alpha = 1.0f, beta = 1.0f;
  std::vector<int64_t> c;  // C's shape; {-1} = no C
};

void check_gemm(const GemmCase& g, uint32_t seed, fb::Activation act = fb::Activation::None) {
  SCOPED_TRACE(::testing::Message() << "gemm " << g.m << "x" << g.k << "x" << g.n << " tA "
                                    << g.trans_a << " tB " << g.trans_b);
  TestTensor a = TestTensor::random(g.trans_a ? std::vector<int64_t>{g.k, g.m}
                                              : std::vector<int64_t>{g.m, g.k}, seed);
  TestTensor b = TestTensor::random(g.trans_b ? std::vector<int64_t>{g.n, g.k}
                                              : std::vector<int64_t>{g.k, g.n}, seed + 1);
  const bool has_c = !(g.c.size() == 1 && g.c[0] == -1);
  TestTensor c = TestTensor::random(has_c ? g.c : std::vector<int64_t>{1}, seed + 2);
  std::vector<double> av = a.doubles(), bv = b.doubles();
  if (g.trans_a) av = transpose(av, g.k, g.m);
  if (g.trans_b) bv = transpose(bv, g.n, g.k);
  std::vector<double> ref, mag;
  matmul_reference(av, bv, g.m, g.k, g.n, &ref, &mag);
  // C broadcast (right-aligned) to [m, n].
  const std::vector<double> cv = c.doubles();
  for (int64_t i = 0; i < g.m; ++i)
    for (int64_t j = 0; j < g.n; ++j) {
      double& r = ref[i * g.n + j];
      double& s = mag[i * g.n + j];
      r *= g.alpha;
      s *= std::fabs(g.alpha);
      if (!has_c) continue;
      int64_t ci = 0;
      if (g.c.size() == 2) ci = (g.c[0] == 1 ? 0 : i) * g.c[1] + (g.c[1] == 1 ? 0 : j);
      if (g.c.size() == 1) ci = g.c[0] == 1 ? 0 : j;
      r += g.beta * cv[ci];
      s += std::fabs(g.beta * cv[ci]);
    }
  if (act == fb::Activation::Relu) {
    for (double& r : ref) r = r < 0 ? 0 : r;
  }
  TestTensor y(ScalarType::Float32, {g.m, g.n});
  NodeSpec spec(OpType::Gemm, "fc");
  spec.attr(attr_int("transA", g.trans_a)).attr(attr_int("transB", g.trans_b));
  spec.attr(attr_float("alpha", g.alpha)).attr(attr_float("beta", g.beta));
  if (act != fb::Activation::None) spec.activation(act);
  Status st = run_op(spec.node(), {&a, &b, has_c ? &c : nullptr}, {&y});
  ASSERT_TRUE(st.is_ok()) << st.message();
  expect_close(y.floats(), ref, mag);
}

TEST(Gemm, HandComputed) {
  TestTensor a = TestTensor::f32({2, 3}, {1, 2, 3, 4, 5, 6});
  TestTensor b = TestTensor::f32({3, 2}, {1, 0, 0, 1, 1, 1});
  TestTensor c = TestTensor::f32({2}, {10, 20});
  TestTensor y(ScalarType::Float32, {2, 2});
  NodeSpec spec(OpType::Gemm);
  ASSERT_TRUE(run_op(spec.node(), {&a, &b, &c}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{14, 25, 20, 31}));
}

TEST(Gemm, Plain) { check_gemm({5, 7, 9, false, false, 1, 1, {-1}}, 1); }
TEST(Gemm, TransA) { check_gemm({6, 5, 11, true, false, 1, 1, {-1}}, 2); }
TEST(Gemm, TransB) { check_gemm({3, 17, 10, false, true, 1, 1, {10}}, 3); }
TEST(Gemm, TransBoth) { check_gemm({4, 9, 8, true, true, 0.5f, 2.0f, {4, 8}}, 4); }
TEST(Gemm, AlphaBetaRowVectorC) { check_gemm({7, 3, 5, false, false, -1.5f, 0.25f, {1, 5}}, 5); }
TEST(Gemm, ColumnC) { check_gemm({7, 3, 5, false, false, 1, 1, {7, 1}}, 6); }
TEST(Gemm, ScalarC) { check_gemm({2, 3, 4, false, false, 1, 3, {1}}, 7); }
TEST(Gemm, BetaZeroIgnoresC) { check_gemm({3, 4, 5, false, false, 1, 0, {3, 5}}, 8); }
TEST(Gemm, CrossesPanelBlocks) { check_gemm({37, 300, 270, false, false, 1, 1, {270}}, 9); }
TEST(Gemm, CrossesPanelBlocksTransB) { check_gemm({13, 513, 260, false, true, 1, 1, {-1}}, 10); }
TEST(Gemm, SingleRowLinearLayer) { check_gemm({1, 64, 33, false, true, 1, 1, {33}}, 11); }
TEST(Gemm, FusedRelu) { check_gemm({9, 12, 17, false, true, 1, 1, {17}}, 12, fb::Activation::Relu); }

TEST(Gemm, RankZeroC) {
  TestTensor a = TestTensor::f32({1, 2}, {1, 2});
  TestTensor b = TestTensor::f32({2, 1}, {3, 4});
  TestTensor c = TestTensor::f32({}, {0.5f});
  TestTensor y(ScalarType::Float32, {1, 1});
  NodeSpec spec(OpType::Gemm);
  ASSERT_TRUE(run_op(spec.node(), {&a, &b, &c}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{11.5f}));
}

TEST(Gemm, ZeroInnerDimensionGivesBetaC) {
  TestTensor a(ScalarType::Float32, {2, 0});
  TestTensor b(ScalarType::Float32, {0, 3});
  TestTensor c = TestTensor::f32({3}, {1, 2, 3});
  TestTensor y(ScalarType::Float32, {2, 3});
  NodeSpec spec(OpType::Gemm);
  spec.attr(attr_float("beta", 2.0f));
  ASSERT_TRUE(run_op(spec.node(), {&a, &b, &c}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{2, 4, 6, 2, 4, 6}));
}

// ---- MatMul ------------------------------------------------------------------------------------

// numpy matmul in double for operands of any rank >= 1.
void numpy_matmul(const TestTensor& a, const TestTensor& b, std::vector<int64_t>* out_sizes,
                  std::vector<double>* ref, std::vector<double>* mag) {
  std::vector<int64_t> as = a.sizes(), bs = b.sizes();
  const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), 1);
  if (b_vec) bs.push_back(1);
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  std::vector<int64_t> ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  const size_t r = std::max(ab.size(), bb.size());
  ab.insert(ab.begin(), r - ab.size(), 1);
  bb.insert(bb.begin(), r - bb.size(), 1);
  std::vector<int64_t> batch(r);
  for (size_t i = 0; i < r; ++i) batch[i] = std::max(ab[i], bb[i]);
  int64_t nb = 1;
  for (int64_t d : batch) nb *= d;
  const std::vector<double> av = a.doubles(), bv = b.doubles();
  for (int64_t t = 0; t < nb; ++t) {
    // Unravel t over batch, then ravel into each operand with broadcasting.
    int64_t rem = t, ao = 0, bo = 0, astride = 1, bstride = 1;
    for (int64_t i = static_cast<int64_t>(r) - 1; i >= 0; --i) {
      const int64_t idx = rem % batch[i];
      rem /= batch[i];
      ao += (ab[i] == 1 ? 0 : idx) * astride;
      bo += (bb[i] == 1 ? 0 : idx) * bstride;
      astride *= ab[i];
      bstride *= bb[i];
    }
    std::vector<double> am(av.begin() + ao * m * k, av.begin() + (ao + 1) * m * k);
    std::vector<double> bm(bv.begin() + bo * k * n, bv.begin() + (bo + 1) * k * n);
    matmul_reference(am, bm, m, k, n, ref, mag);
  }
  *out_sizes = batch;
  if (!a_vec) out_sizes->push_back(m);
  if (!b_vec) out_sizes->push_back(n);
}

void check_matmul(std::vector<int64_t> a_sizes, std::vector<int64_t> b_sizes, uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << "matmul seed " << seed);
  TestTensor a = TestTensor::random(a_sizes, seed);
  TestTensor b = TestTensor::random(b_sizes, seed + 1);
  std::vector<int64_t> out;
  std::vector<double> ref, mag;
  numpy_matmul(a, b, &out, &ref, &mag);
  TestTensor y(ScalarType::Float32, out);
  NodeSpec spec(OpType::MatMul, "mm");
  Status st = run_op(spec.node(), {&a, &b}, {&y});
  ASSERT_TRUE(st.is_ok()) << st.message();
  expect_close(y.floats(), ref, mag);
}

TEST(MatMul, TwoD) { check_matmul({5, 6}, {6, 7}, 1); }
TEST(MatMul, BatchedTimesMatrixFoldsRows) { check_matmul({3, 5, 16}, {16, 9}, 2); }
TEST(MatMul, BatchedBoth) { check_matmul({4, 3, 8}, {4, 8, 5}, 3); }
TEST(MatMul, BroadcastBatch) { check_matmul({2, 1, 3, 4}, {5, 4, 6}, 4); }
TEST(MatMul, MatrixTimesBatched) { check_matmul({3, 4}, {2, 4, 5}, 5); }
TEST(MatMul, VectorTimesMatrix) { check_matmul({6}, {6, 4}, 6); }
TEST(MatMul, MatrixTimesVector) { check_matmul({3, 6}, {6}, 7); }
TEST(MatMul, VectorTimesVector) { check_matmul({10}, {10}, 8); }
TEST(MatMul, VectorTimesBatched) { check_matmul({4}, {3, 4, 2}, 9); }
TEST(MatMul, BatchedTimesVector) { check_matmul({2, 3, 4}, {4}, 10); }
TEST(MatMul, LargeCrossesBlocks) { check_matmul({2, 33, 300}, {300, 261}, 11); }
TEST(MatMul, SizeOneDims) { check_matmul({1, 1, 1, 5}, {1, 5, 1}, 12); }

TEST(MatMul, HandComputed) {
  TestTensor a = TestTensor::f32({2, 2}, {1, 2, 3, 4});
  TestTensor b = TestTensor::f32({2, 2}, {5, 6, 7, 8});
  TestTensor y(ScalarType::Float32, {2, 2});
  NodeSpec spec(OpType::MatMul);
  ASSERT_TRUE(run_op(spec.node(), {&a, &b}, {&y}).is_ok());
  EXPECT_EQ(y.floats(), (std::vector<float>{19, 22, 43, 50}));
}

TEST(MatMul, FusedClip) {
  TestTensor a = TestTensor::random({3, 4, 6}, 20, -2, 2);
  TestTensor b = TestTensor::random({3, 6, 5}, 21, -2, 2);
  std::vector<int64_t> out;
  std::vector<double> ref, mag;
  numpy_matmul(a, b, &out, &ref, &mag);
  for (double& r : ref) r = r < -1 ? -1 : (r > 1 ? 1 : r);
  TestTensor y(ScalarType::Float32, out);
  NodeSpec spec(OpType::MatMul);
  spec.activation(fb::Activation::Clip, -1.0f, 1.0f);
  ASSERT_TRUE(run_op(spec.node(), {&a, &b}, {&y}).is_ok());
  expect_close(y.floats(), ref, mag);
}

TEST(MatMul, InnerDimensionMismatch) {
  TestTensor a = TestTensor::random({2, 3}, 1);
  TestTensor b = TestTensor::random({4, 2}, 2);
  TestTensor y(ScalarType::Float32, {2, 2});
  NodeSpec spec(OpType::MatMul, "mm");
  expect_error(prepare_op(spec.node(), {&a, &b}, {&y}), Error::ShapeMismatch, "inner dims 3 and 4");
}

TEST(MatMul, BatchDimsDoNotBroadcast) {
  TestTensor a = TestTensor::random({2, 2, 3}, 1);
  TestTensor b = TestTensor::random({3, 3, 2}, 2);
  TestTensor y(ScalarType::Float32, {3, 2, 2});
  NodeSpec spec(OpType::MatMul, "mm");
  expect_error(prepare_op(spec.node(), {&a, &b}, {&y}), Error::ShapeMismatch, "do not broadcast");
}

}  // namespace
}  // namespace tessera::kernel_test
