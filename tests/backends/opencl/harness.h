// Test harness for the OpenCL backend: the shared conformance harness
// (tests/backends/common/backend_harness.h) bound to the registered "opencl" backend.
#pragma once

#include "tessera/backends/opencl/opencl_backend.h"
#include "tests/backends/common/backend_harness.h"

namespace tessera::opencl::testing {

using backend_testing::close;
using backend_testing::Floats;
using backend_testing::GraphCase;
using backend_testing::random_inputs;
using backend_testing::run_portable;
using backend_testing::RunOptions;

inline constexpr const char kBackendName[] = "opencl";

/// An initialised "opencl" delegate, with the backend's own summary of it.
class Session : public backend_testing::Session {
 public:
  Session() : backend_testing::Session(kBackendName) {}
  const DelegateSummary& summary() const { return summarize_delegate(handle()); }
};

/// Runs through the opencl backend.
inline Result<std::vector<Floats>> run_opencl(const GraphCase& c, const std::vector<Floats>& inputs,
                                             const RunOptions& options = {}) {
  return backend_testing::run_backend(kBackendName, c, inputs, options);
}

/// Runs both ways on random inputs and compares.
inline ::testing::AssertionResult matches_portable(const GraphCase& c, float lo = -1.0f,
                                                   float hi = 1.0f, double relative = 1e-4) {
  return backend_testing::matches_portable(kBackendName, c, lo, hi, relative);
}

}  // namespace tessera::opencl::testing
