#include "tessera/kernels/portable/gemm.h"

#include <cstring>

namespace tessera::portable {
namespace {

// Register block: kMr rows of C by kNr columns held in vector accumulators. The vectors are
// GCC/Clang vector extensions, lowered to SSE2/NEON/scalar for whatever target is compiled for
// (no intrinsics, no -march needed); the plain-array form of the same loop is not kept in
// registers by GCC and runs ~5x slower.
typedef float Vec4 __attribute__((vector_size(16)));
constexpr int kLanes = 4;
constexpr int kMr = 6;
constexpr int kNv = 2;              // vectors per row
constexpr int kNr = kNv * kLanes;   // 8 columns

inline Vec4 load4(const float* p) {
  Vec4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

struct Epilogue {
  bool first;             // first k panel: start from the init value
  bool accumulate;        // init = C
  const float* row_bias;  // init = row_bias[row] (already offset to the block's first row)
  float alpha;
  bool clamp;             // last k panel and a clamp was asked for
  float lo, hi;
};

inline float clampf(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

inline void store(const float* acc, int ld, int mr, int nr, float* c, int64_t ldc,
                  const Epilogue& e) {
  for (int r = 0; r < mr; ++r) {
    float* cr = c + r * ldc;
    float init = 0.0f;
    if (e.first && !e.accumulate && e.row_bias != nullptr) init = e.row_bias[r];
    const bool from_c = !e.first || e.accumulate;
    for (int j = 0; j < nr; ++j) {
      float v = (from_c ? cr[j] : init) + e.alpha * acc[r * ld + j];
      if (e.clamp) v = clampf(v, e.lo, e.hi);
      cr[j] = v;
    }
  }
}

// MR rows x kNr columns; B rows must have kNr readable columns.
template <int MR>
void micro_vec(int64_t kc, const float* a, int64_t a_rs, int64_t a_cs, const float* b,
               int64_t ldb, float* c, int64_t ldc, const Epilogue& e) {
  Vec4 acc[MR][kNv] = {};
  for (int64_t p = 0; p < kc; ++p) {
    const float* bp = b + p * ldb;
    Vec4 bv[kNv];
    for (int v = 0; v < kNv; ++v) bv[v] = load4(bp + v * kLanes);
    const float* ap = a + p * a_cs;
    for (int r = 0; r < MR; ++r) {
      const float av = ap[r * a_rs];
      for (int v = 0; v < kNv; ++v) acc[r][v] += av * bv[v];
    }
  }
  float out[MR * kNr];
  std::memcpy(out, acc, sizeof out);
  store(out, kNr, MR, kNr, c, ldc, e);
}

void micro_rows(int mr, int64_t kc, const float* a, int64_t a_rs, int64_t a_cs, const float* b,
                int64_t ldb, float* c, int64_t ldc, const Epilogue& e) {
  switch (mr) {
    case 1: return micro_vec<1>(kc, a, a_rs, a_cs, b, ldb, c, ldc, e);
    case 2: return micro_vec<2>(kc, a, a_rs, a_cs, b, ldb, c, ldc, e);
    case 3: return micro_vec<3>(kc, a, a_rs, a_cs, b, ldb, c, ldc, e);
    case 4: return micro_vec<4>(kc, a, a_rs, a_cs, b, ldb, c, ldc, e);
    case 5: return micro_vec<5>(kc, a, a_rs, a_cs, b, ldb, c, ldc, e);
    default: return micro_vec<kMr>(kc, a, a_rs, a_cs, b, ldb, c, ldc, e);
  }
}

// Any block up to kMr x kNr (the last columns of C).
void micro_edge(int mr, int nr, int64_t kc, const float* a, int64_t a_rs, int64_t a_cs,
                const float* b, int64_t ldb, float* c, int64_t ldc, const Epilogue& e) {
  float acc[kMr * kNr] = {};
  for (int64_t p = 0; p < kc; ++p) {
    const float* bp = b + p * ldb;
    const float* ap = a + p * a_cs;
    for (int r = 0; r < mr; ++r) {
      const float av = ap[r * a_rs];
      for (int j = 0; j < nr; ++j) acc[r * kNr + j] += av * bp[j];
    }
  }
  store(acc, kNr, mr, nr, c, ldc, e);
}

// Dot product of two contiguous rows, with vector partial sums.
float dot(const float* x, const float* y, int64_t n) {
  Vec4 acc[4] = {};
  int64_t i = 0;
  for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
    for (int v = 0; v < 4; ++v) acc[v] += load4(x + i + v * kLanes) * load4(y + i + v * kLanes);
  }
  Vec4 sum = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  float s = (sum[0] + sum[1]) + (sum[2] + sum[3]);
  for (; i < n; ++i) s += x[i] * y[i];
  return s;
}

// Few rows of A times a B whose columns are contiguous (transposed weights, as in a batch-1
// linear layer): one dot product per output, no packing.
void gemm_dot(const GemmArgs& args) {
  for (int64_t i = 0; i < args.m; ++i) {
    const float* ai = args.a.data + i * args.a.row_stride;
    float* ci = args.c + i * args.ldc;
    const float init = args.row_bias != nullptr ? args.row_bias[i] : 0.0f;
    for (int64_t j = 0; j < args.n; ++j) {
      float v = (args.accumulate ? ci[j] : init) +
                args.alpha * dot(ai, args.b.data + j * args.b.col_stride, args.k);
      ci[j] = args.clamp ? clampf(v, args.clamp_min, args.clamp_max) : v;
    }
  }
}

void pack_strided(const MatrixView& b, int64_t k0, int64_t kc, int64_t j0, int64_t nc,
                  float* dst) {
  const float* src = b.data + k0 * b.row_stride + j0 * b.col_stride;
  if (b.row_stride == 1) {
    // Transposed B: read each column contiguously.
    for (int64_t j = 0; j < nc; ++j) {
      const float* col = src + j * b.col_stride;
      for (int64_t p = 0; p < kc; ++p) dst[p * nc + j] = col[p];
    }
    return;
  }
  for (int64_t p = 0; p < kc; ++p) {
    const float* row = src + p * b.row_stride;
    for (int64_t j = 0; j < nc; ++j) dst[p * nc + j] = row[j * b.col_stride];
  }
}

}  // namespace

void clamp_inplace(float* x, int64_t n, float lo, float hi) {
  for (int64_t i = 0; i < n; ++i) x[i] = clampf(x[i], lo, hi);
}

void gemm(const GemmArgs& args, float* scratch) {
  const int64_t m = args.m, n = args.n, k = args.k;
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    for (int64_t i = 0; i < m; ++i) {
      float* ci = args.c + i * args.ldc;
      float init = args.row_bias != nullptr ? args.row_bias[i] : 0.0f;
      for (int64_t j = 0; j < n; ++j) {
        float v = args.accumulate ? ci[j] : init;
        ci[j] = args.clamp ? clampf(v, args.clamp_min, args.clamp_max) : v;
      }
    }
    return;
  }
  if (args.pack_b == nullptr && args.b.row_stride == 1 && args.a.col_stride == 1 && m < kMr) {
    gemm_dot(args);
    return;
  }
  const bool pack = gemm_needs_pack(args);
  const int64_t a_rs = args.a.row_stride, a_cs = args.a.col_stride;
  for (int64_t jc = 0; jc < n; jc += kGemmNc) {
    const int64_t nc = n - jc < kGemmNc ? n - jc : kGemmNc;
    for (int64_t pc = 0; pc < k; pc += kGemmKc) {
      const int64_t kc = k - pc < kGemmKc ? k - pc : kGemmKc;
      const float* b;
      int64_t ldb;
      if (args.pack_b != nullptr) {
        args.pack_b(args.pack_ctx, pc, kc, jc, nc, scratch);
        b = scratch;
        ldb = nc;
      } else if (pack) {
        pack_strided(args.b, pc, kc, jc, nc, scratch);
        b = scratch;
        ldb = nc;
      } else {
        b = args.b.data + pc * args.b.row_stride + jc;
        ldb = args.b.row_stride;
      }
      const bool last = pc + kc >= k;
      for (int64_t ic = 0; ic < m; ic += kMr) {
        const int mr = static_cast<int>(m - ic < kMr ? m - ic : kMr);
        const float* a = args.a.data + ic * a_rs + pc * a_cs;
        Epilogue e{pc == 0,
                   args.accumulate,
                   args.row_bias != nullptr ? args.row_bias + ic : nullptr,
                   args.alpha,
                   args.clamp && last,
                   args.clamp_min,
                   args.clamp_max};
        float* crow = args.c + ic * args.ldc + jc;
        int64_t jr = 0;
        for (; jr + kNr <= nc; jr += kNr) {
          micro_rows(mr, kc, a, a_rs, a_cs, b + jr, ldb, crow + jr, args.ldc, e);
        }
        if (jr < nc) {
          micro_edge(mr, static_cast<int>(nc - jr), kc, a, a_rs, a_cs, b + jr, ldb, crow + jr,
                     args.ldc, e);
        }
      }
    }
  }
}

}  // namespace tessera::portable
