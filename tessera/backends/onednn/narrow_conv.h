// 1x1 convolutions with 24 or 40 output channels, computed by Tessera on channels-last float32
// tensors, for the oneDNN backend.
//
// oneDNN 2.6 computes output channels in blocks of 16, so a 1x1 convolution writing 24 channels
// (MobileNetV2's, EfficientNet-B0's and MobileNetV3-Small's projections to 24 channels) does
// the work of 32, and one writing 40 the work of 48: MobileNetV2's 56x56 projection from 144 to
// 24 channels with its residual sum ran at 124 GFLOP/s (0.175 ms) where its 1x1 convolutions to
// 96 channels ran at 190-200. The kernel here keeps the first 16 (or 32) channels of a pixel in
// one (two) vectors and the last 8 in half of another, the other half taking the next input
// channel: the input channels are taken in pairs, each pair broadcast as one 64-bit value into
// that vector, and the two halves summed at the end. No lane computes a padding channel
// (docs/performance.md, thirty-seventh session).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tessera/backends/onednn/aligned_floats.h"

namespace tessera::onednn {

/// One 1x1 convolution, stride 1, no padding: channels-last input [pixels, in_channels] (all
/// images' pixels one after the other), output [pixels, out_channels].
struct NarrowConvShape {
  int64_t pixels = 0;
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  /// Set: the input is channel-blocked instead (oneDNN's aBcd16b: per image, [in_channels / 16]
  /// [image_pixels][16]; in_channels a multiple of 16), as oneDNN's fused 1x1 + depthwise kernel
  /// writes it. The output stays channels-last.
  bool blocked_input = false;
  int64_t image_pixels = 0;  // with blocked_input: pixels per image (pixels a multiple of it)
};

/// Whether Tessera's kernel takes `s`: out_channels 24 or 40, in_channels even (a multiple of 16
/// with blocked_input, whose image_pixels must divide pixels). The caller also
/// makes sure the CPU has AVX-512 (SiluIsa::Avx512, which honours max_cpu_isa).
bool narrow_conv_applies(const NarrowConvShape& s);

/// The convolution's constants in the kernel's order, and what follows it.
struct NarrowConv {
  NarrowConvShape shape;
  bool sum = false;   // dst = conv(src) + residual (the residual may be dst itself)
  bool relu = false;  // max(0, .) last
  /// The first out_channels & ~15 channels: [in_channels][out_channels & ~15]; then the last
  /// 8, input channels paired: [in_channels / 2][8][2]. 64-byte aligned from weights().
  AlignedFloats storage;
  std::vector<float> bias;     // [out_channels]; zeros when the node has none
  const float* weights() const { return storage.data(); }
};

/// Packs PyTorch-ordered weights [out_channels][in_channels] (the 1x1 kernel's) and `bias`
/// (null: none).
NarrowConv pack_narrow_conv(const NarrowConvShape& s, const float* weights, const float* bias,
                            bool sum, bool relu);

/// dst = conv(src) (+ residual when c.sum; `residual` may be `dst`), for `c`
/// (narrow_conv_applies, AVX-512 present), its pixels split over `threads` OpenMP threads.
void run_narrow_conv(const NarrowConv& c, const float* src, const float* residual, float* dst,
                     int threads);

}  // namespace tessera::onednn
