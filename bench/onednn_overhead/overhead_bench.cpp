// Overhead of running one oneDNN primitive through Tessera.
//
//   Direct   the primitive executed with dnnl_primitive_execute, as an application holding NCHW
//            data would run it: the layout oneDNN prefers, with reorders from and to NCHW when
//            that layout differs (the same work the delegate does at its boundary).
//   Backend  OnednnBackend::execute on an initialised delegate (argument checks, binding the
//            arguments' data, the steps, the stream wait).
//   Method   Method::execute of a program whose only instruction is that delegate.
//
// The ops and the two Tessera paths: bench/overhead/overhead_common.h.
//
//   build/bench/onednn_overhead/onednn_overhead_bench --benchmark_repetitions=5
#include <benchmark/benchmark.h>
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "bench/overhead/overhead_common.h"

namespace tessera::bench {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

void BM_Direct(benchmark::State& state) {
  const OpSpec s = make_spec(state.range(0) == 1);
  omp_set_num_threads(1);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  Floats a(static_cast<size_t>(numel(s.in_dims)), 0.5f), b(a.size(), 0.25f);
  Floats y(static_cast<size_t>(numel(s.out_dims)));
  const memory::dims in(s.in_dims.begin(), s.in_dims.end());
  const memory::dims out(s.out_dims.begin(), s.out_dims.end());
  if (!s.conv) {
    const memory::desc md(in, dt::f32, tag::ab);
    dnnl::binary::primitive_desc pd(dnnl::binary::desc(dnnl::algorithm::binary_add, md, md, md),
                                    engine);
    dnnl::binary add(pd);
    memory ma(md, engine, a.data()), mb(md, engine, b.data()), my(md, engine, y.data());
    for (auto _ : state) {
      add.execute(stream, {{DNNL_ARG_SRC_0, ma}, {DNNL_ARG_SRC_1, mb}, {DNNL_ARG_DST, my}});
      stream.wait();
      benchmark::DoNotOptimize(y.data());
      benchmark::ClobberMemory();
    }
    return;
  }
  const memory::desc any_in(in, dt::f32, tag::any), any_out(out, dt::f32, tag::any);
  const memory::desc w_any({16, 16, 1, 1}, dt::f32, tag::any), bias_md({16}, dt::f32, tag::a);
  dnnl::convolution_forward::primitive_desc pd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                      dnnl::algorithm::convolution_direct, any_in, w_any, bias_md,
                                      any_out, {1, 1}, {0, 0}, {0, 0}),
      engine);
  dnnl::convolution_forward conv(pd);
  memory x_nchw({in, dt::f32, tag::abcd}, engine, a.data());
  memory y_nchw({out, dt::f32, tag::abcd}, engine, y.data());
  memory w_plain({{16, 16, 1, 1}, dt::f32, tag::abcd}, engine,
                 const_cast<float*>(s.weights.data()));
  memory bias(bias_md, engine, const_cast<float*>(s.bias.data()));
  memory w(pd.weights_desc(), engine);
  dnnl::reorder(w_plain, w).execute(stream, w_plain, w);
  const bool reorder_in = pd.src_desc() != x_nchw.get_desc();
  const bool reorder_out = pd.dst_desc() != y_nchw.get_desc();
  memory x = reorder_in ? memory(pd.src_desc(), engine) : x_nchw;
  memory yb = reorder_out ? memory(pd.dst_desc(), engine) : y_nchw;
  dnnl::reorder to_src = reorder_in ? dnnl::reorder(x_nchw, x) : dnnl::reorder();
  dnnl::reorder to_nchw = reorder_out ? dnnl::reorder(yb, y_nchw) : dnnl::reorder();
  stream.wait();
  for (auto _ : state) {
    if (reorder_in) to_src.execute(stream, x_nchw, x);
    conv.execute(
        stream,
        {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_BIAS, bias}, {DNNL_ARG_DST, yb}});
    if (reorder_out) to_nchw.execute(stream, yb, y_nchw);
    stream.wait();
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetLabel(std::string(reorder_in || reorder_out ? "with boundary reorders, " : "") +
                 pd.impl_info_str());
}

const int registered = register_overhead_benchmarks("onednn", BM_Direct);

}  // namespace
}  // namespace tessera::bench

BENCHMARK_MAIN();
