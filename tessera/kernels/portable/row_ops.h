// Vectorisable float32 row reductions shared by the normalisation, pooling and reduce kernels.
// Internal. Eight independent partial sums let the compiler use vector registers without
// -ffast-math, and make the float32 sum more accurate than one running total.
#pragma once

#include <cmath>
#include <cstdint>

namespace tessera::portable {

inline float row_sum(const float* x, int64_t n) {
  float acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int l = 0; l < 8; ++l) acc[l] += x[i + l];
  }
  float tail = 0.0f;
  for (; i < n; ++i) tail += x[i];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail;
}

/// Sum of (x[i] - mean)^2.
inline float row_sq_dev(const float* x, int64_t n, float mean) {
  float acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int l = 0; l < 8; ++l) {
      const float d = x[i + l] - mean;
      acc[l] += d * d;
    }
  }
  float tail = 0.0f;
  for (; i < n; ++i) tail += (x[i] - mean) * (x[i] - mean);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail;
}

/// Maximum, NaN-propagating; -inf for n == 0.
inline float row_max(const float* x, int64_t n) {
  float m = -INFINITY;
  bool nan = false;
  for (int64_t i = 0; i < n; ++i) {
    nan |= x[i] != x[i];
    m = x[i] > m ? x[i] : m;
  }
  return nan ? NAN : m;
}

}  // namespace tessera::portable
