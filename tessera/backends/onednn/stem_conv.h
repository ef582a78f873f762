// A first-layer 3x3 convolution (a few input channels read as the method's NCHW input is, 32 to
// 64 output channels written channels-last), computed by Tessera for the oneDNN backend.
//
// oneDNN 2.6 has two ways to run MobileNetV2's and EfficientNet-B0's first layer (3 -> 32
// channels, 3x3, stride 2, 224x224): its jit kernel reads NCHW but writes aBcd16b, which with 32
// channels is not the channels-last layout the layers after it read (their kernels then ran
// slower: 0.17 against 0.15 ms for the pair that follows); its brgconv kernel writes
// channels-last but wants its input channels-last too, so the whole input is reordered first.
// At one thread on a Zen 5 core the reorder took 0.045 ms and the convolution 0.133-0.146 ms
// (74 GFLOP/s). The kernel here reads the NCHW input as it is, eight output pixels at a time, each
// input value broadcast against the weights of all output channels (docs/performance.md,
// thirty-eighth session).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "tessera/backends/onednn/aligned_floats.h"

namespace tessera::onednn {

/// A 3x3 convolution of an NCHW input [batch, in_channels, h, w] to a channels-last output
/// [batch, out_h, out_w, out_channels]; stride the same both ways, padding pad_top/pad_left
/// before (after: whatever out_h and out_w leave), no dilation, no groups.
struct StemConvShape {
  int64_t batch = 0;
  int64_t in_channels = 0;
  int64_t h = 0;
  int64_t w = 0;
  int64_t out_channels = 0;
  int64_t out_h = 0;
  int64_t out_w = 0;
  int64_t stride = 1;
  int64_t pad_top = 0;
  int64_t pad_left = 0;
};

/// Whether Tessera's kernel takes `s`: 1 to 4 input channels, 32, 48 or 64 output channels,
/// stride 1 or 2, padding 0 or 1, outputs that fit the input. The caller also makes sure the CPU
/// has AVX-512 (SiluIsa::Avx512, which honours max_cpu_isa).
bool stem_conv_applies(const StemConvShape& s);

/// The convolution's constants in the kernel's order, and the clamp after it.
struct StemConv {
  StemConvShape shape;
  float min = -std::numeric_limits<float>::infinity();  // ReLU: 0; ReLU6: 0 and 6
  float max = std::numeric_limits<float>::infinity();
  /// [in_channels][3][3][out_channels]; 64-byte aligned from weights().
  AlignedFloats storage;
  std::vector<float> bias;  // [out_channels]; zeros when the node has none
  const float* weights() const { return storage.data(); }
};

/// Packs PyTorch-ordered weights [out_channels][in_channels][3][3] and `bias` (null: none).
StemConv pack_stem_conv(const StemConvShape& s, const float* weights, const float* bias);

/// dst = clamp(conv(src)) for `c` (stem_conv_applies, AVX-512 present), its output rows split
/// over `threads` OpenMP threads.
void run_stem_conv(const StemConv& c, const float* src, float* dst, int threads);

}  // namespace tessera::onednn
