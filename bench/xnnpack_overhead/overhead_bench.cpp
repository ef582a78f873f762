// Overhead of running one XNNPACK operator through Tessera.
//
//   Direct   xnn_invoke_runtime on a hand-built runtime of the same operator (NHWC data).
//   Backend  XnnpackBackend::execute on an initialised delegate (input staging, layout
//            conversion for 4-D data, invoke, output staging).
//   Method   Method::execute of a program whose only instruction is that delegate.
//
// The ops and the two Tessera paths: bench/overhead/overhead_common.h (for the 1x1
// convolution, NCHW -> NHWC on entry, NHWC -> NCHW on exit).
//
//   build-xnn/bench/xnnpack_overhead/xnnpack_overhead_bench --benchmark_repetitions=5
#include <benchmark/benchmark.h>
#include <xnnpack.h>

#include <cmath>
#include <vector>

#include "bench/overhead/overhead_common.h"

namespace tessera::bench {
namespace {

// ---- Direct XNNPACK ----------------------------------------------------------------------------

void BM_Direct(benchmark::State& state) {
  const OpSpec s = make_spec(state.range(0) == 1);
  if (xnn_initialize(nullptr) != xnn_status_success) {
    state.SkipWithError("xnn_initialize failed");
    return;
  }
  xnn_subgraph_t sg = nullptr;
  const uint32_t n_ext = s.conv ? 2 : 3;
  xnn_create_subgraph(n_ext, 0, &sg);
  std::vector<float> a(static_cast<size_t>(numel(s.in_dims)) + 16, 0.5f);
  std::vector<float> b(a.size(), 0.25f), y(static_cast<size_t>(numel(s.out_dims)) + 16);
  std::vector<xnn_external_value> ext;
  if (s.conv) {
    const size_t in[4] = {1, 8, 8, 16}, w[4] = {16, 1, 1, 16}, bd[1] = {16};
    uint32_t x_id, w_id, b_id, y_id;
    xnn_define_tensor_value(sg, xnn_datatype_fp32, 4, in, nullptr, 0, XNN_VALUE_FLAG_EXTERNAL_INPUT,
                            &x_id);
    xnn_define_tensor_value(sg, xnn_datatype_fp32, 4, w, s.weights.data(), XNN_INVALID_VALUE_ID, 0,
                            &w_id);
    xnn_define_tensor_value(sg, xnn_datatype_fp32, 1, bd, s.bias.data(), XNN_INVALID_VALUE_ID, 0,
                            &b_id);
    xnn_define_tensor_value(sg, xnn_datatype_fp32, 4, in, nullptr, 1,
                            XNN_VALUE_FLAG_EXTERNAL_OUTPUT, &y_id);
    xnn_define_convolution_2d(sg, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 16, 16, -INFINITY, INFINITY,
                              x_id, w_id, b_id, y_id, 0);
    ext = {{0, a.data()}, {1, y.data()}};
  } else {
    const size_t d[2] = {1, 256};
    uint32_t a_id, b_id, y_id;
    xnn_define_tensor_value(sg, xnn_datatype_fp32, 2, d, nullptr, 0, XNN_VALUE_FLAG_EXTERNAL_INPUT,
                            &a_id);
    xnn_define_tensor_value(sg, xnn_datatype_fp32, 2, d, nullptr, 1, XNN_VALUE_FLAG_EXTERNAL_INPUT,
                            &b_id);
    xnn_define_tensor_value(sg, xnn_datatype_fp32, 2, d, nullptr, 2, XNN_VALUE_FLAG_EXTERNAL_OUTPUT,
                            &y_id);
    xnn_define_add2(sg, -INFINITY, INFINITY, a_id, b_id, y_id, 0);
    ext = {{0, a.data()}, {1, b.data()}, {2, y.data()}};
  }
  xnn_runtime_t rt = nullptr;
  if (xnn_create_runtime_v2(sg, nullptr, 0, &rt) != xnn_status_success) {
    state.SkipWithError("xnn_create_runtime_v2 failed");
    return;
  }
  xnn_delete_subgraph(sg);
  xnn_setup_runtime(rt, ext.size(), ext.data());
  for (auto _ : state) {
    xnn_invoke_runtime(rt);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  xnn_delete_runtime(rt);
}

const int registered = register_overhead_benchmarks("xnnpack", BM_Direct);

}  // namespace
}  // namespace tessera::bench

BENCHMARK_MAIN();
