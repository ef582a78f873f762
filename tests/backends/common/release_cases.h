// Graphs whose weights a backend copies at init (convolutions, Gemm, BatchNormalization), for the
// tests of BackendInitContext::release_constant: which constants a backend releases, and that it
// never reads them again (RunOptions::poison_released).
#pragma once

#include <cstdint>
#include <vector>

#include "tests/backends/common/backend_harness.h"

namespace tessera::backend_testing {

/// A 3x3 Conv with bias, a 1x1 Conv without, a depthwise 3x3, BatchNormalization, global average
/// pooling and a Gemm with bias: 12 constants (indices in `weights`).
struct ReleaseCase {
  GraphCase graph;
  uint32_t conv3x3_w, conv3x3_b, conv1x1_w, depthwise_w, depthwise_b, gemm_b, gemm_c;
  std::vector<uint32_t> batchnorm;  // scale, bias, mean, var
};

ReleaseCase release_case(uint32_t seed);

/// Runs `backend` on the case with releases poisoned, and the portable kernels on the same
/// inputs first; returns the constants released, in order, with the outputs compared.
::testing::AssertionResult runs_with_released_constants_poisoned(const char* backend,
                                                                 ReleaseCase& c,
                                                                 std::vector<uint32_t>* released);

/// For a backend that copies every constant it reads: runs the case as above and checks that each
/// of its constants was released.
::testing::AssertionResult releases_every_constant(const char* backend);

}  // namespace tessera::backend_testing
