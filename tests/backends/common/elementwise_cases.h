// Elementwise graphs for the backend tests: binary ops with broadcasting, unary ops and PRelu,
// built the same way for every backend's tests.
#pragma once

#include <cstdint>
#include <vector>

#include "tests/backends/common/backend_harness.h"

namespace tessera::backend_testing {

/// The binary ops every backend under test implements with broadcasting.
inline constexpr fb::OpType kBinaryOps[] = {fb::OpType::Add, fb::OpType::Sub, fb::OpType::Mul,
                                            fb::OpType::Div, fb::OpType::Max, fb::OpType::Min};

/// x (graph input, dims a) op y (graph input or constant, dims b), output broadcast. A constant
/// divisor is moved away from 0.
GraphCase binary_case(fb::OpType op, std::vector<int64_t> a, std::vector<int64_t> b,
                      bool b_constant, uint32_t seed, fb::Activation act = fb::Activation::None);

/// matches_portable for a binary case of `op`: Div's divisor must stay away from 0, so its
/// inputs are in [0.5, 1.5]; the other ops take the default [-1, 1].
::testing::AssertionResult binary_matches_portable(const char* backend, const GraphCase& c,
                                                   fb::OpType op);

/// One unary node over a graph input of `dims`.
GraphCase unary_case(fb::OpType op, std::vector<int64_t> dims, std::vector<ir::Attr> attrs = {});

/// PRelu of a graph input of dims `x` with a slope of dims `slope`, a constant or a graph input.
GraphCase prelu_case(std::vector<int64_t> x, std::vector<int64_t> slope, bool slope_constant,
                     uint32_t seed);

}  // namespace tessera::backend_testing
