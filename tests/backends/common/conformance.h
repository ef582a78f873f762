// The conformance suite every backend shares (tests/backends/common/*_test.cpp): one definition
// of each case, split by op family, run against every backend. Each backend's
// <name>_conformance_test links the cases (the tessera_backend_conformance object library) and
// instantiates every family with one line (tests/backends/<name>/conformance_test.cpp):
//
//   TESSERA_INSTANTIATE_CONFORMANCE(onednn::testing::kBackendName);
//
// ctest runs each family of each backend as one test, <name>.Conformance.<Family>.
//
// A case a backend's supports_op rejects is not run: the test reports SKIPPED with the backend's
// unsupported_reason, so no op falls silently out of the suite. With the environment variable
// TESSERA_SUPPORT_MATRIX (write) or TESSERA_SUPPORT_MATRIX_CHECK (compare) set to the path of
// docs/ops-support.md, the suite only asks supports_op and writes or checks the backend's column
// of the op x backend table (support_matrix.h).
//
// Cases that check one backend's options, layouts or summaries stay in that backend's folder.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/backends/common/backend_harness.h"

namespace tessera::backend_testing {

/// A backend under test and, for the families parameterised by op, the op.
struct ConformanceParam {
  const char* backend;
  fb::OpType op;
};

/// A conformance case. Cases check graphs with EXPECT_CONFORMS.
class BackendConformance : public ::testing::TestWithParam<ConformanceParam> {
 protected:
  const char* backend() const { return GetParam().backend; }
  fb::OpType op() const { return GetParam().op; }

  /// Whether every node of `c` is accepted by the backend's supports_op. A rejection is kept
  /// and reported when the test ends: SKIPPED with the reasons, unless something failed (the
  /// accepted cases of the test still run). In support-matrix mode every answer is recorded and
  /// the result is always false (nothing runs).
  bool accepts(const GraphCase& c);

  /// backend_testing::matches_portable through the backend under test.
  ::testing::AssertionResult matches_portable(const GraphCase& c, float lo = -1.0f, float hi = 1.0f,
                                              double relative = 1e-4) const {
    return backend_testing::matches_portable(backend(), c, lo, hi, relative);
  }

  void TearDown() override;

 private:
  std::vector<std::string> rejections_;  // one per rejected node
  int checked_ = 0;                      // cases given to accepts()
  int rejected_ = 0;                     // of those, the ones with a rejected node
};

/// Names an instantiation after its backend and op: "Conformance/Binary.SameShape/onednn_Add".
struct ConformanceParamName {
  std::string operator()(const ::testing::TestParamInfo<ConformanceParam>& info) const;
};

/// The params of a family: `backend` with each of `ops`.
std::vector<ConformanceParam> with_ops(const char* backend, std::vector<fb::OpType> ops);

// The op families. Single-op families carry that op; Binary, BinaryFused, Unary, Pool, Reduce
// and Compare run once per op.
class Conv : public BackendConformance {};
class ConvTranspose : public BackendConformance {};
class Binary : public BackendConformance {};
class BinaryFused : public BackendConformance {};
class Unary : public BackendConformance {};
class PRelu : public BackendConformance {};
class Pool : public BackendConformance {};
class MaxPool : public BackendConformance {};
class AveragePool : public BackendConformance {};
class GlobalPool : public BackendConformance {};
class Reduce : public BackendConformance {};
class Gemm : public BackendConformance {};
class MatMul : public BackendConformance {};
class Softmax : public BackendConformance {};
class LayerNorm : public BackendConformance {};
class BatchNorm : public BackendConformance {};
class Concat : public BackendConformance {};
class Reshape : public BackendConformance {};
class Transpose : public BackendConformance {};
class ChannelShuffle : public BackendConformance {};
class Slice : public BackendConformance {};
class Split : public BackendConformance {};
class Pad : public BackendConformance {};
class Resize : public BackendConformance {};
class Gather : public BackendConformance {};
class Cast : public BackendConformance {};
class Where : public BackendConformance {};
class Compare : public BackendConformance {};

/// The ops of the op-parameterised families.
std::vector<fb::OpType> binary_ops();
std::vector<fb::OpType> fused_binary_ops();
std::vector<fb::OpType> unary_ops();
std::vector<fb::OpType> pool_ops();
std::vector<fb::OpType> reduce_ops();
std::vector<fb::OpType> compare_ops();

}  // namespace tessera::backend_testing

/// Checks `c` (a GraphCase) through the backend under test against the portable kernels, when the
/// backend accepts every node; the remaining arguments are matches_portable's (lo, hi, relative).
#define EXPECT_CONFORMS(c, ...)                                             \
  if (const ::tessera::backend_testing::GraphCase& conformance_case_ = (c); \
      !this->accepts(conformance_case_)) {                                  \
  } else                                                                    \
    EXPECT_TRUE(this->matches_portable(conformance_case_ __VA_OPT__(, ) __VA_ARGS__))

// One instantiation per family, named after the family's op (the op-parameterised families once
// per op).
#define TESSERA_CONFORMANCE_ONE_(family, backend, op)                               \
  INSTANTIATE_TEST_SUITE_P(                                                         \
      Conformance, family,                                                          \
      ::testing::Values(::tessera::backend_testing::ConformanceParam{backend, op}), \
      ::tessera::backend_testing::ConformanceParamName())
#define TESSERA_CONFORMANCE_OPS_(family, backend, ops)                         \
  INSTANTIATE_TEST_SUITE_P(                                                    \
      Conformance, family,                                                     \
      ::testing::ValuesIn(::tessera::backend_testing::with_ops(backend, ops)), \
      ::tessera::backend_testing::ConformanceParamName())

/// Instantiates every conformance family for the registered backend named `backend` (a
/// `const char*` constant); use once, at namespace scope of tessera::backend_testing.
#define TESSERA_INSTANTIATE_CONFORMANCE(backend)                                 \
  TESSERA_CONFORMANCE_ONE_(Conv, backend, fb::OpType::Conv);                     \
  TESSERA_CONFORMANCE_ONE_(ConvTranspose, backend, fb::OpType::ConvTranspose);   \
  TESSERA_CONFORMANCE_OPS_(Binary, backend, binary_ops());                       \
  TESSERA_CONFORMANCE_OPS_(BinaryFused, backend, fused_binary_ops());            \
  TESSERA_CONFORMANCE_OPS_(Unary, backend, unary_ops());                         \
  TESSERA_CONFORMANCE_ONE_(PRelu, backend, fb::OpType::PRelu);                   \
  TESSERA_CONFORMANCE_OPS_(Pool, backend, pool_ops());                           \
  TESSERA_CONFORMANCE_ONE_(MaxPool, backend, fb::OpType::MaxPool);               \
  TESSERA_CONFORMANCE_ONE_(AveragePool, backend, fb::OpType::AveragePool);       \
  TESSERA_CONFORMANCE_ONE_(GlobalPool, backend, fb::OpType::GlobalAveragePool);  \
  TESSERA_CONFORMANCE_OPS_(Reduce, backend, reduce_ops());                       \
  TESSERA_CONFORMANCE_ONE_(Gemm, backend, fb::OpType::Gemm);                     \
  TESSERA_CONFORMANCE_ONE_(MatMul, backend, fb::OpType::MatMul);                 \
  TESSERA_CONFORMANCE_ONE_(Softmax, backend, fb::OpType::Softmax);               \
  TESSERA_CONFORMANCE_ONE_(LayerNorm, backend, fb::OpType::LayerNormalization);  \
  TESSERA_CONFORMANCE_ONE_(BatchNorm, backend, fb::OpType::BatchNormalization);  \
  TESSERA_CONFORMANCE_ONE_(Concat, backend, fb::OpType::Concat);                 \
  TESSERA_CONFORMANCE_ONE_(Reshape, backend, fb::OpType::Reshape);               \
  TESSERA_CONFORMANCE_ONE_(Transpose, backend, fb::OpType::Transpose);           \
  TESSERA_CONFORMANCE_ONE_(ChannelShuffle, backend, fb::OpType::ChannelShuffle); \
  TESSERA_CONFORMANCE_ONE_(Slice, backend, fb::OpType::Slice);                   \
  TESSERA_CONFORMANCE_ONE_(Split, backend, fb::OpType::Split);                   \
  TESSERA_CONFORMANCE_ONE_(Pad, backend, fb::OpType::Pad);                       \
  TESSERA_CONFORMANCE_ONE_(Resize, backend, fb::OpType::Resize);                 \
  TESSERA_CONFORMANCE_ONE_(Gather, backend, fb::OpType::Gather);                 \
  TESSERA_CONFORMANCE_ONE_(Cast, backend, fb::OpType::Cast);                     \
  TESSERA_CONFORMANCE_ONE_(Where, backend, fb::OpType::Where);                   \
  TESSERA_CONFORMANCE_OPS_(Compare, backend, compare_ops())
