// A 3x3 depthwise convolution and the 1x1 convolution that reads it, computed by Tessera as one
// step on channels-last float32 tensors, for the oneDNN backend.
//
// MobileNetV2's first block runs a 3x3 depthwise convolution over 112x112 pixels of 32 channels
// and projects the result to 16 channels with a 1x1 convolution. oneDNN 2.6 runs them as two
// primitives, the first writing 1.6 MB that the second reads back (at one thread on a Zen 5 core
// 0.109 and 0.087 ms, 66 and 147 GFLOP/s). The kernel here computes the depthwise output of 8
// pixels in each of two rows, keeps them in a 2 KiB buffer on the stack and projects them at once:
// the intermediate tensor never leaves the core's first-level cache. In the model the pair took
// 0.12-0.13 ms (docs/performance.md, thirty-eighth session).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "tessera/backends/onednn/aligned_floats.h"

namespace tessera::onednn {

/// A depthwise 3x3 convolution (stride 1, one row and column of padding on every side) of a
/// channels-last input [batch, h, w, channels], then a 1x1 convolution of its output to
/// out_channels (stride 1, no padding), the output channels-last [batch, h, w, out_channels].
struct DwPointwiseShape {
  int64_t batch = 0;
  int64_t h = 0;
  int64_t w = 0;
  int64_t channels = 0;
  int64_t out_channels = 0;
};

/// Whether Tessera's kernel takes `s`: channels 16, 32, 48 or 64; out_channels 16 or 32. The
/// caller also makes sure the CPU has AVX-512 (SiluIsa::Avx512, which honours max_cpu_isa).
bool dw_pointwise_applies(const DwPointwiseShape& s);

/// The two convolutions' constants in the kernel's order, and their activations.
struct DwPointwise {
  DwPointwiseShape shape;
  // The depthwise output clamped to [dw_min, dw_max] (ReLU: 0 and +inf; ReLU6: 0 and 6; none:
  // -inf and +inf), the 1x1 output to [pw_min, pw_max].
  float dw_min = -std::numeric_limits<float>::infinity();
  float dw_max = std::numeric_limits<float>::infinity();
  float pw_min = -std::numeric_limits<float>::infinity();
  float pw_max = std::numeric_limits<float>::infinity();
  /// The depthwise weights [9 taps, row-major][channels], then the 1x1 weights
  /// [channels][out_channels]; 64-byte aligned from weights().
  AlignedFloats storage;
  std::vector<float> dw_bias;  // [channels]; zeros when the node has none
  std::vector<float> pw_bias;  // [out_channels]; zeros when the node has none
  const float* weights() const { return storage.data(); }
  const float* pw_weights() const { return weights() + 9 * shape.channels; }
};

/// Packs PyTorch-ordered weights: the depthwise [channels][1][3][3] and the 1x1
/// [out_channels][channels]; a null bias is zeros.
DwPointwise pack_dw_pointwise(const DwPointwiseShape& s, const float* dw_weights,
                              const float* dw_bias, const float* pw_weights, const float* pw_bias);

/// dst = pw(dw(src)) for `c` (dw_pointwise_applies, AVX-512 present), its rows split over
/// `threads` OpenMP threads. `dst` must not overlap `src`.
void run_dw_pointwise(const DwPointwise& c, const float* src, float* dst, int threads);

}  // namespace tessera::onednn
