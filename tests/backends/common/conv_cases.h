// Conv graphs for the backend tests: one configuration struct and the builders every backend's
// Conv tests (shared conformance cases and backend-specific ones) make their graphs with.
#pragma once

#include <cstdint>
#include <vector>

#include "tests/backends/common/backend_harness.h"

namespace tessera::backend_testing {

/// One 2-D Conv node: NCHW input, OIHW weights, optional bias and fused activation.
struct ConvCfg {
  int64_t n, cin, h, w, cout, kh, kw;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  int64_t group = 1;
  bool bias = true;
  fb::Activation act = fb::Activation::None;
  float act_min = 0.0f, act_max = 6.0f;  // for act == Clip
};

/// Output dims {n, cout, oh, ow} of `c`.
std::vector<int64_t> conv_out(const ConvCfg& c);

/// Adds a Conv node reading `x` to `g`, with random weights and bias; returns its output value.
int add_conv(GraphCase& g, int x, const ConvCfg& c);

/// A graph of one Conv over a graph input; `seed` makes its constants.
GraphCase conv_case(const ConvCfg& c, uint32_t seed);

}  // namespace tessera::backend_testing
