#include "tessera/backends/onednn/stem_conv.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>

// GCC 12 reports the _mm512_undefined_ps() inside avx512fintrin.h's unmasked intrinsics as
// "may be used uninitialized": a false positive (as in narrow_conv.cpp).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace tessera::onednn {

namespace {

// Output pixels a block: with M vectors of 16 output channels, R * M accumulators and M weight
// vectors within the 32 registers.
constexpr int pixels_for(int M) {
  return M >= 4 ? 6 : 8;
}
// How many output rows ahead a block prefetches the input rows it will be the first to read (1
// measured as fast as 2, 3 and 4 with the input cached, 0.154-0.159 ms against 0.159-0.20 with
// it not).
constexpr int64_t kPrefetchRows = 1;

// Output pixels ow0 .. ow0 + R - 1 of row `oh` of image `x` (NCHW, one image) into `y` (the
// first pixel's first channel). Checked: some of the taps fall in the padding (read as zeros).
template <int M, int R, bool Checked>
__attribute__((target("avx512f"))) void pixel_block(const StemConv& c, const float* x, int64_t oh,
                                                    int64_t ow0, float* y) {
  const StemConvShape& s = c.shape;
  const int64_t S = s.stride;
  const float* wts = c.weights();
  __m512 acc[R][M];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int m = 0; m < M; ++m) acc[r][m] = _mm512_loadu_ps(c.bias.data() + m * 16);
  }
  const int64_t ih0 = oh * S - s.pad_top, iw0 = ow0 * S - s.pad_left;
#pragma GCC unroll 1
  for (int64_t ci = 0; ci < s.in_channels; ++ci) {
    const float* plane = x + ci * s.h * s.w;
    // The input rows the next output row is the first to read, the columns of this block: the
    // input arrives from memory (run after a whole model, it had left the caches: 0.27 ms for
    // MobileNetV2's first layer against 0.14 with it cached), and rows of a few cache lines
    // each, three planes apart, are too short for the hardware prefetcher.
    const int64_t last_col = std::min(iw0 + R * S + 1, s.w - 1);
    for (int64_t j = 1; j <= S; ++j) {
      const int64_t ih = ih0 + kPrefetchRows * S + 2 - S + j;
      if (ih >= s.h || ih < 0) continue;
      const float* at = plane + ih * s.w;
      _mm_prefetch(reinterpret_cast<const char*>(at + std::max<int64_t>(iw0, 0)), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(at + last_col), _MM_HINT_T0);
    }
#pragma GCC unroll 1
    for (int kh = 0; kh < 3; ++kh) {
      const int64_t ih = ih0 + kh;
      if (Checked && (ih < 0 || ih >= s.h)) continue;
      const float* row = plane + ih * s.w;
#pragma GCC unroll 3
      for (int kw = 0; kw < 3; ++kw) {
        __m512 wv[M];
        const float* tap = wts + ((ci * 3 + kh) * 3 + kw) * 16 * M;
#pragma GCC unroll 4
        for (int m = 0; m < M; ++m) wv[m] = _mm512_load_ps(tap + m * 16);
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
          const int64_t iw = iw0 + r * S + kw;
          if (Checked && (iw < 0 || iw >= s.w)) continue;
          const __m512 v = _mm512_set1_ps(row[iw]);
#pragma GCC unroll 4
          for (int m = 0; m < M; ++m) acc[r][m] = _mm512_fmadd_ps(v, wv[m], acc[r][m]);
        }
      }
    }
  }
  const __m512 lo = _mm512_set1_ps(c.min), hi = _mm512_set1_ps(c.max);
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int m = 0; m < M; ++m) {
      _mm512_storeu_ps(y + r * 16 * M + m * 16, _mm512_min_ps(_mm512_max_ps(acc[r][m], lo), hi));
    }
  }
}

template <int M>
void run_width(const StemConv& c, const float* src, float* dst, int threads) {
  const StemConvShape& s = c.shape;
  const int64_t rows = s.batch * s.out_h;
  const int64_t out = 16 * M;
  constexpr int kPixels = pixels_for(M);
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
  for (int64_t nr = 0; nr < rows; ++nr) {
    const int64_t image = nr / s.out_h, oh = nr % s.out_h;
    const float* x = src + image * s.in_channels * s.h * s.w;
    float* y = dst + nr * s.out_w * out;
    // Whether row oh's taps all fall inside the input rows; a block's columns likewise.
    const int64_t ih0 = oh * s.stride - s.pad_top;
    const bool rows_inside = ih0 >= 0 && ih0 + 2 < s.h;
    int64_t ow = 0;
    for (; ow + kPixels <= s.out_w; ow += kPixels) {
      const int64_t iw0 = ow * s.stride - s.pad_left;
      const int64_t iw_last = (ow + kPixels - 1) * s.stride - s.pad_left + 2;
      if (rows_inside && iw0 >= 0 && iw_last < s.w) {
        pixel_block<M, kPixels, false>(c, x, oh, ow, y + ow * out);
      } else {
        pixel_block<M, kPixels, true>(c, x, oh, ow, y + ow * out);
      }
    }
    for (; ow < s.out_w; ++ow) pixel_block<M, 1, true>(c, x, oh, ow, y + ow * out);
  }
}

}  // namespace

bool stem_conv_applies(const StemConvShape& s) {
  if (s.batch <= 0 || s.in_channels < 1 || s.in_channels > 4 || s.h <= 0 || s.w <= 0 ||
      (s.out_channels != 32 && s.out_channels != 48 && s.out_channels != 64) ||
      (s.stride != 1 && s.stride != 2) || s.pad_top < 0 || s.pad_top > 1 || s.pad_left < 0 ||
      s.pad_left > 1 || s.out_h <= 0 || s.out_w <= 0) {
    return false;
  }
  // Every output's window starts inside the padded input (the last ones may end in the padding
  // after, at most one row or column of it).
  return (s.out_h - 1) * s.stride - s.pad_top + 2 <= s.h &&
         (s.out_w - 1) * s.stride - s.pad_left + 2 <= s.w;
}

StemConv pack_stem_conv(const StemConvShape& s, const float* weights, const float* bias) {
  StemConv c;
  c.shape = s;
  const int64_t C = s.in_channels, M = s.out_channels;
  c.storage.assign(static_cast<size_t>(C * 9 * M));
  float* w = c.storage.data();
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t t = 0; t < C * 9; ++t) w[t * M + m] = weights[m * C * 9 + t];
  }
  c.bias.assign(static_cast<size_t>(M), 0.0f);
  if (bias != nullptr) std::copy(bias, bias + M, c.bias.begin());
  return c;
}

void run_stem_conv(const StemConv& c, const float* src, float* dst, int threads) {
  switch (c.shape.out_channels) {
    case 32:
      run_width<2>(c, src, dst, threads);
      break;
    case 48:
      run_width<3>(c, src, dst, threads);
      break;
    default:
      run_width<4>(c, src, dst, threads);
      break;
  }
}

}  // namespace tessera::onednn
