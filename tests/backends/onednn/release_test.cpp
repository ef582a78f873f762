// The oneDNN backend releases a program constant when it copies it into a delegate buffer
// (weights reordered to oneDNN's layout, broadcast parameters), and never reads a released one
// again. Which weights are copied depends on the layouts oneDNN picks for this CPU, so the test
// asks only that every release is a copied weight and that nothing released is read again.
#include <gtest/gtest.h>

#include <algorithm>

#include "harness.h"
#include "tests/backends/common/release_cases.h"

namespace tessera::onednn::testing {
namespace {

using backend_testing::release_case;
using backend_testing::ReleaseCase;
using backend_testing::runs_with_released_constants_poisoned;

TEST(OnednnRelease, OnlyCopiedWeightsAreReleasedAndNeverReadAgain) {
  ReleaseCase c = release_case(5);
  std::vector<uint32_t> released;
  EXPECT_TRUE(runs_with_released_constants_poisoned(kBackendName, c, &released));
  // Biases and BatchNormalization parameters are used in place at every execute.
  const std::vector<uint32_t> weights = {c.conv3x3_w, c.conv1x1_w, c.depthwise_w, c.gemm_b};
  for (uint32_t r : released) {
    EXPECT_NE(std::find(weights.begin(), weights.end(), r), weights.end())
        << "constant " << r << " was released but is not a copied weight";
  }
}

}  // namespace
}  // namespace tessera::onednn::testing
