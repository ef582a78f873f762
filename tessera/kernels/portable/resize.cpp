// Resize: nearest (any dtype) and linear (float32, any rank: bilinear for NCHW, N-linear in
// general) with ONNX's coordinate transformation and nearest rounding modes. Output sizes come
// from the output tensor; `scales`, when given, is the scale used in the coordinate transform.
// Coordinates are computed in float, as ONNX Runtime does, once at prepare.
#include <cmath>
#include <cstring>

#include "tessera/kernels/portable/ops.h"

namespace tessera::portable {
namespace {

enum class Transform { HalfPixel, PytorchHalfPixel, AlignCorners, Asymmetric, TfHalfPixelForNearest };
enum class Rounding { RoundPreferFloor, RoundPreferCeil, Floor, Ceil };

struct Lerp {
  int64_t i0, i1;
  float w;  // weight of i1
};

struct ResizeState {
  int rank;
  bool linear;
  int64_t esize;
  int64_t out_sizes[kMaxDims];
  int64_t in_strides[kMaxDims];
  const int64_t* nearest[kMaxDims];  // nearest: source index per output index
  const Lerp* lerp[kMaxDims];        // linear: neighbours and weight per output index
  bool active[kMaxDims];             // linear: the dim has a non-zero weight somewhere
};

float source_coordinate(Transform t, int64_t o, float scale, int64_t in, int64_t out) {
  const float x = static_cast<float>(o);
  switch (t) {
    case Transform::HalfPixel: return (x + 0.5f) / scale - 0.5f;
    case Transform::PytorchHalfPixel: return out > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
    case Transform::AlignCorners:
      return out == 1 ? 0.0f : x * static_cast<float>(in - 1) / static_cast<float>(out - 1);
    case Transform::Asymmetric: return x / scale;
    case Transform::TfHalfPixelForNearest: return (x + 0.5f) / scale;
  }
  return 0.0f;
}

int64_t round_coordinate(Rounding r, float x) {
  switch (r) {
    case Rounding::RoundPreferFloor:
      return static_cast<int64_t>(x == std::floor(x) + 0.5f ? std::floor(x) : std::round(x));
    case Rounding::RoundPreferCeil:
      return static_cast<int64_t>(x == std::floor(x) + 0.5f ? std::ceil(x) : std::round(x));
    case Rounding::Floor: return static_cast<int64_t>(std::floor(x));
    case Rounding::Ceil: return static_cast<int64_t>(std::ceil(x));
  }
  return 0;
}

template <typename T>
void gather_row(T* dst, const T* src, const int64_t* map, int64_t n) {
  for (int64_t j = 0; j < n; ++j) dst[j] = src[map[j]];
}

void nearest_row(uint8_t* dst, const uint8_t* src, const int64_t* map, int64_t n, int64_t esize) {
  switch (esize) {
    case 1: gather_row(dst, src, map, n); break;
    case 2: gather_row(reinterpret_cast<uint16_t*>(dst), reinterpret_cast<const uint16_t*>(src), map, n); break;
    case 4: gather_row(reinterpret_cast<uint32_t*>(dst), reinterpret_cast<const uint32_t*>(src), map, n); break;
    default: gather_row(reinterpret_cast<uint64_t*>(dst), reinterpret_cast<const uint64_t*>(src), map, n); break;
  }
}

Status run_resize(const void* state, Span<const Tensor* const> in, Span<Tensor* const> out) {
  const auto& s = *static_cast<const ResizeState*>(state);
  const int r = s.rank;
  int64_t rows = 1;
  for (int d = 0; d < r; ++d) {
    if (s.out_sizes[d] == 0) return Status::ok();
    if (d < r - 1) rows *= s.out_sizes[d];
  }
  const int64_t n = s.out_sizes[r - 1];
  const int64_t last_stride = s.in_strides[r - 1];
  int64_t idx[kMaxDims] = {};
  if (!s.linear) {
    const auto* x = static_cast<const uint8_t*>(in[0]->data());
    auto* y = static_cast<uint8_t*>(out[0]->data());
    for (int64_t row = 0; row < rows; ++row, y += n * s.esize) {
      int64_t off = 0;
      for (int d = 0; d < r - 1; ++d) off += s.nearest[d][idx[d]] * s.in_strides[d];
      nearest_row(y, x + off * s.esize, s.nearest[r - 1], n, s.esize);
      for (int d = r - 2; d >= 0; --d) {
        if (++idx[d] < s.out_sizes[d]) break;
        idx[d] = 0;
      }
    }
    return Status::ok();
  }
  const float* x = in[0]->data_as<const float>();
  float* y = out[0]->data_as<float>();
  // Corners of the outer (all but last) interpolated dims for the current row.
  constexpr int kMaxCorners = 1 << (kMaxDims - 1);
  int64_t corner_off[kMaxCorners];
  float corner_w[kMaxCorners];
  const Lerp* last = s.lerp[r - 1];
  for (int64_t row = 0; row < rows; ++row, y += n) {
    int corners = 1;
    corner_off[0] = 0;
    corner_w[0] = 1.0f;
    for (int d = 0; d < r - 1; ++d) {
      const Lerp& l = s.lerp[d][idx[d]];
      if (!s.active[d]) {
        for (int c = 0; c < corners; ++c) corner_off[c] += l.i0 * s.in_strides[d];
        continue;
      }
      for (int c = 0; c < corners; ++c) {
        corner_off[corners + c] = corner_off[c] + l.i1 * s.in_strides[d];
        corner_w[corners + c] = corner_w[c] * l.w;
        corner_off[c] += l.i0 * s.in_strides[d];
        corner_w[c] *= 1.0f - l.w;
      }
      corners *= 2;
    }
    if (s.active[r - 1]) {
      for (int64_t j = 0; j < n; ++j) {
        const Lerp& l = last[j];
        float v = 0.0f;
        for (int c = 0; c < corners; ++c) {
          const float* xr = x + corner_off[c];
          v += corner_w[c] * ((1.0f - l.w) * xr[l.i0 * last_stride] + l.w * xr[l.i1 * last_stride]);
        }
        y[j] = v;
      }
    } else {
      for (int64_t j = 0; j < n; ++j) {
        float v = 0.0f;
        for (int c = 0; c < corners; ++c) v += corner_w[c] * x[corner_off[c] + last[j].i0 * last_stride];
        y[j] = v;
      }
    }
    for (int d = r - 2; d >= 0; --d) {
      if (++idx[d] < s.out_sizes[d]) break;
      idx[d] = 0;
    }
  }
  return Status::ok();
}

}  // namespace

Result<PreparedKernel> prepare_resize(OpContext& ctx) {
  TESSERA_RETURN_IF_ERROR(ctx.expect_inputs(1, 1));
  TESSERA_RETURN_IF_ERROR(ctx.expect_outputs(1, 1));
  const Tensor* x = ctx.input(0);
  const Tensor* y = ctx.output(0);
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_dtype(0, x->dtype()));
  TESSERA_ASSIGN_OR_RETURN(const ir::ResizeAttrs attrs, ctx.read_attrs<ir::ResizeAttrs>());
  const std::string_view mode = attrs.mode;
  const std::string_view ctm = attrs.coordinate_transformation_mode;
  const std::string_view nearest_mode = attrs.nearest_mode;
  const Span<const float> scales = attrs.scales;
  const int64_t antialias = attrs.antialias;
  bool linear;
  if (mode == "nearest") {
    linear = false;
  } else if (mode == "linear") {
    linear = true;
  } else {
    return ctx.error(mode == "cubic" ? Error::NotSupported : Error::InvalidProgram,
                     "mode '%.*s' is not supported (nearest, linear)",
                     static_cast<int>(mode.size()), mode.data());
  }
  if (antialias != 0) return ctx.error(Error::NotSupported, "antialias is not supported");
  if (!attrs.axes.empty()) return ctx.error(Error::NotSupported, "'axes' is not supported");
  Transform transform;
  if (ctm == "half_pixel") {
    transform = Transform::HalfPixel;
  } else if (ctm == "pytorch_half_pixel") {
    transform = Transform::PytorchHalfPixel;
  } else if (ctm == "align_corners") {
    transform = Transform::AlignCorners;
  } else if (ctm == "asymmetric") {
    transform = Transform::Asymmetric;
  } else if (ctm == "tf_half_pixel_for_nearest") {
    transform = Transform::TfHalfPixelForNearest;
  } else {
    const bool known = ctm == "tf_crop_and_resize" || ctm == "half_pixel_symmetric";
    return ctx.error(known ? Error::NotSupported : Error::InvalidProgram,
                     "coordinate_transformation_mode '%.*s' is not supported",
                     static_cast<int>(ctm.size()), ctm.data());
  }
  Rounding rounding;
  if (nearest_mode == "round_prefer_floor") {
    rounding = Rounding::RoundPreferFloor;
  } else if (nearest_mode == "round_prefer_ceil") {
    rounding = Rounding::RoundPreferCeil;
  } else if (nearest_mode == "floor") {
    rounding = Rounding::Floor;
  } else if (nearest_mode == "ceil") {
    rounding = Rounding::Ceil;
  } else {
    return ctx.error(Error::InvalidProgram, "nearest_mode '%.*s' is not one of round_prefer_floor, "
                     "round_prefer_ceil, floor, ceil",
                     static_cast<int>(nearest_mode.size()), nearest_mode.data());
  }
  if (linear) TESSERA_RETURN_IF_ERROR(ctx.expect_input_dtype(0, {ScalarType::Float32}));
  const int rank = x->dim();
  if (rank == 0) return ctx.error(Error::InvalidProgram, "input must have rank >= 1");
  if (y->dim() != rank) {
    return ctx.error(Error::ShapeMismatch, "output rank %d does not match input rank %d",
                     y->dim(), rank);
  }
  if (!scales.empty() && scales.size() != static_cast<size_t>(rank)) {
    return ctx.error(Error::InvalidProgram, "'scales' has %zu entries for a rank-%d input",
                     scales.size(), rank);
  }
  for (size_t i = 0; i < scales.size(); ++i) {
    if (!(scales[i] > 0.0f) || std::isinf(scales[i])) {
      return ctx.error(Error::InvalidProgram, "scale %g of dim %zu must be positive and finite",
                       static_cast<double>(scales[i]), i);
    }
  }
  for (int d = 0; d < rank; ++d) {
    if (x->size(d) == 0 && y->size(d) != 0) {
      return ctx.error(Error::ShapeMismatch, "cannot resize the empty dim %d to %lld", d,
                       static_cast<long long>(y->size(d)));
    }
  }

  TESSERA_ASSIGN_OR_RETURN(ResizeState * s, ctx.make_state<ResizeState>());
  s->rank = rank;
  s->linear = linear;
  s->esize = static_cast<int64_t>(element_size(x->dtype()));
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    s->in_strides[d] = stride;
    stride *= x->size(d);
  }
  for (int d = 0; d < rank; ++d) {
    const int64_t in = x->size(d), outn = y->size(d);
    s->out_sizes[d] = outn;
    if (outn == 0) continue;
    const float scale = scales.empty() ? static_cast<float>(outn) / static_cast<float>(in)
                                       : scales[d];
    if (!linear) {
      TESSERA_ASSIGN_OR_RETURN(int64_t * map, ctx.make_array<int64_t>(static_cast<size_t>(outn)));
      for (int64_t o = 0; o < outn; ++o) {
        const float c = source_coordinate(transform, o, scale, in, outn);
        // Clamp in float first so the conversion to int64 is always defined.
        float cc = c < -1.0f || c != c ? -1.0f : c;
        cc = cc > static_cast<float>(in) ? static_cast<float>(in) : cc;
        int64_t i = round_coordinate(rounding, cc);
        map[o] = i < 0 ? 0 : (i > in - 1 ? in - 1 : i);
      }
      s->nearest[d] = map;
    } else {
      TESSERA_ASSIGN_OR_RETURN(Lerp * lerp, ctx.make_array<Lerp>(static_cast<size_t>(outn)));
      bool active = false;
      for (int64_t o = 0; o < outn; ++o) {
        float c = source_coordinate(transform, o, scale, in, outn);
        const float hi = static_cast<float>(in - 1);
        c = c < 0.0f || c != c ? 0.0f : (c > hi ? hi : c);
        const int64_t i0 = static_cast<int64_t>(c);
        const int64_t i1 = i0 + 1 < in ? i0 + 1 : in - 1;
        const float w = c - static_cast<float>(i0);
        lerp[o] = Lerp{i0, i1, w};
        active = active || w != 0.0f;
      }
      s->lerp[d] = lerp;
      s->active[d] = active;
    }
  }
  return PreparedKernel{run_resize, s};
}

}  // namespace tessera::portable
