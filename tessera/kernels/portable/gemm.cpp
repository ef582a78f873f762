#include "tessera/kernels/portable/gemm.h"

namespace tessera::portable {
namespace {

// Register block: kMr rows of C by kNr columns, held in local accumulators the compiler keeps in
// vector registers (the j loop vectorises; no intrinsics).
constexpr int kMr = 4;
constexpr int kNr = 8;

struct Epilogue {
  bool first;             // first k panel: start from the init value
  bool accumulate;        // init = C
  const float* row_bias;  // init = row_bias[row] (already offset to the block's first row)
  float alpha;
  bool clamp;             // last k panel and a clamp was asked for
  float lo, hi;
};

inline float clampf(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

template <int MR, int NR>
inline void store(const float (&acc)[MR][NR], int mr, int nr, float* c, int64_t ldc,
                  const Epilogue& e) {
  for (int r = 0; r < mr; ++r) {
    float* cr = c + r * ldc;
    float init = 0.0f;
    if (e.first && !e.accumulate && e.row_bias != nullptr) init = e.row_bias[r];
    const bool from_c = !e.first || e.accumulate;
    for (int j = 0; j < nr; ++j) {
      float v = (from_c ? cr[j] : init) + e.alpha * acc[r][j];
      if (e.clamp) v = clampf(v, e.lo, e.hi);
      cr[j] = v;
    }
  }
}

// Full kMr x kNr block.
inline void micro_full(int64_t kc, const float* a, int64_t a_rs, int64_t a_cs, const float* b,
                       int64_t ldb, float* c, int64_t ldc, const Epilogue& e) {
  float acc[kMr][kNr] = {};
  for (int64_t p = 0; p < kc; ++p) {
    const float* bp = b + p * ldb;
    const float* ap = a + p * a_cs;
    for (int r = 0; r < kMr; ++r) {
      const float av = ap[r * a_rs];
      for (int j = 0; j < kNr; ++j) acc[r][j] += av * bp[j];
    }
  }
  store(acc, kMr, kNr, c, ldc, e);
}

// Fewer than kMr rows, full kNr columns.
inline void micro_rows(int mr, int64_t kc, const float* a, int64_t a_rs, int64_t a_cs,
                       const float* b, int64_t ldb, float* c, int64_t ldc, const Epilogue& e) {
  float acc[kMr][kNr] = {};
  for (int64_t p = 0; p < kc; ++p) {
    const float* bp = b + p * ldb;
    const float* ap = a + p * a_cs;
    for (int r = 0; r < mr; ++r) {
      const float av = ap[r * a_rs];
      for (int j = 0; j < kNr; ++j) acc[r][j] += av * bp[j];
    }
  }
  store(acc, mr, kNr, c, ldc, e);
}

// Any block up to kMr x kNr.
inline void micro_edge(int mr, int nr, int64_t kc, const float* a, int64_t a_rs, int64_t a_cs,
                       const float* b, int64_t ldb, float* c, int64_t ldc, const Epilogue& e) {
  float acc[kMr][kNr] = {};
  for (int64_t p = 0; p < kc; ++p) {
    const float* bp = b + p * ldb;
    const float* ap = a + p * a_cs;
    for (int r = 0; r < mr; ++r) {
      const float av = ap[r * a_rs];
      for (int j = 0; j < nr; ++j) acc[r][j] += av * bp[j];
    }
  }
  store(acc, mr, nr, c, ldc, e);
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
        if (mr == kMr) {
          for (; jr + kNr <= nc; jr += kNr) {
            micro_full(kc, a, a_rs, a_cs, b + jr, ldb, crow + jr, args.ldc, e);
          }
        } else {
          for (; jr + kNr <= nc; jr += kNr) {
            micro_rows(mr, kc, a, a_rs, a_cs, b + jr, ldb, crow + jr, args.ldc, e);
          }
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
