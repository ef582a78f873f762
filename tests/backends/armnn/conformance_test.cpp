// The conformance suites every backend shares (tests/backends/common/conformance_test.cpp), on
// the ArmNN backend: convolutions (grouped ones composed of split, convolutions and concat),
// binary ops with broadcasting, unary ops and PRelu.
#include <gtest/gtest.h>

#include "harness.h"
#include "tests/backends/common/conformance.h"

namespace tessera::backend_testing {

INSTANTIATE_TEST_SUITE_P(Conformance, Conv, ::testing::Values(armnn_backend::testing::kBackendName),
                         BackendParamName());
INSTANTIATE_TEST_SUITE_P(Conformance, Binary,
                         ::testing::Values(armnn_backend::testing::kBackendName),
                         BackendParamName());
INSTANTIATE_TEST_SUITE_P(Conformance, Unary,
                         ::testing::Values(armnn_backend::testing::kBackendName),
                         BackendParamName());
INSTANTIATE_TEST_SUITE_P(Conformance, PRelu,
                         ::testing::Values(armnn_backend::testing::kBackendName),
                         BackendParamName());

}  // namespace tessera::backend_testing
