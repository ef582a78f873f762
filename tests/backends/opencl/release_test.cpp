// The opencl backend releases every program constant once it has its own copy (see
// BackendInitContext::release_constant), and never reads a released one again.
#include <gtest/gtest.h>

#include "harness.h"
#include "tests/backends/common/release_cases.h"

namespace tessera::opencl::testing {
namespace {

TEST(OpenclRelease, EveryConstantIsReleasedAndNeverReadAgain) {
  EXPECT_TRUE(backend_testing::releases_every_constant(kBackendName));
}

}  // namespace
}  // namespace tessera::opencl::testing
