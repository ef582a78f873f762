// The conformance suites every backend shares (tests/backends/common/conformance_test.cpp): one
// definition of each case, parameterised by the name of a registered backend. Each backend's
// test executable compiles conformance_test.cpp and instantiates the suites it implements, so
// a case lives once and runs against every backend that supports it:
//
//   namespace tessera::backend_testing {
//   INSTANTIATE_TEST_SUITE_P(Conformance, Conv, ::testing::Values("onednn"), BackendParamName());
//   }
//
// Cases only one backend supports, or that check a backend's own summary, stay in that
// backend's folder.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "tests/backends/common/backend_harness.h"

namespace tessera::backend_testing {

/// A conformance case; the parameter names the backend under test.
class BackendConformance : public ::testing::TestWithParam<const char*> {
 protected:
  const char* backend() const { return GetParam(); }
  /// backend_testing::matches_portable through the backend under test.
  ::testing::AssertionResult matches_portable(const GraphCase& c, float lo = -1.0f, float hi = 1.0f,
                                              double relative = 1e-4) const {
    return backend_testing::matches_portable(backend(), c, lo, hi, relative);
  }
};

/// Names an instantiation after its backend: "Conformance/Conv.Basic3x3/onednn".
struct BackendParamName {
  std::string operator()(const ::testing::TestParamInfo<const char*>& info) const {
    return info.param;
  }
};

// One suite per op family, so that a backend instantiates exactly the families it implements.
class Conv : public BackendConformance {};
class Binary : public BackendConformance {};
class Unary : public BackendConformance {};
class PRelu : public BackendConformance {};

}  // namespace tessera::backend_testing
