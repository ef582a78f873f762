#include "tessera/backends/onednn/grouped_conv.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>

// GCC 12 reports the _mm512_undefined_ps() inside avx512fintrin.h's unmasked intrinsics
// (_mm512_permute_ps, _mm512_max_ps) as "may be used uninitialized": a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tessera::onednn {

namespace {

// The output row oh, columns [ow0, ow0 + P), channels [16 b, 16 b + 16) of `c`. For each kernel
// row and each input channel j of a group, the NC input pixels the P outputs read (zero outside
// the row: padding) are loaded with channel j of each group spread over the group's lanes, then
// each of the three kernel columns' weight vectors is multiplied into the P accumulators, which
// are independent of each other (P chains of FMAs in flight).
template <int CG, int S, int P>
__attribute__((target("avx512f"))) void output_block(const GroupedConv& c, const float* src,
                                                     float* dst, int64_t oh, int64_t ow0,
                                                     int64_t b) {
  const GroupedConvShape& s = c.shape;
  const int64_t c0 = b * 16;
  __m512 acc[P];
  const __m512 bias = _mm512_loadu_ps(c.bias.data() + c0);
#pragma GCC unroll 16
  for (int p = 0; p < P; ++p) acc[p] = bias;
  constexpr int NC = (P - 1) * S + 3;  // input columns read
  const int64_t iw0 = ow0 * S - 1;
  const bool inside = iw0 >= 0 && iw0 + NC <= s.w;
  __m512i spread[CG];
  if constexpr (CG != 4) {
    for (int j = 0; j < CG; ++j) {
      alignas(64) int32_t lanes[16];
      for (int l = 0; l < 16; ++l) lanes[l] = (l / CG) * CG + j;
      spread[j] = _mm512_load_si512(lanes);
    }
  }
  for (int kh = 0; kh < 3; ++kh) {
    const int64_t ih = oh * S - 1 + kh;
    if (ih < 0 || ih >= s.h) continue;
    const float* row = src + ih * s.w * s.channels + c0;
    const float* wk = c.weights.data() + ((b * 3 + kh) * 3) * CG * 16;
#pragma GCC unroll 1
    for (int j = 0; j < CG; ++j) {
      __m512 xj[NC];
#pragma GCC unroll 64
      for (int k = 0; k < NC; ++k) {
        const int64_t iw = iw0 + k;
        const __m512 x = inside || (iw >= 0 && iw < s.w) ? _mm512_loadu_ps(row + iw * s.channels)
                                                         : _mm512_setzero_ps();
        if constexpr (CG == 4) {
          // Within each 128-bit lane (one group): element j everywhere.
          switch (j) {
            case 0:
              xj[k] = _mm512_permute_ps(x, 0x00);
              break;
            case 1:
              xj[k] = _mm512_permute_ps(x, 0x55);
              break;
            case 2:
              xj[k] = _mm512_permute_ps(x, 0xAA);
              break;
            default:
              xj[k] = _mm512_permute_ps(x, 0xFF);
              break;
          }
        } else {
          xj[k] = _mm512_permutexvar_ps(spread[j], x);
        }
      }
#pragma GCC unroll 3
      for (int kw = 0; kw < 3; ++kw) {
        const __m512 w = _mm512_loadu_ps(wk + (kw * CG + j) * 16);
#pragma GCC unroll 16
        for (int p = 0; p < P; ++p) acc[p] = _mm512_fmadd_ps(xj[p * S + kw], w, acc[p]);
      }
    }
  }
  const __m512 zero = _mm512_setzero_ps();
  float* out = dst + (oh * s.out_w + ow0) * s.channels + c0;
#pragma GCC unroll 16
  for (int p = 0; p < P; ++p) {
    _mm512_storeu_ps(out + p * s.channels, c.relu ? _mm512_max_ps(acc[p], zero) : acc[p]);
  }
}

// Columns [ow0, ow0 + n) with n < P, as blocks of exactly n.
template <int CG, int S, int P>
void tail_block(const GroupedConv& c, const float* src, float* dst, int64_t oh, int64_t ow0,
                int64_t b, int n) {
  if constexpr (P > 1) {
    if (n == P - 1) {
      output_block<CG, S, P - 1>(c, src, dst, oh, ow0, b);
    } else {
      tail_block<CG, S, P - 1>(c, src, dst, oh, ow0, b, n);
    }
  }
}

// P: output pixels a block, the fastest of those tried for ResNeXt-50's shapes on a Zen 5
// core (8 with 4 channels a group at stride 1; 7 otherwise: 28, 14 and 7 columns divide by it).
template <int CG, int S>
void run_shape(const GroupedConv& c, const float* src, float* dst, int threads) {
  constexpr int P = CG == 4 && S == 1 ? 8 : 7;
  const GroupedConvShape& s = c.shape;
  const int64_t blocks = s.channels / 16;
  const int64_t items = s.batch * s.out_h * blocks;
  const int64_t in_image = s.h * s.w * s.channels, out_image = s.out_h * s.out_w * s.channels;
  const int64_t full = s.out_w / P * P;
  const int rest = static_cast<int>(s.out_w - full);
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
  for (int64_t item = 0; item < items; ++item) {
    const int64_t n = item / (s.out_h * blocks);
    const int64_t oh = item / blocks % s.out_h, b = item % blocks;
    const float* in = src + n * in_image;
    float* out = dst + n * out_image;
    for (int64_t ow = 0; ow < full; ow += P) output_block<CG, S, P>(c, in, out, oh, ow, b);
    if (rest > 0) tail_block<CG, S, P>(c, in, out, oh, full, b, rest);
  }
}

template <int CG>
void run_group_size(const GroupedConv& c, const float* src, float* dst, int threads) {
  if (c.shape.stride == 1) {
    run_shape<CG, 1>(c, src, dst, threads);
  } else {
    run_shape<CG, 2>(c, src, dst, threads);
  }
}

}  // namespace

bool grouped_conv_applies(const GroupedConvShape& s) {
  const int cg = s.channels_per_group;
  if ((cg != 4 && cg != 8 && cg != 16) || s.batch <= 0 || s.channels <= 0 || s.channels % 16 != 0 ||
      (s.stride != 1 && s.stride != 2) || s.h <= 0 || s.w <= 0) {
    return false;
  }
  // One row and column of padding before, none or one after.
  auto fits = [&](int64_t in, int64_t out) {
    for (int64_t after = 0; after <= 1; ++after) {
      if (in + 1 + after >= 3 && out == (in + 1 + after - 3) / s.stride + 1) return true;
    }
    return false;
  };
  return fits(s.h, s.out_h) && fits(s.w, s.out_w);
}

GroupedConv pack_grouped_conv(const GroupedConvShape& s, const float* weights, const float* bias,
                              bool relu) {
  GroupedConv c;
  c.shape = s;
  c.relu = relu;
  const int64_t cg = s.channels_per_group;
  c.weights.resize(static_cast<size_t>(s.channels * cg * 9));
  for (int64_t b = 0; b < s.channels / 16; ++b) {
    for (int64_t kh = 0; kh < 3; ++kh) {
      for (int64_t kw = 0; kw < 3; ++kw) {
        for (int64_t j = 0; j < cg; ++j) {
          for (int64_t l = 0; l < 16; ++l) {
            const int64_t oc = b * 16 + l;
            c.weights[static_cast<size_t>((((b * 3 + kh) * 3 + kw) * cg + j) * 16 + l)] =
                weights[((oc * cg + j) * 3 + kh) * 3 + kw];
          }
        }
      }
    }
  }
  c.bias.assign(static_cast<size_t>(s.channels), 0.0f);
  if (bias != nullptr) std::copy(bias, bias + s.channels, c.bias.begin());
  return c;
}

void run_grouped_conv(const GroupedConv& c, const float* src, float* dst, int threads) {
  threads = std::max(threads, 1);
  switch (c.shape.channels_per_group) {
    case 4:
      run_group_size<4>(c, src, dst, threads);
      break;
    case 8:
      run_group_size<8>(c, src, dst, threads);
      break;
    default:
      run_group_size<16>(c, src, dst, threads);
      break;
  }
}

}  // namespace tessera::onednn
