// Softmax (opset 13: one axis), LayerNormalization, BatchNormalization (inference). Float32.
#include <cmath>

#include "tessera/kernels/portable/loops.h"
#include "tessera/kernels/portable/ops.h"
#include "tessera/kernels/portable/row_ops.h"

namespace tessera::portable {
namespace {

// outer x axis x inner view of a tensor around `axis` (inner = everything after it).
void split_at(const Tensor* t, int axis, int64_t* outer, int64_t* n, int64_t* inner) {
  *outer = 1;
  *inner = 1;
  for (int d = 0; d < axis; ++d) *outer *= t->size(d);
  *n = t->size(axis);
  for (int d = axis + 1; d < t->dim(); ++d) *inner *= t->size(d);
}

// ---- Softmax -----------------------------------------------------------------------------------

struct SoftmaxState {
  int64_t outer, n, inner;
  float* scratch;  // 2 * inner floats when inner > 1: running max and 1 / sum per column
};

void softmax_row(const float* x, float* y, int64_t n) {
  const float m = row_max(x, n);
  for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i] - m);
  const float inv = 1.0f / row_sum(y, n);
  for (int64_t i = 0; i < n; ++i) y[i] *= inv;
}

Status run_softmax(const void* state, Span<const Tensor* const> in, Span<Tensor* const> out) {
  const auto& s = *static_cast<const SoftmaxState*>(state);
  const float* x = in[0]->data_as<const float>();
  float* y = out[0]->data_as<float>();
  const int64_t block = s.n * s.inner;
  for (int64_t o = 0; o < s.outer; ++o, x += block, y += block) {
    if (s.inner == 1) {
      softmax_row(x, y, s.n);
      continue;
    }
    // Axis not innermost: work on whole rows of `inner` columns at a time (vectorisable).
    float* mx = s.scratch;
    float* sum = s.scratch + s.inner;
    for (int64_t j = 0; j < s.inner; ++j) {
      mx[j] = -INFINITY;
      sum[j] = 0.0f;
    }
    for (int64_t a = 0; a < s.n; ++a) {
      const float* xr = x + a * s.inner;
      for (int64_t j = 0; j < s.inner; ++j) {
        mx[j] = (xr[j] > mx[j] || xr[j] != xr[j]) ? xr[j] : mx[j];
      }
    }
    for (int64_t a = 0; a < s.n; ++a) {
      const float* xr = x + a * s.inner;
      float* yr = y + a * s.inner;
      for (int64_t j = 0; j < s.inner; ++j) {
        yr[j] = std::exp(xr[j] - mx[j]);
        sum[j] += yr[j];
      }
    }
    for (int64_t j = 0; j < s.inner; ++j) sum[j] = 1.0f / sum[j];
    for (int64_t a = 0; a < s.n; ++a) {
      float* yr = y + a * s.inner;
      for (int64_t j = 0; j < s.inner; ++j) yr[j] *= sum[j];
    }
  }
  return Status::ok();
}

}  // namespace

Result<PreparedKernel> prepare_softmax(OpContext& ctx) {
  TESSERA_RETURN_IF_ERROR(ctx.expect_inputs(1, 1));
  TESSERA_RETURN_IF_ERROR(ctx.expect_outputs(1, 1));
  TESSERA_RETURN_IF_ERROR(ctx.expect_input_dtype(0, {ScalarType::Float32}));
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_dtype(0, ScalarType::Float32));
  const Tensor* x = ctx.input(0);
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_shape(0, x->sizes()));
  TESSERA_ASSIGN_OR_RETURN(const ir::SoftmaxAttrs attrs, ctx.read_attrs<ir::SoftmaxAttrs>());
  if (x->dim() == 0) return ctx.error(Error::InvalidProgram, "input must have rank >= 1");
  TESSERA_ASSIGN_OR_RETURN(int axis, ctx.normalize_axis(attrs.axis, x->dim(), "axis"));
  TESSERA_ASSIGN_OR_RETURN(SoftmaxState * s, ctx.make_state<SoftmaxState>());
  split_at(x, axis, &s->outer, &s->n, &s->inner);
  if (s->inner > 1 && s->n > 0) {
    TESSERA_ASSIGN_OR_RETURN(s->scratch, ctx.make_scratch(static_cast<size_t>(2 * s->inner)));
  }
  if (s->n == 0 || s->inner == 0) s->outer = 0;
  return PreparedKernel{run_softmax, s};
}

// ---- LayerNormalization ------------------------------------------------------------------------

namespace {

struct LayerNormState {
  int64_t outer, n;
  float epsilon;
  const int64_t* scale_index;  // per normalized element; nullptr when Scale has all n elements
  const int64_t* bias_index;
  bool has_bias, has_mean, has_inv_std;
};

Status run_layer_norm(const void* state, Span<const Tensor* const> in, Span<Tensor* const> out) {
  const auto& s = *static_cast<const LayerNormState*>(state);
  const float* x = in[0]->data_as<const float>();
  const float* scale = in[1]->data_as<const float>();
  const float* bias = s.has_bias ? in[2]->data_as<const float>() : nullptr;
  float* y = out[0]->data_as<float>();
  float* mean_out = s.has_mean ? out[1]->data_as<float>() : nullptr;
  float* inv_out = s.has_inv_std ? out[2]->data_as<float>() : nullptr;
  const int64_t n = s.n;
  for (int64_t o = 0; o < s.outer; ++o, x += n, y += n) {
    const float mean = row_sum(x, n) / static_cast<float>(n);
    const float var = row_sq_dev(x, n, mean) / static_cast<float>(n);
    const float inv = 1.0f / std::sqrt(var + s.epsilon);
    if (mean_out) mean_out[o] = mean;
    if (inv_out) inv_out[o] = inv;
    if (s.scale_index == nullptr && s.bias_index == nullptr) {
      if (bias != nullptr) {
        for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * inv * scale[i] + bias[i];
      } else {
        for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * inv * scale[i];
      }
    } else {
      for (int64_t i = 0; i < n; ++i) {
        const float g = scale[s.scale_index ? s.scale_index[i] : i];
        const float b = bias ? bias[s.bias_index ? s.bias_index[i] : i] : 0.0f;
        y[i] = (x[i] - mean) * inv * g + b;
      }
    }
  }
  return Status::ok();
}

// Builds the element index of a parameter broadcast over the normalized shape, or nullptr when
// it already has that shape. Errors when it is not unidirectionally broadcastable.
Result<const int64_t*> param_index(OpContext& ctx, size_t input, const Shape& norm) {
  const Tensor* p = ctx.input(input);
  Shape out;
  bool ok = broadcast_shapes(norm.span(), p->sizes(), &out) && out.rank == norm.rank;
  for (int d = 0; ok && d < norm.rank; ++d) ok = out.d[d] == norm.d[d];
  if (!ok) {
    char a[96], b[96];
    format_sizes(p->sizes(), a, sizeof a);
    format_sizes(norm.span(), b, sizeof b);
    return ctx.error(Error::ShapeMismatch, "input %zu shape %s does not broadcast to %s", input,
                     a, b);
  }
  if (p->numel() == norm.numel()) return static_cast<const int64_t*>(nullptr);
  int64_t strides[kMaxDims];
  broadcast_strides(p->sizes(), norm, strides);
  const int64_t n = norm.numel();
  TESSERA_ASSIGN_OR_RETURN(int64_t * index, ctx.make_array<int64_t>(static_cast<size_t>(n)));
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, off = 0;
    for (int d = norm.rank - 1; d >= 0; --d) {
      off += (rem % norm.d[d]) * strides[d];
      rem /= norm.d[d];
    }
    index[i] = off;
  }
  return static_cast<const int64_t*>(index);
}

}  // namespace

Result<PreparedKernel> prepare_layer_norm(OpContext& ctx) {
  TESSERA_RETURN_IF_ERROR(ctx.expect_inputs(2, 3));
  TESSERA_RETURN_IF_ERROR(ctx.expect_outputs(1, 3));
  const bool has_bias = ctx.input(2) != nullptr;
  for (size_t i = 0; i < 3; ++i) {
    if (ctx.input(i)) TESSERA_RETURN_IF_ERROR(ctx.expect_input_dtype(i, {ScalarType::Float32}));
  }
  const Tensor* x = ctx.input(0);
  const int rank = x->dim();
  if (rank == 0) return ctx.error(Error::InvalidProgram, "input must have rank >= 1");
  TESSERA_ASSIGN_OR_RETURN(const ir::LayerNormalizationAttrs attrs,
                           ctx.read_attrs<ir::LayerNormalizationAttrs>());
  TESSERA_ASSIGN_OR_RETURN(int axis, ctx.normalize_axis(attrs.axis, rank, "axis"));
  const float epsilon = attrs.epsilon;
  if (!(epsilon >= 0.0f) || std::isinf(epsilon)) {
    return ctx.error(Error::InvalidProgram, "epsilon %g must be finite and >= 0",
                     static_cast<double>(epsilon));
  }
  Shape norm;
  for (int d = axis; d < rank; ++d) norm.push(x->size(d));
  TESSERA_ASSIGN_OR_RETURN(const int64_t* scale_index, param_index(ctx, 1, norm));
  const int64_t* bias_index = nullptr;
  if (has_bias) {
    TESSERA_ASSIGN_OR_RETURN(bias_index, param_index(ctx, 2, norm));
  }
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_dtype(0, ScalarType::Float32));
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_shape(0, x->sizes()));
  Shape stat;  // Mean and InvStdDev: X's shape with the normalized dims set to 1
  for (int d = 0; d < rank; ++d) stat.push(d < axis ? x->size(d) : 1);
  for (size_t i = 1; i < ctx.num_outputs(); ++i) {
    TESSERA_RETURN_IF_ERROR(ctx.expect_output_dtype(i, ScalarType::Float32));
    TESSERA_RETURN_IF_ERROR(ctx.expect_output_shape(i, stat.span()));
  }
  TESSERA_ASSIGN_OR_RETURN(LayerNormState * s, ctx.make_state<LayerNormState>());
  s->n = norm.numel();
  s->outer = 1;
  for (int d = 0; d < axis; ++d) s->outer *= x->size(d);
  s->epsilon = epsilon;
  s->scale_index = scale_index;
  s->bias_index = bias_index;
  s->has_bias = has_bias;
  s->has_mean = ctx.num_outputs() > 1;
  s->has_inv_std = ctx.num_outputs() > 2;
  return PreparedKernel{run_layer_norm, s};
}

// ---- BatchNormalization ------------------------------------------------------------------------

namespace {

struct BatchNormState {
  int64_t batch, channels, spatial;
  float epsilon;
  bool clamp;
  float lo, hi;
};

Status run_batch_norm(const void* state, Span<const Tensor* const> in, Span<Tensor* const> out) {
  const auto& s = *static_cast<const BatchNormState*>(state);
  const float* x = in[0]->data_as<const float>();
  const float* scale = in[1]->data_as<const float>();
  const float* bias = in[2]->data_as<const float>();
  const float* mean = in[3]->data_as<const float>();
  const float* var = in[4]->data_as<const float>();
  float* y = out[0]->data_as<float>();
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t c = 0; c < s.channels; ++c, x += s.spatial, y += s.spatial) {
      const float a = scale[c] / std::sqrt(var[c] + s.epsilon);
      const float m = mean[c], bc = bias[c];
      if (s.clamp) {
        for (int64_t i = 0; i < s.spatial; ++i) {
          const float v = (x[i] - m) * a + bc;
          y[i] = v < s.lo ? s.lo : (v > s.hi ? s.hi : v);
        }
      } else {
        for (int64_t i = 0; i < s.spatial; ++i) y[i] = (x[i] - m) * a + bc;
      }
    }
  }
  return Status::ok();
}

}  // namespace

Result<PreparedKernel> prepare_batch_norm(OpContext& ctx) {
  TESSERA_RETURN_IF_ERROR(ctx.expect_inputs(5, 5));
  TESSERA_RETURN_IF_ERROR(ctx.expect_outputs(1, 1));
  TESSERA_ASSIGN_OR_RETURN(const ir::BatchNormalizationAttrs attrs,
                           ctx.read_attrs<ir::BatchNormalizationAttrs>());
  const int64_t training = attrs.training_mode;
  if (training != 0) {
    return ctx.error(Error::NotSupported, "training_mode=%lld is not supported (inference only)",
                     static_cast<long long>(training));
  }
  for (size_t i = 0; i < 5; ++i) {
    TESSERA_RETURN_IF_ERROR(ctx.expect_input_dtype(i, {ScalarType::Float32}));
  }
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_dtype(0, ScalarType::Float32));
  const Tensor* x = ctx.input(0);
  if (x->dim() < 2) {
    return ctx.error(Error::InvalidProgram, "X must have rank >= 2 (N, C, ...), got rank %d",
                     x->dim());
  }
  const int64_t channels = x->size(1);
  static const char* const kNames[] = {"X", "scale", "B", "input_mean", "input_var"};
  for (size_t i = 1; i < 5; ++i) {
    const Tensor* p = ctx.input(i);
    if (p->dim() != 1 || p->size(0) != channels) {
      char a[96];
      format_sizes(p->sizes(), a, sizeof a);
      return ctx.error(Error::ShapeMismatch, "%s has shape %s, expected [%lld]", kNames[i], a,
                       static_cast<long long>(channels));
    }
  }
  const float epsilon = attrs.epsilon;
  if (!(epsilon >= 0.0f) || std::isinf(epsilon)) {
    return ctx.error(Error::InvalidProgram, "epsilon %g must be finite and >= 0",
                     static_cast<double>(epsilon));
  }
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_shape(0, x->sizes()));
  TESSERA_ASSIGN_OR_RETURN(BatchNormState * s, ctx.make_state<BatchNormState>());
  s->batch = x->size(0);
  s->channels = channels;
  s->spatial = 1;
  for (int d = 2; d < x->dim(); ++d) s->spatial *= x->size(d);
  s->epsilon = epsilon;
  s->clamp = ctx.activation().enabled;
  s->lo = ctx.activation().min;
  s->hi = ctx.activation().max;
  ctx.mark_activation_fused();
  return PreparedKernel{run_batch_norm, s};
}

}  // namespace tessera::portable
