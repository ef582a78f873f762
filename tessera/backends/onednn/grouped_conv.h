// Grouped 3x3 convolutions with few channels per group, computed by Tessera on channels-last
// float32 tensors, for the oneDNN backend.
//
// oneDNN 2.6's jit:avx512_core kernel runs ResNeXt-50's grouped convolutions (32 groups of 4, 8
// and 16 channels) at 17-70 % of one core's FMA peak: 56x56 with 4 channels per group took
// 0.70-0.81 ms for 29 MFLOP. The kernel here keeps a row of output pixels of 16 channels (four
// groups of 4, two of 8, one of 16) in registers and, for each input channel of a group, spreads
// that channel's value over its group's lanes with one permute, shared by the three kernel
// columns that read it: 0.30 ms for the same convolution (docs/performance.md, thirty-sixth
// session).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessera::onednn {

/// One grouped convolution: NHWC (channels-last) input [batch, h, w, channels], output [batch,
/// out_h, out_w, channels]; channels_per_group input and output channels per group; 3x3 kernel,
/// stride 1 or 2, one row and column of zero padding before, no dilation.
struct GroupedConvShape {
  int64_t batch = 1;
  int64_t h = 0, w = 0, channels = 0;
  int64_t out_h = 0, out_w = 0;
  int channels_per_group = 0;
  int stride = 1;
};

/// Whether Tessera's kernel takes `s` (channels_per_group 4, 8 or 16, channels a multiple of 16,
/// stride 1 or 2, output sizes those of one row and column of padding before and at most one
/// after); the caller also makes sure the CPU has AVX-512 (SiluIsa::Avx512, which honours
/// max_cpu_isa).
bool grouped_conv_applies(const GroupedConvShape& s);

/// The convolution's constants in the kernel's order.
struct GroupedConv {
  GroupedConvShape shape;
  bool relu = false;           // max(0, x) after the bias
  std::vector<float> weights;  // [channels / 16][3][3][channels_per_group][16]
  std::vector<float> bias;     // [channels]; zeros when the node has none
};

/// Packs PyTorch-ordered weights [channels][channels_per_group][3][3] and `bias` (null: none).
GroupedConv pack_grouped_conv(const GroupedConvShape& s, const float* weights, const float* bias,
                              bool relu);

/// dst = conv(src) for `c` (grouped_conv_applies, AVX-512 present), its output rows and channel
/// blocks split over `threads` OpenMP threads.
void run_grouped_conv(const GroupedConv& c, const float* src, float* dst, int threads);

}  // namespace tessera::onednn
