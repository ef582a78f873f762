#include "tessera/backends/onednn/silu.h"

#include <immintrin.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cmath>

#include "tessera/backends/onednn/onednn_backend.h"

namespace tessera::onednn {

namespace {

// exp(t) = 2^k * exp(r) with k = round(t / ln 2) and r = t - k ln 2 in [-ln2/2, ln2/2] (ln 2 in
// two parts so that k ln 2 is exact for |k| < 512), exp(r) = 1 + r + r^2 p(r).
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;
constexpr float kLn2Lo = -2.12194440e-4f;
constexpr float kP0 = 1.9875691500e-4f;
constexpr float kP1 = 1.3981999507e-3f;
constexpr float kP2 = 8.3334519073e-3f;
constexpr float kP3 = 4.1665795894e-2f;
constexpr float kP4 = 1.6666665459e-1f;
constexpr float kP5 = 5.0000001201e-1f;
// t = -x is clamped to [kTMin, kTMax]. Below kTMin, exp(t) < 2.1e-9 and 1 + exp(t) rounds to 1
// as it does for the true value. Above 88.72, exp(t) overflows to +inf, so the result is
// x / inf: -0 for a finite x (the true value is below 3e-37 in magnitude), NaN for x = -inf.
constexpr float kTMin = -20.0f;
constexpr float kTMax = 100.0f;
constexpr float kOverflow = 88.72f;  // the AVX2 kernel's clamp (exp(88.72) < FLT_MAX): inf above

// Elements per thread below which a second thread costs more than it saves (a wake-up and a join
// are a few microseconds; 16 K elements take about 4 us).
constexpr size_t kMinPerThread = 16 * 1024;

void silu_scalar(float* data, size_t count) {
  for (size_t i = 0; i < count; ++i) data[i] = data[i] / (1.0f + std::exp(-data[i]));
}

// The masked forms with a full mask: GCC 12's unmasked max, min, roundscale and scalef start from
// _mm512_undefined_ps() and warn (-Wmaybe-uninitialized) where they are inlined.
__attribute__((target("avx512f"))) inline __m512 silu16(__m512 x) {
  constexpr __mmask16 all = 0xffff;
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 lo = _mm512_set1_ps(kTMin), hi = _mm512_set1_ps(kTMax);
  // max and min return their second operand when either is NaN: a NaN t stays NaN.
  __m512 t = _mm512_sub_ps(_mm512_setzero_ps(), x);
  t = _mm512_mask_max_ps(lo, all, lo, t);
  t = _mm512_mask_min_ps(hi, all, hi, t);
  const __m512 k = _mm512_mask_roundscale_ps(t, all, _mm512_mul_ps(t, _mm512_set1_ps(kLog2e)),
                                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(kLn2Hi), t);
  r = _mm512_fnmadd_ps(k, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = _mm512_set1_ps(kP0);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP1));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP4));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP5));
  __m512 e = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, one));
  e = _mm512_mask_scalef_ps(e, all, e, k);  // 2^k without exponent bits: overflows to inf
  return _mm512_div_ps(x, _mm512_add_ps(one, e));
}

__attribute__((target("avx512f"))) void silu_avx512(float* data, size_t count) {
  size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    _mm512_storeu_ps(data + i, silu16(_mm512_loadu_ps(data + i)));
  }
  if (i < count) {
    const __mmask16 m = static_cast<__mmask16>((1u << (count - i)) - 1u);
    _mm512_mask_storeu_ps(data + i, m, silu16(_mm512_maskz_loadu_ps(m, data + i)));
  }
}

__attribute__((target("avx2,fma"))) inline __m256 silu8(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 t0 = _mm256_sub_ps(_mm256_setzero_ps(), x);
  const __m256 t =
      _mm256_min_ps(_mm256_set1_ps(kOverflow), _mm256_max_ps(_mm256_set1_ps(kTMin), t0));
  const __m256 k = _mm256_round_ps(_mm256_mul_ps(t, _mm256_set1_ps(kLog2e)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(kLn2Hi), t);
  r = _mm256_fnmadd_ps(k, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kP0);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP1));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP5));
  __m256 e = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, one));
  // k is in [-29, 128] here: 2^k as 2 * 2^(k-1), whose biased exponent fits in 8 bits.
  const __m256i bits =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(126)), 23);
  e = _mm256_mul_ps(_mm256_add_ps(e, e), _mm256_castsi256_ps(bits));
  // Above the clamp exp(-x) is +inf (a NaN compares false and stays NaN).
  e = _mm256_blendv_ps(e, _mm256_set1_ps(INFINITY),
                       _mm256_cmp_ps(t0, _mm256_set1_ps(kOverflow), _CMP_GT_OQ));
  return _mm256_div_ps(x, _mm256_add_ps(one, e));
}

__attribute__((target("avx2,fma"))) void silu_avx2(float* data, size_t count) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8) _mm256_storeu_ps(data + i, silu8(_mm256_loadu_ps(data + i)));
  silu_scalar(data + i, count - i);
}

using Kernel = void (*)(float*, size_t);

Kernel kernel_for(SiluIsa isa) {
  switch (isa) {
    case SiluIsa::Avx512:
      return silu_avx512;
    case SiluIsa::Avx2:
      return silu_avx2;
    case SiluIsa::Scalar:
      break;
  }
  return silu_scalar;
}

}  // namespace

const char* silu_isa_name(SiluIsa isa) {
  switch (isa) {
    case SiluIsa::Avx512:
      return "avx512";
    case SiluIsa::Avx2:
      return "avx2";
    case SiluIsa::Scalar:
      break;
  }
  return "scalar";
}

SiluIsa silu_isa_for(dnnl_cpu_isa_t isa) {
  if (isa_includes(isa, dnnl_cpu_isa_avx512_core)) return SiluIsa::Avx512;
  if (isa_includes(isa, dnnl_cpu_isa_avx2)) return SiluIsa::Avx2;
  return SiluIsa::Scalar;
}

SiluIsa silu_isa_for_onednn() {
  return silu_isa_for(dnnl_get_effective_cpu_isa());
}

void silu_in_place(float* data, size_t count, SiluIsa isa, int threads) {
  const Kernel kernel = kernel_for(isa);
  const size_t team = std::min(static_cast<size_t>(std::max(threads, 1)), count / kMinPerThread);
  if (team <= 1) {
    kernel(data, count);
    return;
  }
#pragma omp parallel num_threads(static_cast <int>(team))
  {
    const size_t n = static_cast<size_t>(omp_get_num_threads());
    const size_t me = static_cast<size_t>(omp_get_thread_num());
    const size_t per = (count / n + 15) / 16 * 16;  // whole vectors to every thread but the last
    const size_t begin = std::min(count, me * per);
    const size_t end = me + 1 == n ? count : std::min(count, begin + per);
    if (begin < end) kernel(data + begin, end - begin);
  }
}

}  // namespace tessera::onednn
