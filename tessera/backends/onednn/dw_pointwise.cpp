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

// Output pixels a block: R columns of Rows rows. The depthwise part holds Rows * R accumulators
// and the R + 2 input columns of one row (each input row read once for both output rows), the
// 1x1 part up to 16 accumulators per 16 output channels.
constexpr int kPixels = 8;
constexpr int kMaxChannels = 64;

// The depthwise outputs of columns w0 .. w0 + R - 1 of rows row .. row + Rows - 1 of image `x`
// (channels-last, [h][w][C]), clamped, into mid[(o * R + r) * C + channel]. Checked: columns
// w0 - 1 or w0 + R may lie outside the image (read as zeros); unchecked, the loads have no
// branches.
template <int C, int R, int Rows, bool Checked>
__attribute__((target("avx512f"))) void depthwise(const DwPointwise& c, const float* x, int64_t row,
                                                  int64_t w0, float* mid) {
  const int64_t H = c.shape.h, W = c.shape.w;
  const float* dww = c.weights();
  const __m512 lo = _mm512_set1_ps(c.dw_min), hi = _mm512_set1_ps(c.dw_max);
#pragma GCC unroll 1
  for (int cv = 0; cv < C / 16; ++cv) {
    __m512 acc[Rows][R];
    const __m512 bias = _mm512_loadu_ps(c.dw_bias.data() + cv * 16);
#pragma GCC unroll 2
    for (int o = 0; o < Rows; ++o) {
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) acc[o][r] = bias;
    }
#pragma GCC unroll 4
    for (int ir = 0; ir < Rows + 2; ++ir) {
      const int64_t in_row = row - 1 + ir;
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
#pragma GCC unroll 2
      for (int o = 0; o < Rows; ++o) {
        const int kh = ir - o;  // the kernel row input row `ir` is for output row `o`
        if (kh < 0 || kh > 2) continue;
#pragma GCC unroll 3
        for (int kw = 0; kw < 3; ++kw) {
          const __m512 wv = _mm512_load_ps(dww + (kh * 3 + kw) * C + cv * 16);
#pragma GCC unroll 16
          for (int r = 0; r < R; ++r) acc[o][r] = _mm512_fmadd_ps(in[r + kw], wv, acc[o][r]);
        }
      }
    }
#pragma GCC unroll 2
    for (int o = 0; o < Rows; ++o) {
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        _mm512_store_ps(mid + (o * R + r) * C + cv * 16,
                        _mm512_min_ps(_mm512_max_ps(acc[o][r], lo), hi));
      }
    }
  }
}

// The 1x1 Conv of P depthwise outputs (mid, as depthwise() leaves them), clamped, pixel p into
// y[p / R] + p % R * M.
template <int C, int M, int P, int R>
__attribute__((target("avx512f"))) void project(const DwPointwise& c, const float* mid,
                                                float* const* y) {
  const float* pww = c.pw_weights();
  __m512 out[P][M / 16];
#pragma GCC unroll 16
  for (int p = 0; p < P; ++p) {
#pragma GCC unroll 2
    for (int m = 0; m < M / 16; ++m) out[p][m] = _mm512_loadu_ps(c.pw_bias.data() + m * 16);
  }
#pragma GCC unroll 4
  for (int k = 0; k < C; ++k) {
    __m512 wv[M / 16];
#pragma GCC unroll 2
    for (int m = 0; m < M / 16; ++m) wv[m] = _mm512_load_ps(pww + k * M + m * 16);
#pragma GCC unroll 16
    for (int p = 0; p < P; ++p) {
      const __m512 v = _mm512_set1_ps(mid[p * C + k]);
#pragma GCC unroll 2
      for (int m = 0; m < M / 16; ++m) out[p][m] = _mm512_fmadd_ps(v, wv[m], out[p][m]);
    }
  }
  const __m512 lo = _mm512_set1_ps(c.pw_min), hi = _mm512_set1_ps(c.pw_max);
#pragma GCC unroll 16
  for (int p = 0; p < P; ++p) {
#pragma GCC unroll 2
    for (int m = 0; m < M / 16; ++m) {
      _mm512_storeu_ps(y[p / R] + p % R * M + m * 16,
                       _mm512_min_ps(_mm512_max_ps(out[p][m], lo), hi));
    }
  }
}

// Pixels w0 .. w0 + R - 1 of output rows row .. row + Rows - 1 of image `x` into y[0 .. Rows)
// (each row's pixel w0). The 1x1 part takes 16 pixels at once with 16 output channels, 8 with 32
// (its accumulators and weights within the 32 registers).
template <int C, int M, int R, int Rows, bool Checked>
void pixel_block(const DwPointwise& c, const float* x, int64_t row, int64_t w0, float* const* y) {
  alignas(64) float mid[Rows * R * C];
  depthwise<C, R, Rows, Checked>(c, x, row, w0, mid);
  if constexpr (M == 16 || Rows == 1) {
    project<C, M, Rows * R, R>(c, mid, y);
  } else {
    for (int o = 0; o < Rows; ++o) project<C, M, R, R>(c, mid + o * R * C, y + o);
  }
}

// Rows row .. row + Rows - 1 of image `x` into `y` (row `row`'s first pixel; W * M floats a row).
template <int C, int M, int Rows>
void run_rows(const DwPointwise& c, const float* x, int64_t row, float* y) {
  const int64_t W = c.shape.w;
  int64_t w0 = 0;
  for (; w0 + kPixels <= W; w0 += kPixels) {
    float* at[Rows];
    for (int o = 0; o < Rows; ++o) at[o] = y + (o * W + w0) * M;
    if (w0 >= 1 && w0 + kPixels < W) {
      pixel_block<C, M, kPixels, Rows, false>(c, x, row, w0, at);
    } else {
      pixel_block<C, M, kPixels, Rows, true>(c, x, row, w0, at);
    }
  }
  for (; w0 < W; ++w0) {
    float* at[Rows];
    for (int o = 0; o < Rows; ++o) at[o] = y + (o * W + w0) * M;
    pixel_block<C, M, 1, Rows, true>(c, x, row, w0, at);
  }
}

// Rows two at a time (each input row loaded once for both: 0.12 against 0.14 ms for
// MobileNetV2's 112x112 pair), the last one of an odd height alone.
template <int C, int M>
void run_shape(const DwPointwise& c, const float* src, float* dst, int threads) {
  const int64_t H = c.shape.h, W = c.shape.w;
  const int64_t pairs = (H + 1) / 2;
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
  for (int64_t np = 0; np < c.shape.batch * pairs; ++np) {
    const int64_t image = np / pairs, row = np % pairs * 2;
    const float* x = src + image * H * W * C;
    float* y = dst + (image * H + row) * W * M;
    if (row + 1 < H) {
      run_rows<C, M, 2>(c, x, row, y);
    } else {
      run_rows<C, M, 1>(c, x, row, y);
    }
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
  c.storage.assign(static_cast<size_t>(9 * C + C * M));
  float* dww = c.storage.data();
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
