#include "tessera/kernels/portable/spatial.h"

namespace tessera::portable {

static Status read_list(const OpContext& ctx, Span<const int64_t> v, const char* name, size_t count,
                        int64_t lo, int64_t fallback, int64_t* out) {
  if (v.empty()) {
    for (size_t i = 0; i < count; ++i) out[i] = fallback;
    return Status::ok();
  }
  if (v.size() != count) {
    return ctx.error(Error::InvalidProgram, "'%s' has %zu entries, expected %zu", name, v.size(),
                     count);
  }
  for (size_t i = 0; i < count; ++i) {
    if (v[i] < lo || v[i] >= kMaxAttrValue) {
      return ctx.error(Error::InvalidProgram, "'%s'[%zu] is %lld, expected >= %lld", name, i,
                       static_cast<long long>(v[i]), static_cast<long long>(lo));
    }
    out[i] = v[i];
  }
  return Status::ok();
}

Status read_spatial_attrs(const OpContext& ctx, const ir::WindowAttrs& w, SpatialAttrs* a) {
  const int n = a->n;
  const std::string_view auto_pad = w.auto_pad;
  const bool valid = auto_pad == "VALID";
  if (auto_pad != "NOTSET" && !valid) {
    return ctx.error(Error::NotSupported,
                     "auto_pad '%.*s' is not supported: the compiler emits explicit pads",
                     static_cast<int>(auto_pad.size()), auto_pad.data());
  }
  int64_t v[2 * kMaxSpatial];
  const Span<const int64_t> ks = w.kernel_shape;
  if (!ks.empty()) {
    if (ks.size() != static_cast<size_t>(n)) {
      return ctx.error(Error::InvalidProgram, "'kernel_shape' has %zu entries, expected %d",
                       ks.size(), n);
    }
    for (int i = 0; i < n; ++i) {
      if (ks[i] != a->kernel[a->slot(i)]) {
        return ctx.error(Error::InvalidProgram,
                         "'kernel_shape'[%d] is %lld but the weights have %lld", i,
                         static_cast<long long>(ks[i]),
                         static_cast<long long>(a->kernel[a->slot(i)]));
      }
    }
  }
  TESSERA_RETURN_IF_ERROR(read_list(ctx, w.strides, "strides", n, 1, 1, v));
  for (int i = 0; i < n; ++i) a->stride[a->slot(i)] = v[i];
  TESSERA_RETURN_IF_ERROR(read_list(ctx, w.dilations, "dilations", n, 1, 1, v));
  for (int i = 0; i < n; ++i) a->dilation[a->slot(i)] = v[i];
  TESSERA_RETURN_IF_ERROR(read_list(ctx, w.pads, "pads", 2 * n, 0, 0, v));
  if (valid && !w.pads.empty()) {
    return ctx.error(Error::InvalidProgram, "auto_pad VALID and explicit 'pads' both given");
  }
  for (int i = 0; i < n; ++i) {
    a->pad_begin[a->slot(i)] = v[i];
    a->pad_end[a->slot(i)] = v[n + i];
  }
  return Status::ok();
}

Status window_output_sizes(const OpContext& ctx, bool ceil_mode, SpatialAttrs* a) {
  for (int i = 0; i < a->n; ++i) {
    const int s = a->slot(i);
    Checked c;
    const int64_t extent = c.add(c.mul(c.sub(a->kernel[s], 1), a->dilation[s]), 1);
    const int64_t padded = c.add(c.add(a->in[s], a->pad_begin[s]), a->pad_end[s]);
    if (!c.ok()) return ctx.error(Error::InvalidProgram, "spatial dim %d: size overflow", i);
    if (extent > padded) {
      return ctx.error(Error::InvalidProgram,
                       "spatial dim %d: kernel extent %lld is larger than the padded input %lld",
                       i, static_cast<long long>(extent), static_cast<long long>(padded));
    }
    const int64_t span = padded - extent;
    int64_t out = (ceil_mode ? (span + a->stride[s] - 1) / a->stride[s] : span / a->stride[s]) + 1;
    if (ceil_mode && (out - 1) * a->stride[s] >= a->in[s] + a->pad_begin[s]) --out;
    a->out[s] = out;
  }
  return Status::ok();
}

}  // namespace tessera::portable
