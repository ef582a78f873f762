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
using Session = backend_testing::BoundSession<kBackendName, &summarize_delegate>;
/// Runs through the opencl backend.
inline constexpr backend_testing::BoundRun run_opencl{kBackendName};
/// Runs both ways on random inputs and compares.
inline constexpr backend_testing::BoundMatchesPortable matches_portable{kBackendName};

/// Run options with `load` as the load's backend options (which must outlive them).
inline RunOptions with(const LoadBackendOptionsMap& load) {
  RunOptions o;
  o.load = &load;
  return o;
}

}  // namespace tessera::opencl::testing
