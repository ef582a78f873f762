// ReduceMean, ReduceSum, ReduceMax over any set of axes, keepdims, noop_with_empty_axes. Float32.
#include <cmath>
#include <cstring>

#include "tessera/kernels/portable/loops.h"
#include "tessera/kernels/portable/ops.h"
#include "tessera/kernels/portable/row_ops.h"

namespace tessera::portable {
namespace {

using Op = fb::OpType;

enum class Reduce { Sum, Mean, Max };

// The loop runs over the (contiguous) input; operand 0 is the output, stride 0 on reduced dims.
struct ReduceState {
  Reduce kind;
  int64_t out_numel;
  float mean_scale;  // 1 / reduced count, for Mean
  bool identity;     // noop_with_empty_axes with no axes: copy
  StridedLoop<1> loop;
};

Status run_reduce(const void* state, Span<const Tensor* const> in, Span<Tensor* const> out) {
  const auto& s = *static_cast<const ReduceState*>(state);
  const float* x = in[0]->data_as<const float>();
  float* y = out[0]->data_as<float>();
  if (s.identity) {
    std::memcpy(y, x, static_cast<size_t>(s.out_numel) * sizeof(float));
    return Status::ok();
  }
  const bool is_max = s.kind == Reduce::Max;
  const float init = is_max ? -INFINITY : 0.0f;
  for (int64_t i = 0; i < s.out_numel; ++i) y[i] = init;
  const int64_t ys = s.loop.strides[0][s.loop.rank - 1];
  for_each_row(s.loop, [&](const int64_t* off, int64_t in_off, int64_t n) {
    const float* xr = x + in_off;
    float* yr = y + off[0];
    if (ys == 0) {  // the innermost dim is reduced
      if (is_max) {
        const float m = row_max(xr, n);
        *yr = (m > *yr || m != m) ? m : *yr;
      } else {
        *yr += row_sum(xr, n);
      }
    } else if (is_max) {
      for (int64_t i = 0; i < n; ++i) yr[i] = (xr[i] > yr[i] || xr[i] != xr[i]) ? xr[i] : yr[i];
    } else {
      for (int64_t i = 0; i < n; ++i) yr[i] += xr[i];
    }
  });
  if (s.kind == Reduce::Mean) {
    for (int64_t i = 0; i < s.out_numel; ++i) y[i] *= s.mean_scale;
  }
  return Status::ok();
}

}  // namespace

Result<PreparedKernel> prepare_reduce(OpContext& ctx) {
  TESSERA_RETURN_IF_ERROR(ctx.expect_inputs(1, 1));
  TESSERA_RETURN_IF_ERROR(ctx.expect_outputs(1, 1));
  TESSERA_RETURN_IF_ERROR(ctx.expect_input_dtype(0, {ScalarType::Float32}));
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_dtype(0, ScalarType::Float32));
  const Tensor* x = ctx.input(0);
  const int rank = x->dim();
  TESSERA_ASSIGN_OR_RETURN(const ir::ReduceAttrs attrs, ctx.read_attrs<ir::ReduceAttrs>());
  const Span<const int64_t> axes = attrs.axes;
  const int64_t keepdims = attrs.keepdims;
  const int64_t noop = attrs.noop_with_empty_axes;
  if ((keepdims != 0 && keepdims != 1) || (noop != 0 && noop != 1)) {
    return ctx.error(Error::InvalidProgram, "keepdims and noop_with_empty_axes must be 0 or 1");
  }
  if (axes.size() > static_cast<size_t>(rank)) {
    return ctx.error(Error::InvalidProgram, "%zu axes for a rank-%d input", axes.size(), rank);
  }
  bool reduced[kMaxDims] = {};
  for (int64_t a : axes) {
    TESSERA_ASSIGN_OR_RETURN(int d, ctx.normalize_axis(a, rank, "axis"));
    if (reduced[d]) return ctx.error(Error::InvalidProgram, "axis %d is repeated", d);
    reduced[d] = true;
  }
  TESSERA_ASSIGN_OR_RETURN(ReduceState * s, ctx.make_state<ReduceState>());
  s->kind = ctx.op() == Op::ReduceMax ? Reduce::Max
                                      : (ctx.op() == Op::ReduceSum ? Reduce::Sum : Reduce::Mean);
  if (axes.empty() && noop != 0) {
    TESSERA_RETURN_IF_ERROR(ctx.expect_output_shape(0, x->sizes()));
    s->identity = true;
    s->out_numel = x->numel();
    return PreparedKernel{run_reduce, s};
  }
  if (axes.empty()) {
    for (int d = 0; d < rank; ++d) reduced[d] = true;
  }
  Shape computed;
  int64_t count = 1;
  for (int d = 0; d < rank; ++d) {
    if (!reduced[d]) {
      computed.push(x->size(d));
    } else {
      count *= x->size(d);
      if (keepdims) computed.push(1);
    }
  }
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_shape(0, computed.span()));
  s->out_numel = computed.numel();
  s->mean_scale = 1.0f / static_cast<float>(count);  // inf for an empty reduction: NaN mean
  int64_t out_stride = 1;
  s->loop.rank = rank;
  for (int d = rank - 1; d >= 0; --d) {
    s->loop.sizes[d] = x->size(d);
    s->loop.strides[0][d] = reduced[d] ? 0 : out_stride;
    if (!reduced[d]) out_stride *= x->size(d);
  }
  coalesce(s->loop);
  return PreparedKernel{run_reduce, s};
}

}  // namespace tessera::portable
