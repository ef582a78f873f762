// Helpers shared by the OpenCL option, cache and device tests: small graphs, and the file helpers
// of tests/backends/common/test_files.h.
#pragma once

#include <cstdint>

#include "harness.h"
#include "tests/backends/common/test_files.h"

namespace tessera::opencl::testing {

using backend_testing::LogCapture;
using backend_testing::read_bytes;
using backend_testing::TempDir;
using backend_testing::write_bytes;

/// A conv + relu + pool + gemm graph: a few kernels of different kinds.
GraphCase small_net(uint32_t seed = 1);

}  // namespace tessera::opencl::testing
