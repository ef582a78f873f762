// Shared parts of the one-op overhead benchmarks (bench/xnnpack_overhead, bench/onednn_overhead):
// the op, its payload graph, and the two Tessera paths measured against each library's direct
// call:
//
//   Backend  <backend>::execute on an initialised delegate of the op.
//   Method   Method::execute of a program whose only instruction is that delegate.
//
// Two ops: an Add of two [1, 256] tensors, and a 1x1 convolution of 16 -> 16 channels on
// [1, 16, 8, 8] (NCHW at the delegate boundary). One thread everywhere.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "tessera/ir/graph.h"

namespace tessera::bench {

using Floats = std::vector<float>;

struct OpSpec {
  bool conv;  // else add
  std::vector<int64_t> in_dims, out_dims;
  Floats weights, bias;  // conv: [16, 16, 1, 1] (OIHW) and [16]
};

OpSpec make_spec(bool conv);
int64_t numel(const std::vector<int64_t>& dims);
/// The payload graph; constants are program constants 0 (weights) and 1 (bias).
ir::Graph make_graph(const OpSpec& s);

/// The Backend and Method paths for `backend` (one thread), on the op of state.range(0).
void run_backend(benchmark::State& state, const char* backend);
void run_method(benchmark::State& state, const char* backend);

/// Registers BM_Direct (`direct`, the library called directly), BM_Backend and BM_Method for
/// `backend`, each on both ops (the `conv` argument 0 and 1). Call before BENCHMARK_MAIN runs,
/// e.g. from a namespace-scope initialiser; returns 0.
int register_overhead_benchmarks(const char* backend, void (*direct)(benchmark::State&));

}  // namespace tessera::bench
