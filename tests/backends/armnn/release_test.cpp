// The armnn backend releases every program constant once it has its own copy (see
// BackendInitContext::release_constant), and never reads a released one again.
#include <gtest/gtest.h>

#include "harness.h"
#include "tests/backends/common/release_cases.h"

namespace tessera::armnn_backend::testing {
namespace {

TEST(ArmnnRelease, EveryConstantIsReleasedAndNeverReadAgain) {
  EXPECT_TRUE(backend_testing::releases_every_constant(kBackendName));
}

}  // namespace
}  // namespace tessera::armnn_backend::testing
