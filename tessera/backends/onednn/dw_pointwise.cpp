#include "tessera/backends/onednn/dw_pointwise.h"

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

// Output pixels a block: the depthwise part holds R accumulators and the R + 2 input columns
// of one row, the 1x1 part R accumulators per 16 output channels.
constexpr int kPixels = 8;
constexpr int kMaxChannels = 64;

// Pixels w0 .. w0 + R - 1 of output row `row` of image `x` (channels-last, [h][w][C]) into `y`
// (the same pixels' first output channel). Checked: columns w0 - 1 or w0 + R may lie outside the
// image (read as zeros); unchecked, the loads have no branches.
template <int C, int M, int R, bool Checked>
__attribute__((target("avx512f"))) void pixel_block(const DwPointwise& c, const float* x,
                                                    int64_t row, int64_t w0, float* y) {
  const int64_t H = c.shape.h, W = c.shape.w;
  const float* dww = c.weights();
  const float* pww = c.pw_weights();
  alignas(64) float mid[R * C];
  const __m512 dw_lo = _mm512_set1_ps(c.dw_min), dw_hi = _mm512_set1_ps(c.dw_max);
#pragma GCC unroll 1
  for (int cv = 0; cv < C / 16; ++cv) {
    __m512 acc[R];
    const __m512 bias = _mm512_loadu_ps(c.dw_bias.data() + cv * 16);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) acc[r] = bias;
#pragma GCC unroll 1
    for (int kh = 0; kh < 3; ++kh) {
      const int64_t in_row = row + kh - 1;
      if (in_row < 0 || in_row >= H) continue;
      // Column w0 - 1 + j at first + j * C.
      const float* first = x + (in_row * W + w0 - 1) * C + cv * 16;
      __m512 in[R + 2];
#pragma GCC unroll 16
      for (int j = 0; j < R + 2; ++j) {
        in[j] = !Checked || (w0 - 1 + j >= 0 && w0 - 1 + j < W) ? _mm512_loadu_ps(first + j * C)
                                                                : _mm512_setzero_ps();
        // Loaded once into a register: left to itself GCC 12 folds the load into each of the
        // column's three FMAs, three 64-byte loads for one (0.18 against 0.14 ms at 112x112).
        asm("" : "+v"(in[j]));
      }
#pragma GCC unroll 3
      for (int kw = 0; kw < 3; ++kw) {
        const __m512 wv = _mm512_load_ps(dww + (kh * 3 + kw) * C + cv * 16);
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) acc[r] = _mm512_fmadd_ps(in[r + kw], wv, acc[r]);
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      _mm512_store_ps(mid + r * C + cv * 16,
                      _mm512_min_ps(_mm512_max_ps(acc[r], dw_lo), dw_hi));
    }
  }
  __m512 out[R][M / 16];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
    for (int m = 0; m < M / 16; ++m) out[r][m] = _mm512_loadu_ps(c.pw_bias.data() + m * 16);
  }
#pragma GCC unroll 4
  for (int k = 0; k < C; ++k) {
    __m512 wv[M / 16];
#pragma GCC unroll 2
    for (int m = 0; m < M / 16; ++m) wv[m] = _mm512_load_ps(pww + k * M + m * 16);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 v = _mm512_set1_ps(mid[r * C + k]);
#pragma GCC unroll 2
      for (int m = 0; m < M / 16; ++m) out[r][m] = _mm512_fmadd_ps(v, wv[m], out[r][m]);
    }
  }
  const __m512 pw_lo = _mm512_set1_ps(c.pw_min), pw_hi = _mm512_set1_ps(c.pw_max);
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
    for (int m = 0; m < M / 16; ++m) {
      _mm512_storeu_ps(y + r * M + m * 16,
                       _mm512_min_ps(_mm512_max_ps(out[r][m], pw_lo), pw_hi));
    }
  }
}

template <int C, int M>
void run_shape(const DwPointwise& c, const float* src, float* dst, int threads) {
  const int64_t H = c.shape.h, W = c.shape.w;
  const int64_t rows = c.shape.batch * H;
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
  for (int64_t nr = 0; nr < rows; ++nr) {
    const int64_t image = nr / H, row = nr % H;
    const float* x = src + image * H * W * C;
    float* y = dst + nr * W * M;
    int64_t w0 = 0;
    for (; w0 + kPixels <= W; w0 += kPixels) {
      if (w0 >= 1 && w0 + kPixels < W) {
        pixel_block<C, M, kPixels, false>(c, x, row, w0, y + w0 * M);
      } else {
        pixel_block<C, M, kPixels, true>(c, x, row, w0, y + w0 * M);
      }
    }
    for (; w0 < W; ++w0) pixel_block<C, M, 1, true>(c, x, row, w0, y + w0 * M);
  }
}

template <int C>
void run_channels(const DwPointwise& c, const float* src, float* dst, int threads) {
  if (c.shape.out_channels == 16) {
    run_shape<C, 16>(c, src, dst, threads);
  } else {
    run_shape<C, 32>(c, src, dst, threads);
  }
}

}  // namespace

bool dw_pointwise_applies(const DwPointwiseShape& s) {
  return s.batch > 0 && s.h > 0 && s.w > 0 && s.channels > 0 && s.channels % 16 == 0 &&
         s.channels <= kMaxChannels && (s.out_channels == 16 || s.out_channels == 32);
}

DwPointwise pack_dw_pointwise(const DwPointwiseShape& s, const float* dw_weights,
                              const float* dw_bias, const float* pw_weights, const float* pw_bias) {
  DwPointwise c;
  c.shape = s;
  const int64_t C = s.channels, M = s.out_channels;
  c.storage.assign(static_cast<size_t>(9 * C + C * M + 16), 0.0f);
  float* dww = const_cast<float*>(c.weights());
  float* pww = dww + 9 * C;
  for (int64_t ch = 0; ch < C; ++ch) {
    for (int64_t t = 0; t < 9; ++t) dww[t * C + ch] = dw_weights[ch * 9 + t];
  }
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t ch = 0; ch < C; ++ch) pww[ch * M + m] = pw_weights[m * C + ch];
  }
  c.dw_bias.assign(static_cast<size_t>(C), 0.0f);
  if (dw_bias != nullptr) std::copy(dw_bias, dw_bias + C, c.dw_bias.begin());
  c.pw_bias.assign(static_cast<size_t>(M), 0.0f);
  if (pw_bias != nullptr) std::copy(pw_bias, pw_bias + M, c.pw_bias.begin());
  return c;
}

void run_dw_pointwise(const DwPointwise& c, const float* src, float* dst, int threads) {
  switch (c.shape.channels) {
    case 16:
      run_channels<16>(c, src, dst, threads);
      break;
    case 32:
      run_channels<32>(c, src, dst, threads);
      break;
    case 48:
      run_channels<48>(c, src, dst, threads);
      break;
    default:
      run_channels<64>(c, src, dst, threads);
      break;
  }
}

}  // namespace tessera::onednn
