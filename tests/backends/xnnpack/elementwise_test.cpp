// XNNPACK's own elementwise tests: binary ops with both operands broadcast (the oneDNN backend
// broadcasts only one) and BatchNormalization. The binary, unary and PRelu cases every backend
// shares are in tests/backends/common/conformance_test.cpp, instantiated here.
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "harness.h"
#include "tests/backends/common/conformance.h"
#include "tests/backends/common/elementwise_cases.h"

namespace tessera::xnnpack::testing {
namespace {

using Op = fb::OpType;

using backend_testing::binary_case;
using backend_testing::kBinaryOps;

TEST(XnnpackBinary, TwoActivationsBroadcast) {
  for (Op op : kBinaryOps) {
    SCOPED_TRACE(fb::EnumNameOpType(op));
    for (const auto& [a, b, seed] :
         std::vector<std::tuple<std::vector<int64_t>, std::vector<int64_t>, uint32_t>>{
             {{2, 3, 4, 5}, {3, 1, 5}, 7},
             {{2, 1, 4, 1}, {1, 3, 1, 5}, 8},
             {{7, 1}, {1, 9}, 9},
             {{2, 1, 3, 1, 2, 3}, {3, 1, 2, 1}, 10}}) {
      EXPECT_TRUE(backend_testing::binary_matches_portable(kBackendName,
                                                           binary_case(op, a, b, false, seed), op))
          << seed;
    }
  }
}

GraphCase batch_norm_case(std::vector<int64_t> x, uint32_t seed, bool after_conv) {
  GraphCase c;
  c.seed = seed;
  const int64_t ch = x[1];
  int in = c.input(std::vector<ir::Dim>(x.begin(), x.end()));
  if (after_conv) {
    int w = c.constant({ch, ch, 1, 1});
    int t = c.tensor(std::vector<ir::Dim>(x.begin(), x.end()));
    c.node(fb::OpType::Conv, {in, w}, t);
    in = t;
  }
  Floats var(static_cast<size_t>(ch));
  for (size_t k = 0; k < var.size(); ++k) var[k] = 0.5f + 0.1f * static_cast<float>(k);
  int gamma = c.constant({ch}), beta = c.constant({ch}), mean = c.constant({ch});
  int v = c.constant({ch}, var);
  int y = c.tensor(std::vector<ir::Dim>(x.begin(), x.end()));
  c.node(fb::OpType::BatchNormalization, {in, gamma, beta, mean, v}, y).attrs = {
      ir::Attr::make_float("epsilon", 1e-3f)};
  c.output(y);
  return c;
}

TEST(XnnpackBatchNorm, Inference) {
  EXPECT_TRUE(matches_portable(batch_norm_case({2, 5, 4, 3}, 1, false)));
  EXPECT_TRUE(matches_portable(batch_norm_case({2, 5, 4, 3}, 2, true)));
  EXPECT_TRUE(matches_portable(batch_norm_case({3, 7}, 3, false)));
}

}  // namespace
}  // namespace tessera::xnnpack::testing

namespace tessera::backend_testing {
INSTANTIATE_TEST_SUITE_P(Conformance, Binary, ::testing::Values(xnnpack::testing::kBackendName),
                         BackendParamName());
INSTANTIATE_TEST_SUITE_P(Conformance, Unary, ::testing::Values(xnnpack::testing::kBackendName),
                         BackendParamName());
INSTANTIATE_TEST_SUITE_P(Conformance, PRelu, ::testing::Values(xnnpack::testing::kBackendName),
                         BackendParamName());
}  // namespace tessera::backend_testing
