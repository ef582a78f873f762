// Elementwise graphs for the backend tests: binary ops with broadcasting, unary ops and PRelu,
// built the same way for every backend's tests.
#pragma once

#include <cstdint>
#include <vector>

#include "tests/backends/common/backend_harness.h"

namespace tessera::backend_testing {

/// x (graph input, dims a) op y (graph input or constant, dims b), output broadcast. A constant
/// divisor is moved away from 0.
GraphCase binary_case(fb::OpType op, std::vector<int64_t> a, std::vector<int64_t> b,
                      bool b_constant, uint32_t seed, fb::Activation act = fb::Activation::None);

/// One unary node over a graph input of `dims`.
GraphCase unary_case(fb::OpType op, std::vector<int64_t> dims, std::vector<ir::Attr> attrs = {});

/// PRelu of a graph input of dims `x` with a slope of dims `slope`, a constant or a graph input.
GraphCase prelu_case(std::vector<int64_t> x, std::vector<int64_t> slope, bool slope_constant,
                     uint32_t seed);

}  // namespace tessera::backend_testing
