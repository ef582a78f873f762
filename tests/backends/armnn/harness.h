// Test harness for the ArmNN backend: the shared conformance harness
// (tests/backends/common/backend_harness.h) bound to the registered "armnn" backend. ArmNN runs
// on whatever backends it has loaded; on x86 that is CpuRef.
#pragma once

#include "tessera/backends/armnn/armnn_backend.h"
#include "tests/backends/common/backend_harness.h"

namespace tessera::armnn_backend::testing {

using backend_testing::close;
using backend_testing::Floats;
using backend_testing::GraphCase;
using backend_testing::random_inputs;
using backend_testing::run_portable;
using backend_testing::RunOptions;

inline constexpr const char kBackendName[] = "armnn";

/// An initialised "armnn" delegate, with the backend's own summary of it.
using Session = backend_testing::BoundSession<kBackendName, &summarize_delegate>;
/// Runs through the armnn backend.
inline constexpr backend_testing::BoundRun run_armnn{kBackendName};
/// Runs both ways on random inputs and compares.
inline constexpr backend_testing::BoundMatchesPortable matches_portable{kBackendName};

}  // namespace tessera::armnn_backend::testing
