#include "tessera/backends/onednn/narrow_conv.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

// GCC 12 reports the _mm512_undefined_ps() inside avx512fintrin.h's unmasked intrinsics
// (_mm512_permute_ps, _mm512_max_ps) as "may be used uninitialized": a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tessera::onednn {

namespace {

// Output pixels a block: 8 was the fastest of 6, 8, 10, 12 and 14 for 144 -> 24 and 96 -> 24
// channels at 56x56 on a Zen 5 core; with 40 channels (3 vectors a pixel) 24 accumulators.
constexpr int kPixels = 8;

// R pixels from `x` (channels-last, K channels each) into `y` (16 M + 8 channels each). For each
// pair of input channels k, k + 1: the M vectors of the first 16 M output channels take x[k] and
// x[k + 1] each broadcast; the last vector holds the last 8 channels for k in its even lanes and
// for k + 1 in its odd ones (weights packed so), and takes the pair broadcast as one 64-bit value.
// Blocked: `x` is channel-blocked (NarrowConvShape::blocked_input), pixel r's channel k at
// x[r * 16 + k / 16 * block + k % 16].
template <int M, int R, bool Blocked>
__attribute__((target("avx512f"))) void pixel_block(const NarrowConv& c, const float* x,
                                                    const float* res, float* y, int64_t block) {
  const int64_t K = c.shape.in_channels;
  const int64_t pixel_stride = Blocked ? 16 : K;
  constexpr int64_t kOut = 16 * M + 8;
  const float* w0 = c.weights();
  const float* w1 = w0 + K * 16 * M;
  __m512 a[R][M];
  __m512 b[R];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
    for (int m = 0; m < M; ++m) a[r][m] = _mm512_setzero_ps();
    b[r] = _mm512_setzero_ps();
  }
#pragma GCC unroll 1
  for (int64_t k = 0; k < K; k += 2) {
    __m512 even[M], odd[M];
#pragma GCC unroll 2
    for (int m = 0; m < M; ++m) {
      even[m] = _mm512_load_ps(w0 + k * 16 * M + m * 16);
      odd[m] = _mm512_load_ps(w0 + (k + 1) * 16 * M + m * 16);
    }
    const __m512 pair = _mm512_load_ps(w1 + k * 8);
    const int64_t at = Blocked ? k / 16 * block + k % 16 : k;
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const float* xp = x + r * pixel_stride + at;
      const __m512 xe = _mm512_set1_ps(xp[0]);
      const __m512 xo = _mm512_set1_ps(xp[1]);
#pragma GCC unroll 2
      for (int m = 0; m < M; ++m) {
        a[r][m] = _mm512_fmadd_ps(xe, even[m], a[r][m]);
        a[r][m] = _mm512_fmadd_ps(xo, odd[m], a[r][m]);
      }
      double both;
      std::memcpy(&both, xp, sizeof both);
      b[r] = _mm512_fmadd_ps(_mm512_castpd_ps(_mm512_set1_pd(both)), pair, b[r]);
    }
  }
  // Lane j of the last 8 channels: the sum of lanes 2j and 2j + 1.
  const __m512i evens = _mm512_set_epi32(15, 13, 11, 9, 7, 5, 3, 1, 14, 12, 10, 8, 6, 4, 2, 0);
  const float* bias = c.bias.data();
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    float* out = y + r * kOut;
    const float* in = c.sum ? res + r * kOut : nullptr;
    const __m512 folded = _mm512_add_ps(b[r], _mm512_permute_ps(b[r], 0xB1));
    __m256 last = _mm256_add_ps(_mm512_castps512_ps256(_mm512_permutexvar_ps(evens, folded)),
                                _mm256_loadu_ps(bias + 16 * M));
    if (c.sum) last = _mm256_add_ps(last, _mm256_loadu_ps(in + 16 * M));
    if (c.relu) last = _mm256_max_ps(last, _mm256_setzero_ps());
#pragma GCC unroll 2
    for (int m = 0; m < M; ++m) {
      __m512 v = _mm512_add_ps(a[r][m], _mm512_loadu_ps(bias + 16 * m));
      if (c.sum) v = _mm512_add_ps(v, _mm512_loadu_ps(in + 16 * m));
      if (c.relu) v = _mm512_max_ps(v, _mm512_setzero_ps());
      _mm512_storeu_ps(out + 16 * m, v);
    }
    _mm256_storeu_ps(out + 16 * M, last);
  }
}

// Channels-last, the pixels of all images are one run, split into blocks; channel-blocked, each
// image's are (a block does not span two images).
template <int M, bool Blocked>
void run_layout(const NarrowConv& c, const float* src, const float* residual, float* dst,
                int threads) {
  const int64_t K = c.shape.in_channels, kOut = c.shape.out_channels;
  const int64_t run = Blocked ? c.shape.image_pixels : c.shape.pixels;
  const int64_t per_run = (run + kPixels - 1) / kPixels;
  const int64_t blocks = c.shape.pixels / run * per_run;
  // Input offset of pixel q of image i (channels-last: i is 0, q any pixel).
  auto input_at = [&](int64_t i, int64_t q) { return Blocked ? i * K * run + q * 16 : q * K; };
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t image = blk / per_run, q0 = blk % per_run * kPixels;
    const int64_t p0 = image * run + q0;  // the output's pixel
    const int64_t n = std::min<int64_t>(kPixels, run - q0);
    const float* res = c.sum ? residual + p0 * kOut : nullptr;
    if (n == kPixels) {
      pixel_block<M, kPixels, Blocked>(c, src + input_at(image, q0), res, dst + p0 * kOut,
                                       16 * run);
    } else {
      for (int64_t p = 0; p < n; ++p) {
        pixel_block<M, 1, Blocked>(c, src + input_at(image, q0 + p),
                                   res != nullptr ? res + p * kOut : nullptr, dst + (p0 + p) * kOut,
                                   16 * run);
      }
    }
  }
}

template <int M>
void run_width(const NarrowConv& c, const float* src, const float* residual, float* dst,
               int threads) {
  if (c.shape.blocked_input) {
    run_layout<M, true>(c, src, residual, dst, threads);
  } else {
    run_layout<M, false>(c, src, residual, dst, threads);
  }
}

}  // namespace

bool narrow_conv_applies(const NarrowConvShape& s) {
  return s.pixels > 0 && s.in_channels > 0 && s.in_channels % 2 == 0 &&
         (s.out_channels == 24 || s.out_channels == 40) &&
         (!s.blocked_input ||
          (s.in_channels % 16 == 0 && s.image_pixels > 0 && s.pixels % s.image_pixels == 0));
}

NarrowConv pack_narrow_conv(const NarrowConvShape& s, const float* weights, const float* bias,
                            bool sum, bool relu) {
  NarrowConv c;
  c.shape = s;
  c.sum = sum;
  c.relu = relu;
  const int64_t K = s.in_channels, full = s.out_channels / 16 * 16;
  const size_t count = static_cast<size_t>(K * full + K * 8);
  c.storage.assign(count);
  float* w0 = c.storage.data();
  float* w1 = w0 + K * full;
  for (int64_t k = 0; k < K; ++k) {
    for (int64_t n = 0; n < full; ++n) w0[k * full + n] = weights[n * K + k];
    for (int64_t j = 0; j < 8; ++j) w1[(k / 2) * 16 + 2 * j + k % 2] = weights[(full + j) * K + k];
  }
  c.bias.assign(static_cast<size_t>(s.out_channels), 0.0f);
  if (bias != nullptr) std::copy(bias, bias + s.out_channels, c.bias.begin());
  return c;
}

void run_narrow_conv(const NarrowConv& c, const float* src, const float* residual, float* dst,
                     int threads) {
  if (c.shape.out_channels == 24) {
    run_width<1>(c, src, residual, dst, threads);
  } else {
    run_width<2>(c, src, residual, dst, threads);
  }
}

}  // namespace tessera::onednn
