// MaxPool, AveragePool (1-D to 3-D, pads, strides, dilations, ceil mode, count_include_pad) and
// GlobalAveragePool. Float32.
#include <cmath>

#include "tessera/kernels/portable/ops.h"
#include "tessera/kernels/portable/row_ops.h"
#include "tessera/kernels/portable/spatial.h"

namespace tessera::portable {
namespace {

using Op = fb::OpType;

// Per spatial slot and output index: the window's valid taps [lo, hi) and, for
// count_include_pad, how many taps fall inside input + padding.
struct Taps {
  int64_t lo, hi, padded;
};

struct PoolState {
  bool is_max;
  bool count_include_pad;
  bool clamp;
  float act_lo, act_hi;
  int64_t planes;  // N * C
  SpatialAttrs g;
  const Taps* taps[kMaxSpatial];  // allocator memory, g.out[s] entries each
};

// One output row (fixed depth and height): every valid (kd, kh, kw) tap is applied to the whole
// row at once, so the inner loop runs over output columns and vectorises for stride 1.
void pool_row(const PoolState& s, const float* x, int64_t od, int64_t oh, float* yrow) {
  const SpatialAttrs& g = s.g;
  const Taps td = s.taps[0][od];
  const Taps th = s.taps[1][oh];
  const int64_t d0 = od * g.stride[0] - g.pad_begin[0];
  const int64_t h0 = oh * g.stride[1] - g.pad_begin[1];
  const int64_t n = g.out[2], sw = g.stride[2];
  const float init = s.is_max ? -INFINITY : 0.0f;
  for (int64_t ow = 0; ow < n; ++ow) yrow[ow] = init;
  for (int64_t kd = td.lo; kd < td.hi; ++kd) {
    for (int64_t kh = th.lo; kh < th.hi; ++kh) {
      const float* xrow =
          x + ((d0 + kd * g.dilation[0]) * g.in[1] + h0 + kh * g.dilation[1]) * g.in[2];
      for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
        const int64_t ix0 = kw * g.dilation[2] - g.pad_begin[2];
        int64_t lo, hi;
        valid_range(ix0, sw, g.in[2], n, &lo, &hi);
        const float* xs = xrow + ix0;
        if (s.is_max) {
          for (int64_t ow = lo; ow < hi; ++ow) {
            const float v = xs[ow * sw];
            yrow[ow] = (v > yrow[ow] || v != v) ? v : yrow[ow];
          }
        } else if (sw == 1) {
          for (int64_t ow = lo; ow < hi; ++ow) yrow[ow] += xs[ow];
        } else {
          for (int64_t ow = lo; ow < hi; ++ow) yrow[ow] += xs[ow * sw];
        }
      }
    }
  }
  if (!s.is_max) {
    const int64_t valid_dh = (td.hi - td.lo) * (th.hi - th.lo);
    const int64_t padded_dh = td.padded * th.padded;
    for (int64_t ow = 0; ow < n; ++ow) {
      const Taps tw = s.taps[2][ow];
      const int64_t count =
          s.count_include_pad ? padded_dh * tw.padded : valid_dh * (tw.hi - tw.lo);
      yrow[ow] = count > 0 ? yrow[ow] / static_cast<float>(count) : 0.0f;
    }
  }
  if (s.clamp) {
    for (int64_t ow = 0; ow < n; ++ow) {
      yrow[ow] = yrow[ow] < s.act_lo ? s.act_lo : (yrow[ow] > s.act_hi ? s.act_hi : yrow[ow]);
    }
  }
}

Status run_pool(const void* state, Span<const Tensor* const> in, Span<Tensor* const> out) {
  const auto& s = *static_cast<const PoolState*>(state);
  const SpatialAttrs& g = s.g;
  const float* x = in[0]->data_as<const float>();
  float* y = out[0]->data_as<float>();
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
  const int64_t out_plane = g.out[0] * g.out[1] * g.out[2];
  for (int64_t p = 0; p < s.planes; ++p, x += in_plane, y += out_plane) {
    float* yrow = y;
    for (int64_t od = 0; od < g.out[0]; ++od) {
      for (int64_t oh = 0; oh < g.out[1]; ++oh, yrow += g.out[2]) pool_row(s, x, od, oh, yrow);
    }
  }
  return Status::ok();
}

// Floor division for a possibly negative numerator and a positive divisor.
int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

Result<const Taps*> make_taps(OpContext& ctx, const SpatialAttrs& g, int s) {
  TESSERA_ASSIGN_OR_RETURN(Taps * taps, ctx.make_array<Taps>(static_cast<size_t>(g.out[s])));
  const int64_t k = g.kernel[s], d = g.dilation[s], in = g.in[s];
  for (int64_t o = 0; o < g.out[s]; ++o) {
    const int64_t start = o * g.stride[s] - g.pad_begin[s];
    // Taps t with 0 <= start + t*d < in.
    int64_t lo = start >= 0 ? 0 : (-start + d - 1) / d;
    int64_t hi = floor_div(in - 1 - start, d) + 1;
    if (hi > k) hi = k;
    if (hi < lo) hi = lo;
    // Taps with start + t*d < in + pad_end (start >= -pad_begin always holds).
    int64_t padded = floor_div(in + g.pad_end[s] - 1 - start, d) + 1;
    padded = padded < 0 ? 0 : (padded > k ? k : padded);
    taps[o] = Taps{lo, hi, padded};
  }
  return static_cast<const Taps*>(taps);
}

}  // namespace

Result<PreparedKernel> prepare_pool(OpContext& ctx) {
  const bool is_max = ctx.op() == Op::MaxPool;
  TESSERA_RETURN_IF_ERROR(ctx.expect_inputs(1, 1));
  if (is_max && ctx.num_outputs() == 2) {
    return ctx.error(Error::NotSupported, "the Indices output is not supported");
  }
  TESSERA_RETURN_IF_ERROR(ctx.expect_outputs(1, 1));
  TESSERA_RETURN_IF_ERROR(ctx.expect_input_dtype(0, {ScalarType::Float32}));
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_dtype(0, ScalarType::Float32));
  const Tensor* x = ctx.input(0);
  if (x->dim() < 3 || x->dim() > 2 + kMaxSpatial) {
    return ctx.error(Error::NotSupported, "input rank %d is not supported (3 to %d)", x->dim(),
                     2 + kMaxSpatial);
  }
  SpatialAttrs g;
  g.n = x->dim() - 2;
  TESSERA_ASSIGN_OR_RETURN(const ir::PoolAttrs attrs, ctx.read_attrs<ir::PoolAttrs>());
  const Span<const int64_t> ks = attrs.kernel_shape;
  if (ks.size() != static_cast<size_t>(g.n)) {
    return ctx.error(Error::InvalidProgram, "'kernel_shape' has %zu entries, expected %d",
                     ks.size(), g.n);
  }
  for (int i = 0; i < g.n; ++i) {
    if (ks[i] < 1 || ks[i] >= kMaxAttrValue) {
      return ctx.error(Error::InvalidProgram, "'kernel_shape'[%d] is %lld, expected >= 1", i,
                       static_cast<long long>(ks[i]));
    }
    g.kernel[g.slot(i)] = ks[i];
    g.in[g.slot(i)] = x->size(2 + i);
  }
  TESSERA_RETURN_IF_ERROR(read_spatial_attrs(ctx, ir::window_of(attrs), &g));
  const int64_t ceil_mode = attrs.ceil_mode;
  const int64_t include_pad = attrs.count_include_pad;
  const int64_t storage_order = attrs.storage_order;
  if ((ceil_mode != 0 && ceil_mode != 1) || (include_pad != 0 && include_pad != 1) ||
      (storage_order != 0 && storage_order != 1)) {
    return ctx.error(Error::InvalidProgram,
                     "ceil_mode, count_include_pad and storage_order must be 0 or 1");
  }
  for (int i = 0; i < g.n; ++i) {
    const int s = g.slot(i);
    if (g.pad_begin[s] >= g.extent(s) || g.pad_end[s] >= g.extent(s)) {
      return ctx.error(Error::InvalidProgram,
                       "pads (%lld, %lld) of spatial dim %d must be smaller than the kernel "
                       "extent %lld",
                       static_cast<long long>(g.pad_begin[s]), static_cast<long long>(g.pad_end[s]),
                       i, static_cast<long long>(g.extent(s)));
    }
  }
  TESSERA_RETURN_IF_ERROR(window_output_sizes(ctx, ceil_mode != 0, &g));
  Shape computed;
  computed.push(x->size(0));
  computed.push(x->size(1));
  for (int i = 0; i < g.n; ++i) computed.push(g.out[g.slot(i)]);
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_shape(0, computed.span()));

  TESSERA_ASSIGN_OR_RETURN(PoolState * s, ctx.make_state<PoolState>());
  s->is_max = is_max;
  s->count_include_pad = include_pad != 0;
  s->planes = x->size(0) * x->size(1);
  s->g = g;
  for (int k = 0; k < kMaxSpatial; ++k) {
    TESSERA_ASSIGN_OR_RETURN(s->taps[k], make_taps(ctx, g, k));
  }
  s->clamp = ctx.activation().enabled;
  s->act_lo = ctx.activation().min;
  s->act_hi = ctx.activation().max;
  ctx.mark_activation_fused();
  return PreparedKernel{run_pool, s};
}

namespace {

struct GlobalPoolState {
  int64_t planes, size;
};

Status run_global_average_pool(const void* state, Span<const Tensor* const> in,
                               Span<Tensor* const> out) {
  const auto& s = *static_cast<const GlobalPoolState*>(state);
  const float* x = in[0]->data_as<const float>();
  float* y = out[0]->data_as<float>();
  const float inv = 1.0f / static_cast<float>(s.size);
  for (int64_t p = 0; p < s.planes; ++p) y[p] = row_sum(x + p * s.size, s.size) * inv;
  return Status::ok();
}

}  // namespace

Result<PreparedKernel> prepare_global_average_pool(OpContext& ctx) {
  TESSERA_RETURN_IF_ERROR(ctx.expect_inputs(1, 1));
  TESSERA_RETURN_IF_ERROR(ctx.expect_outputs(1, 1));
  TESSERA_RETURN_IF_ERROR(ctx.expect_input_dtype(0, {ScalarType::Float32}));
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_dtype(0, ScalarType::Float32));
  const Tensor* x = ctx.input(0);
  if (x->dim() < 3) {
    return ctx.error(Error::InvalidProgram, "input must have rank >= 3 (N, C, spatial...), got %d",
                     x->dim());
  }
  Shape computed;
  for (int d = 0; d < x->dim(); ++d) computed.push(d < 2 ? x->size(d) : 1);
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_shape(0, computed.span()));
  TESSERA_ASSIGN_OR_RETURN(GlobalPoolState * s, ctx.make_state<GlobalPoolState>());
  s->planes = x->size(0) * x->size(1);
  s->size = 1;
  for (int d = 2; d < x->dim(); ++d) s->size *= x->size(d);
  return PreparedKernel{run_global_average_pool, s};
}

}  // namespace tessera::portable
