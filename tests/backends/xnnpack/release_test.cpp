// The XNNPACK backend releases the program constants its runtimes pack (filters, biases, folded
// BatchNormalization parameters) once each runtime is created, and never reads them again.
#include <gtest/gtest.h>

#include <algorithm>

#include "harness.h"
#include "tests/backends/common/release_cases.h"

namespace tessera::xnnpack::testing {
namespace {

using backend_testing::release_case;
using backend_testing::ReleaseCase;
using backend_testing::runs_with_released_constants_poisoned;

TEST(XnnpackRelease, PackedWeightsAreReleasedAndNeverReadAgain) {
  ReleaseCase c = release_case(5);
  std::vector<uint32_t> released;
  EXPECT_TRUE(runs_with_released_constants_poisoned(kBackendName, c, &released));
  std::vector<uint32_t> want = {c.conv3x3_w,   c.conv3x3_b, c.conv1x1_w, c.depthwise_w,
                                c.depthwise_b, c.gemm_b,    c.gemm_c};
  want.insert(want.end(), c.batchnorm.begin(), c.batchnorm.end());
  std::sort(want.begin(), want.end());
  std::sort(released.begin(), released.end());
  released.erase(std::unique(released.begin(), released.end()), released.end());
  EXPECT_EQ(released, want);
}

TEST(XnnpackRelease, WithoutAReleaseFunctionTheBackendStillRuns) {
  // RunOptions::released unset: the context has no release function (a program in a caller's
  // buffer); the same graph runs and matches.
  ReleaseCase c = release_case(6);
  EXPECT_TRUE(matches_portable(c.graph));
}

}  // namespace
}  // namespace tessera::xnnpack::testing
