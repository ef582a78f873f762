// The armnn backend releases every program constant once it has its own copy (see
// BackendInitContext::release_constant), and never reads a released one again.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "harness.h"
#include "tests/backends/common/release_cases.h"

namespace tessera::armnn_backend::testing {
namespace {

using backend_testing::release_case;
using backend_testing::ReleaseCase;
using backend_testing::runs_with_released_constants_poisoned;

TEST(ArmnnRelease, EveryConstantIsReleasedAndNeverReadAgain) {
  ReleaseCase c = release_case(5);
  std::vector<uint32_t> want(c.graph.constants.size());
  std::iota(want.begin(), want.end(), 0u);
  std::vector<uint32_t> released;
  EXPECT_TRUE(runs_with_released_constants_poisoned(kBackendName, c, &released));
  std::sort(released.begin(), released.end());
  released.erase(std::unique(released.begin(), released.end()), released.end());
  EXPECT_EQ(released, want);
}

}  // namespace
}  // namespace tessera::armnn_backend::testing
