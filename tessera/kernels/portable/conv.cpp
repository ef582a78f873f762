// Conv and ConvTranspose, 1-D to 3-D, float32.
//
// Conv picks one of three paths at prepare:
//   direct     one input channel per group (depthwise and its multipliers): row-wise axpy loops;
//   pointwise  1x1 kernel, stride 1, no pads: GEMM straight on the input;
//   im2col     everything else: GEMM whose B panels are packed from the input on the fly, so the
//              scratch is one kGemmKc x kGemmNc panel rather than the whole column matrix.
// ConvTranspose: GEMM of the transposed weights with the input into a column tile, then a
// scatter-add (col2im) into the bias-initialised output.
#include <cstring>

#include "tessera/kernels/portable/gemm.h"
#include "tessera/kernels/portable/ops.h"
#include "tessera/kernels/portable/spatial.h"

namespace tessera::portable {
namespace {

enum class ConvPath { Direct, Pointwise, Im2col };

// What Conv and ConvTranspose both know after prepare; each state adds its own path data.
struct ConvGeometry {
  SpatialAttrs g;  // `in` is X's spatial size, `out` Y's
  int64_t batch, channels, out_channels, group;
  int64_t cg, mg;  // input and output channels per group
  int64_t in_vol, out_vol, kvol;
  bool has_bias;
  bool clamp;
  float lo, hi;
};

struct ConvState : ConvGeometry {
  ConvPath path;
  float* scratch;  // im2col panel
};

inline int64_t min64(int64_t a, int64_t b) {
  return a < b ? a : b;
}
inline int64_t max64(int64_t a, int64_t b) {
  return a > b ? a : b;
}

// ---- im2col panel packing ----------------------------------------------------------------------

struct PackCtx {
  const float* x;  // first input channel of the group
  const SpatialAttrs* g;
};

// Packs rows k0..k0+kc (channel, kd, kh, kw) and columns j0..j0+nc (output positions) of the
// virtual column matrix.
void pack_im2col(const void* vctx, int64_t k0, int64_t kc, int64_t j0, int64_t nc, float* dst) {
  const auto& c = *static_cast<const PackCtx*>(vctx);
  const SpatialAttrs& g = *c.g;
  const int64_t k12 = g.kernel[1] * g.kernel[2];
  const int64_t kvol = g.kernel[0] * k12;
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
  for (int64_t p = 0; p < kc; ++p) {
    const int64_t k = k0 + p;
    const int64_t ch = k / kvol, r = k % kvol;
    const int64_t kd = r / k12, kh = (r / g.kernel[2]) % g.kernel[1], kw = r % g.kernel[2];
    const float* xc = c.x + ch * in_plane;
    float* d = dst + p * nc;
    int64_t ow = j0 % g.out[2];
    int64_t oh = (j0 / g.out[2]) % g.out[1];
    int64_t od = j0 / (g.out[2] * g.out[1]);
    int64_t filled = 0;
    while (filled < nc) {
      const int64_t run = min64(nc - filled, g.out[2] - ow);
      float* out = d + filled;
      const int64_t iz = od * g.stride[0] - g.pad_begin[0] + kd * g.dilation[0];
      const int64_t iy = oh * g.stride[1] - g.pad_begin[1] + kh * g.dilation[1];
      if (iz < 0 || iz >= g.in[0] || iy < 0 || iy >= g.in[1]) {
        std::memset(out, 0, static_cast<size_t>(run) * sizeof(float));
      } else {
        const float* xrow = xc + (iz * g.in[1] + iy) * g.in[2];
        const int64_t ix0 = ow * g.stride[2] - g.pad_begin[2] + kw * g.dilation[2];
        int64_t lo, hi;
        valid_range(ix0, g.stride[2], g.in[2], run, &lo, &hi);
        for (int64_t t = 0; t < lo; ++t) out[t] = 0.0f;
        if (g.stride[2] == 1) {
          if (hi > lo) {
            std::memcpy(out + lo, xrow + ix0 + lo, static_cast<size_t>(hi - lo) * sizeof(float));
          }
        } else {
          for (int64_t t = lo; t < hi; ++t) out[t] = xrow[ix0 + t * g.stride[2]];
        }
        for (int64_t t = hi; t < run; ++t) out[t] = 0.0f;
      }
      filled += run;
      ow = 0;
      if (++oh == g.out[1]) {
        oh = 0;
        ++od;
      }
    }
  }
}

// ---- direct path: one input channel per output channel -----------------------------------------

void conv_direct_plane(const ConvState& s, const float* xc, const float* w, float bias, float* y) {
  const SpatialAttrs& g = s.g;
  for (int64_t i = 0; i < s.out_vol; ++i) y[i] = bias;
  for (int64_t od = 0; od < g.out[0]; ++od) {
    for (int64_t oh = 0; oh < g.out[1]; ++oh) {
      float* yrow = y + (od * g.out[1] + oh) * g.out[2];
      for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
        const int64_t iz = od * g.stride[0] - g.pad_begin[0] + kd * g.dilation[0];
        if (iz < 0 || iz >= g.in[0]) continue;
        for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
          const int64_t iy = oh * g.stride[1] - g.pad_begin[1] + kh * g.dilation[1];
          if (iy < 0 || iy >= g.in[1]) continue;
          const float* xrow = xc + (iz * g.in[1] + iy) * g.in[2];
          const float* wrow = w + (kd * g.kernel[1] + kh) * g.kernel[2];
          for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
            const float wv = wrow[kw];
            const int64_t ix0 = kw * g.dilation[2] - g.pad_begin[2];
            int64_t lo, hi;
            valid_range(ix0, g.stride[2], g.in[2], g.out[2], &lo, &hi);
            if (g.stride[2] == 1) {
              const float* xs = xrow + ix0;
              for (int64_t ow = lo; ow < hi; ++ow) yrow[ow] += wv * xs[ow];
            } else {
              for (int64_t ow = lo; ow < hi; ++ow) yrow[ow] += wv * xrow[ow * g.stride[2] + ix0];
            }
          }
        }
      }
    }
  }
  if (s.clamp) clamp_inplace(y, s.out_vol, s.lo, s.hi);
}

Status run_conv(const void* state, Span<const Tensor* const> in, Span<Tensor* const> out) {
  const auto& s = *static_cast<const ConvState*>(state);
  const float* x = in[0]->data_as<const float>();
  const float* w = in[1]->data_as<const float>();
  const float* b = s.has_bias ? in[2]->data_as<const float>() : nullptr;
  float* y = out[0]->data_as<float>();
  const int64_t K = s.cg * s.kvol;
  for (int64_t n = 0; n < s.batch; ++n) {
    const float* xn = x + n * s.channels * s.in_vol;
    float* yn = y + n * s.out_channels * s.out_vol;
    if (s.path == ConvPath::Direct) {
      for (int64_t m = 0; m < s.out_channels; ++m) {
        conv_direct_plane(s, xn + (m / s.mg) * s.in_vol, w + m * s.kvol, b ? b[m] : 0.0f,
                          yn + m * s.out_vol);
      }
      continue;
    }
    for (int64_t grp = 0; grp < s.group; ++grp) {
      const float* xg = xn + grp * s.cg * s.in_vol;
      PackCtx pack{xg, &s.g};
      GemmArgs args;
      args.m = s.mg;
      args.n = s.out_vol;
      args.k = K;
      args.a = MatrixView{w + grp * s.mg * K, K, 1};
      if (s.path == ConvPath::Pointwise) {
        args.b = MatrixView{xg, s.in_vol, 1};
      } else {
        args.pack_b = pack_im2col;
        args.pack_ctx = &pack;
      }
      args.c = yn + grp * s.mg * s.out_vol;
      args.ldc = s.out_vol;
      args.row_bias = b ? b + grp * s.mg : nullptr;
      args.clamp = s.clamp;
      args.clamp_min = s.lo;
      args.clamp_max = s.hi;
      gemm(args, s.scratch);
    }
  }
  return Status::ok();
}

// Checks X, W and B of a (transposed) convolution and fills the common geometry.
// For Conv W is [M, C/group, k...]; for ConvTranspose W is [C, M/group, k...].
// `window` and `group_attr` are the node's attributes.
Status check_conv_inputs(const OpContext& ctx, bool transposed, const ir::WindowAttrs& window,
                         int64_t group_attr, SpatialAttrs* g, int64_t* group,
                         int64_t* out_channels) {
  TESSERA_RETURN_IF_ERROR(ctx.expect_inputs(2, 3));
  TESSERA_RETURN_IF_ERROR(ctx.expect_outputs(1, 1));
  for (size_t i = 0; i < 3; ++i) {
    if (ctx.input(i)) TESSERA_RETURN_IF_ERROR(ctx.expect_input_dtype(i, {ScalarType::Float32}));
  }
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_dtype(0, ScalarType::Float32));
  const Tensor* x = ctx.input(0);
  const Tensor* w = ctx.input(1);
  if (x->dim() < 3 || x->dim() > 2 + kMaxSpatial) {
    return ctx.error(Error::NotSupported, "input rank %d is not supported (3 to %d)", x->dim(),
                     2 + kMaxSpatial);
  }
  if (w->dim() != x->dim()) {
    return ctx.error(Error::ShapeMismatch, "weights have rank %d, input has rank %d", w->dim(),
                     x->dim());
  }
  *group = group_attr;
  if (*group < 1 || *group > x->size(1) || (x->size(1) > 0 && x->size(1) % *group != 0)) {
    return ctx.error(Error::InvalidProgram, "group %lld does not divide the %lld input channels",
                     static_cast<long long>(*group), static_cast<long long>(x->size(1)));
  }
  const int64_t channels = x->size(1);
  // group <= channels, but the weights' channel count is unbounded: check the products.
  Checked c;
  const int64_t grouped_channels = c.mul(w->size(1), *group);
  if (!c.ok()) return ctx.error(Error::InvalidProgram, "weights channels times group overflow");
  if (!transposed) {
    if (grouped_channels != channels) {
      return ctx.error(Error::ShapeMismatch,
                       "weights have %lld channels per group, expected %lld (%lld channels / "
                       "group %lld)",
                       static_cast<long long>(w->size(1)),
                       static_cast<long long>(channels / *group), static_cast<long long>(channels),
                       static_cast<long long>(*group));
    }
    *out_channels = w->size(0);
    if (*out_channels % *group != 0) {
      return ctx.error(Error::InvalidProgram, "group %lld does not divide the %lld output channels",
                       static_cast<long long>(*group), static_cast<long long>(*out_channels));
    }
  } else {
    if (w->size(0) != channels) {
      return ctx.error(Error::ShapeMismatch, "weights have %lld input channels, input has %lld",
                       static_cast<long long>(w->size(0)), static_cast<long long>(channels));
    }
    *out_channels = grouped_channels;
  }
  const Tensor* b = ctx.input(2);
  if (b != nullptr && (b->dim() != 1 || b->size(0) != *out_channels)) {
    char a[96];
    format_sizes(b->sizes(), a, sizeof a);
    return ctx.error(Error::ShapeMismatch, "bias has shape %s, expected [%lld]", a,
                     static_cast<long long>(*out_channels));
  }
  g->n = x->dim() - 2;
  for (int i = 0; i < g->n; ++i) {
    const int s = g->slot(i);
    g->in[s] = x->size(2 + i);
    g->kernel[s] = w->size(2 + i);
    if (g->kernel[s] < 1) {
      return ctx.error(Error::InvalidProgram, "kernel size %lld in spatial dim %d",
                       static_cast<long long>(g->kernel[s]), i);
    }
  }
  return read_spatial_attrs(ctx, window, g);
}

// Checks Y against the shape `g` computes, then makes the kernel's state with the geometry filled
// in. Both kernels apply the fused activation inside their own loops.
template <typename State>
Result<State*> make_conv_state(OpContext& ctx, const SpatialAttrs& g, int64_t group,
                               int64_t out_channels) {
  const Tensor* x = ctx.input(0);
  Shape computed;
  computed.push(x->size(0));
  computed.push(out_channels);
  for (int i = 0; i < g.n; ++i) computed.push(g.out[g.slot(i)]);
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_shape(0, computed.span()));

  TESSERA_ASSIGN_OR_RETURN(State * s, ctx.make_state<State>());
  s->g = g;
  s->batch = x->size(0);
  s->channels = x->size(1);
  s->out_channels = out_channels;
  s->group = group;
  s->cg = s->channels / group;
  s->mg = out_channels / group;
  s->in_vol = g.in[0] * g.in[1] * g.in[2];
  s->out_vol = g.out[0] * g.out[1] * g.out[2];
  s->kvol = g.kernel[0] * g.kernel[1] * g.kernel[2];
  s->has_bias = ctx.input(2) != nullptr;
  s->clamp = ctx.activation().enabled;
  s->lo = ctx.activation().min;
  s->hi = ctx.activation().max;
  ctx.mark_activation_fused();
  return s;
}

}  // namespace

Result<PreparedKernel> prepare_conv(OpContext& ctx) {
  SpatialAttrs g;
  int64_t group = 1, out_channels = 0;
  TESSERA_ASSIGN_OR_RETURN(const ir::ConvAttrs attrs, ctx.read_attrs<ir::ConvAttrs>());
  TESSERA_RETURN_IF_ERROR(
      check_conv_inputs(ctx, false, ir::window_of(attrs), attrs.group, &g, &group, &out_channels));
  TESSERA_RETURN_IF_ERROR(window_output_sizes(ctx, false, &g));
  TESSERA_ASSIGN_OR_RETURN(ConvState * s, make_conv_state<ConvState>(ctx, g, group, out_channels));
  bool pointwise = s->kvol == 1;
  for (int k = 0; k < kMaxSpatial; ++k) {
    pointwise = pointwise && g.stride[k] == 1 && g.pad_begin[k] == 0 && g.pad_end[k] == 0;
  }
  if (s->cg == 1) {
    s->path = ConvPath::Direct;
  } else if (pointwise) {
    s->path = ConvPath::Pointwise;
  } else {
    s->path = ConvPath::Im2col;
    TESSERA_ASSIGN_OR_RETURN(s->scratch,
                             ctx.make_scratch(gemm_scratch_floats(s->cg * s->kvol, s->out_vol)));
  }
  return PreparedKernel{run_conv, s};
}

// ---- ConvTranspose -----------------------------------------------------------------------------

namespace {

constexpr int64_t kColTileFloats = 64 * 1024;

struct ConvTransposeState : ConvGeometry {
  int64_t tile_rows, tile_cols;
  float* scratch;  // tile_rows x tile_cols
};

// Adds column tile rows [i0, i0+rows) x input positions [p0, p0+cols) into the group's outputs.
void col2im_tile(const ConvTransposeState& s, const float* col, int64_t i0, int64_t rows,
                 int64_t p0, int64_t cols, float* yg) {
  const SpatialAttrs& g = s.g;
  const int64_t k12 = g.kernel[1] * g.kernel[2];
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = i0 + r;
    const int64_t m = i / s.kvol, rem = i % s.kvol;
    const int64_t kd = rem / k12, kh = (rem / g.kernel[2]) % g.kernel[1], kw = rem % g.kernel[2];
    float* ym = yg + m * s.out_vol;
    const float* cr = col + r * cols;
    int64_t iw = p0 % g.in[2];
    int64_t ih = (p0 / g.in[2]) % g.in[1];
    int64_t id = p0 / (g.in[2] * g.in[1]);
    int64_t done = 0;
    while (done < cols) {
      const int64_t run = min64(cols - done, g.in[2] - iw);
      const int64_t oz = id * g.stride[0] - g.pad_begin[0] + kd * g.dilation[0];
      const int64_t oy = ih * g.stride[1] - g.pad_begin[1] + kh * g.dilation[1];
      if (oz >= 0 && oz < g.out[0] && oy >= 0 && oy < g.out[1]) {
        float* yrow = ym + (oz * g.out[1] + oy) * g.out[2];
        const int64_t ox0 = iw * g.stride[2] - g.pad_begin[2] + kw * g.dilation[2];
        int64_t lo, hi;
        valid_range(ox0, g.stride[2], g.out[2], run, &lo, &hi);
        const float* src = cr + done;
        for (int64_t t = lo; t < hi; ++t) yrow[ox0 + t * g.stride[2]] += src[t];
      }
      done += run;
      iw = 0;
      if (++ih == g.in[1]) {
        ih = 0;
        ++id;
      }
    }
  }
}

Status run_conv_transpose(const void* state, Span<const Tensor* const> in,
                          Span<Tensor* const> out) {
  const auto& s = *static_cast<const ConvTransposeState*>(state);
  const float* x = in[0]->data_as<const float>();
  const float* w = in[1]->data_as<const float>();
  const float* b = s.has_bias ? in[2]->data_as<const float>() : nullptr;
  float* y = out[0]->data_as<float>();
  const int64_t rows_total = s.mg * s.kvol;  // rows of W_g^T
  for (int64_t n = 0; n < s.batch; ++n) {
    float* yn = y + n * s.out_channels * s.out_vol;
    for (int64_t m = 0; m < s.out_channels; ++m) {
      const float v = b ? b[m] : 0.0f;
      float* ym = yn + m * s.out_vol;
      for (int64_t i = 0; i < s.out_vol; ++i) ym[i] = v;
    }
    for (int64_t grp = 0; grp < s.group; ++grp) {
      const float* xg = x + (n * s.channels + grp * s.cg) * s.in_vol;
      const float* wg = w + grp * s.cg * rows_total;  // [cg, mg * kvol]
      float* yg = yn + grp * s.mg * s.out_vol;
      for (int64_t i0 = 0; i0 < rows_total; i0 += s.tile_rows) {
        const int64_t rows = min64(s.tile_rows, rows_total - i0);
        for (int64_t p0 = 0; p0 < s.in_vol; p0 += s.tile_cols) {
          const int64_t cols = min64(s.tile_cols, s.in_vol - p0);
          GemmArgs args;
          args.m = rows;
          args.n = cols;
          args.k = s.cg;
          args.a = MatrixView{wg + i0, 1, rows_total};  // A[i, c] = W[c, i]
          args.b = MatrixView{xg + p0, s.in_vol, 1};
          args.c = s.scratch;
          args.ldc = cols;
          gemm(args, nullptr);
          col2im_tile(s, s.scratch, i0, rows, p0, cols, yg);
        }
      }
    }
    // The fused activation, while this batch's output is still in cache.
    if (s.clamp) clamp_inplace(yn, s.out_channels * s.out_vol, s.lo, s.hi);
  }
  return Status::ok();
}

}  // namespace

Result<PreparedKernel> prepare_conv_transpose(OpContext& ctx) {
  SpatialAttrs g;
  int64_t group = 1, out_channels = 0;
  TESSERA_ASSIGN_OR_RETURN(const ir::ConvTransposeAttrs attrs,
                           ctx.read_attrs<ir::ConvTransposeAttrs>());
  TESSERA_RETURN_IF_ERROR(
      check_conv_inputs(ctx, true, ir::window_of(attrs), attrs.group, &g, &group, &out_channels));
  const Span<const int64_t> output_padding = attrs.output_padding;
  const Span<const int64_t> output_shape = attrs.output_shape;
  if (!output_padding.empty() && output_padding.size() != static_cast<size_t>(g.n)) {
    return ctx.error(Error::InvalidProgram, "'output_padding' has %zu entries, expected %d",
                     output_padding.size(), g.n);
  }
  if (!output_shape.empty() && output_shape.size() != static_cast<size_t>(g.n)) {
    return ctx.error(Error::InvalidProgram, "'output_shape' has %zu entries, expected %d",
                     output_shape.size(), g.n);
  }
  for (int i = 0; i < g.n; ++i) {
    const int s = g.slot(i);
    const int64_t op = output_padding.empty() ? 0 : output_padding[i];
    if (op < 0 || op >= kMaxAttrValue) {
      return ctx.error(Error::InvalidProgram, "'output_padding'[%d] is %lld, expected >= 0", i,
                       static_cast<long long>(op));
    }
    Checked c;
    // Full (unpadded) output: stride * (in - 1) + output_padding + extent.
    const int64_t full = c.add(c.add(c.mul(g.stride[s], c.sub(g.in[s], 1)), op),
                               c.add(c.mul(g.kernel[s] - 1, g.dilation[s]), 1));
    if (!c.ok()) return ctx.error(Error::InvalidProgram, "spatial dim %d: size overflow", i);
    if (!output_shape.empty()) {
      // ONNX: pads follow from the requested output shape (begin gets the smaller half).
      const int64_t total = full - output_shape[i];
      if (output_shape[i] < 1 || total < 0) {
        return ctx.error(Error::InvalidProgram, "'output_shape'[%d] is %lld, must be in [1, %lld]",
                         i, static_cast<long long>(output_shape[i]), static_cast<long long>(full));
      }
      g.pad_begin[s] = total - total / 2;
      g.pad_end[s] = total / 2;
    }
    g.out[s] = full - g.pad_begin[s] - g.pad_end[s];
    if (g.out[s] < 1) {
      return ctx.error(Error::InvalidProgram, "spatial dim %d: pads leave an output size of %lld",
                       i, static_cast<long long>(g.out[s]));
    }
  }
  TESSERA_ASSIGN_OR_RETURN(ConvTransposeState * s,
                           make_conv_state<ConvTransposeState>(ctx, g, group, out_channels));
  const int64_t rows_total = s->mg * s->kvol;
  s->tile_cols = min64(max64(s->in_vol, 1), 512);
  s->tile_rows = min64(max64(rows_total, 1), max64(kColTileFloats / s->tile_cols, 4));
  if (s->in_vol > 0 && rows_total > 0) {
    TESSERA_ASSIGN_OR_RETURN(s->scratch,
                             ctx.make_scratch(static_cast<size_t>(s->tile_rows * s->tile_cols)));
  }
  return PreparedKernel{run_conv_transpose, s};
}

}  // namespace tessera::portable
