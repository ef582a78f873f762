// Test harness for the oneDNN backend: the shared conformance harness
// (tests/backends/common/backend_harness.h) bound to the registered "onednn" backend.
#pragma once

#include <gtest/gtest.h>

#include "tessera/backend/options.h"
#include "tessera/backend/options_map.h"
#include "tessera/backends/onednn/onednn_backend.h"
#include "tests/backends/common/backend_harness.h"

namespace tessera::onednn::testing {

using backend_testing::close;
using backend_testing::Floats;
using backend_testing::GraphCase;
using backend_testing::random_inputs;
using backend_testing::run_portable;
using backend_testing::RunOptions;

inline constexpr const char kBackendName[] = "onednn";

/// An initialised "onednn" delegate, with the backend's own summary of it.
using Session = backend_testing::BoundSession<kBackendName, &summarize_delegate>;
/// Runs through the onednn backend.
inline constexpr backend_testing::BoundRun run_onednn{kBackendName};
/// Runs both ways on random inputs and compares.
inline constexpr backend_testing::BoundMatchesPortable matches_portable{kBackendName};

/// `key` = `value` for onednn at load scope, in `load` (for RunOptions::load).
template <typename T>
::testing::AssertionResult set_load_option(LoadBackendOptionsMap* load, OptionKey<T> key, T value) {
  BackendOptions<1> opts;
  if (!opts.set(key, value).is_ok() || !load->set_options(kBackendName, opts.view()).is_ok()) {
    return ::testing::AssertionFailure() << "cannot set onednn." << key.name;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace tessera::onednn::testing
