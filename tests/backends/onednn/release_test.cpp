// The oneDNN backend releases a program constant when it copies it into a delegate buffer: a
// weight reordered to oneDNN's layout, a broadcast parameter, and every small constant steps read
// as they are (biases, normalisation parameters). Whether a weight is reordered depends on the
// layout oneDNN picks for this CPU; the small constants are always copied. Nothing released is
// read again.
#include <gtest/gtest.h>

#include <algorithm>

#include "harness.h"
#include "tests/backends/common/release_cases.h"

namespace tessera::onednn::testing {
namespace {

using backend_testing::release_case;
using backend_testing::ReleaseCase;
using backend_testing::runs_with_released_constants_poisoned;

TEST(OnednnRelease, CopiedConstantsAreReleasedAndNeverReadAgain) {
  ReleaseCase c = release_case(5);
  std::vector<uint32_t> released;
  EXPECT_TRUE(runs_with_released_constants_poisoned(kBackendName, c, &released));
  auto was_released = [&](uint32_t index) {
    return std::find(released.begin(), released.end(), index) != released.end();
  };
  // Small constants read by steps at every execute: copied, whatever the CPU.
  std::vector<uint32_t> small = {c.conv3x3_b, c.depthwise_b, c.gemm_c};
  small.insert(small.end(), c.batchnorm.begin(), c.batchnorm.end());
  for (uint32_t index : small) EXPECT_TRUE(was_released(index)) << "constant " << index;
}

}  // namespace
}  // namespace tessera::onednn::testing
