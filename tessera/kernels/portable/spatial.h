// Spatial attributes shared by Conv, ConvTranspose, MaxPool and AveragePool. Internal.
//
// Kernels treat 1-D and 2-D ops as 3-D with leading size-1 dims: index 0 is depth, 1 height,
// 2 width, and an op with `n` spatial dims uses the last `n` entries.
#pragma once

#include <cstdint>

#include "tessera/kernels/portable/op_context.h"

namespace tessera::portable {

inline constexpr int kMaxSpatial = 3;

struct SpatialAttrs {
  int n = 0;                         // spatial dims of the op (1..3)
  int64_t in[kMaxSpatial] = {1, 1, 1};
  int64_t out[kMaxSpatial] = {1, 1, 1};
  int64_t kernel[kMaxSpatial] = {1, 1, 1};
  int64_t stride[kMaxSpatial] = {1, 1, 1};
  int64_t dilation[kMaxSpatial] = {1, 1, 1};
  int64_t pad_begin[kMaxSpatial] = {0, 0, 0};
  int64_t pad_end[kMaxSpatial] = {0, 0, 0};

  /// The 3-D slot of spatial dim i of the op.
  int slot(int i) const { return kMaxSpatial - n + i; }
  /// Dilated kernel extent in slot s.
  int64_t extent(int s) const { return (kernel[s] - 1) * dilation[s] + 1; }
};

/// Reads `strides`, `dilations` (when `allow_dilations`), `pads` and `auto_pad` (only NOTSET or
/// VALID) for `attrs->n` spatial dims, and checks `kernel_shape` against attrs->kernel when
/// present. Kernel sizes and `in` must already be set. Values must be in range (strides and
/// dilations >= 1, pads >= 0, all below kMaxAttrValue): InvalidProgram otherwise.
Status read_spatial_attrs(const OpContext& ctx, const ir::WindowAttrs& window, SpatialAttrs* attrs);

/// For positions t in [0, run): t is valid when 0 <= base + t * stride < size (stride > 0).
/// Returns the valid range [*lo, *hi), empty when none is.
inline void valid_range(int64_t base, int64_t stride, int64_t size, int64_t run, int64_t* lo,
                        int64_t* hi) {
  // ceil(-base / stride) for base < 0; floor((size - 1 - base) / stride) + 1 for base < size.
  int64_t l = base >= 0 ? 0 : (-base + stride - 1) / stride;
  int64_t h = base > size - 1 ? 0 : (size - 1 - base) / stride + 1;
  l = l < run ? l : run;
  h = h < run ? h : run;
  *lo = l;
  *hi = h > l ? h : l;
}

/// Output size of a sliding window: floor (or ceil) of (in + pads - extent) / stride + 1, with
/// the ONNX rule that the last window must start inside the input or its begin padding.
/// InvalidProgram when the window is larger than the padded input.
Status window_output_sizes(const OpContext& ctx, bool ceil_mode, SpatialAttrs* attrs);

}  // namespace tessera::portable
