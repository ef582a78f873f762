// The XNNPACK backend releases the program constants its runtimes pack (filters, biases, folded
// BatchNormalization parameters) once each runtime is created, and never reads them again.
#include <gtest/gtest.h>

#include "harness.h"
#include "tests/backends/common/release_cases.h"

namespace tessera::xnnpack::testing {
namespace {

using backend_testing::release_case;
using backend_testing::ReleaseCase;

TEST(XnnpackRelease, PackedWeightsAreReleasedAndNeverReadAgain) {
  // Filters, biases, BatchNormalization parameters and the Gemm's B and C: every constant.
  EXPECT_TRUE(backend_testing::releases_every_constant(kBackendName));
}

TEST(XnnpackRelease, WithoutAReleaseFunctionTheBackendStillRuns) {
  // RunOptions::released unset: the context has no release function (a program in a caller's
  // buffer); the same graph runs and matches.
  ReleaseCase c = release_case(6);
  EXPECT_TRUE(matches_portable(c.graph));
}

}  // namespace
}  // namespace tessera::xnnpack::testing
