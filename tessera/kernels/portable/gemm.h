// A cache-blocked float32 GEMM shared by Conv, ConvTranspose, Gemm and MatMul. Internal.
//
//   C[i, j] = init[i, j] + alpha * sum_k A[i, k] * B[k, j]      (then clamped if asked)
//   init = C (accumulate), else row_bias[i] (when given), else 0.
//
// A is read through strides. B is used in place when its rows are contiguous, otherwise packed
// panel by panel into caller-provided scratch (gemm_scratch_floats), either by a strided copy or
// by `pack_b` (Conv's implicit im2col). Accumulation is in float32.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera::portable {

/// Element (r, c) is data[r * row_stride + c * col_stride].
struct MatrixView {
  const float* data = nullptr;
  int64_t row_stride = 0;
  int64_t col_stride = 1;
};

/// Writes B[k0 .. k0+kc, j0 .. j0+nc] row-major into dst (leading dimension nc).
using PackFn = void (*)(const void* ctx, int64_t k0, int64_t kc, int64_t j0, int64_t nc,
                        float* dst);

struct GemmArgs {
  int64_t m = 0, n = 0, k = 0;
  MatrixView a;                    // m x k
  MatrixView b;                    // k x n; ignored when pack_b is set
  PackFn pack_b = nullptr;
  const void* pack_ctx = nullptr;
  float* c = nullptr;              // m x n, row-major
  int64_t ldc = 0;
  float alpha = 1.0f;
  bool accumulate = false;
  const float* row_bias = nullptr;  // m entries, used when !accumulate
  bool clamp = false;
  float clamp_min = 0.0f;
  float clamp_max = 0.0f;
};

inline constexpr int64_t kGemmKc = 256;  // depth of one packed panel
inline constexpr int64_t kGemmNc = 256;  // columns of one packed panel

/// True if gemm() needs scratch for B (B not row-contiguous, or pack_b set).
inline bool gemm_needs_pack(const GemmArgs& args) {
  return args.pack_b != nullptr || args.b.col_stride != 1;
}

/// Floats of scratch gemm() needs for a k x n B that is packed.
inline size_t gemm_scratch_floats(int64_t k, int64_t n) {
  int64_t kc = k < kGemmKc ? k : kGemmKc;
  int64_t nc = n < kGemmNc ? n : kGemmNc;
  return static_cast<size_t>(kc * nc);
}

/// Runs the GEMM. `scratch` holds gemm_scratch_floats(k, n) floats when gemm_needs_pack(args).
void gemm(const GemmArgs& args, float* scratch);

/// Clamps n floats in place to [lo, hi].
void clamp_inplace(float* x, int64_t n, float lo, float hi);

}  // namespace tessera::portable
