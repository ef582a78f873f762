#include "tessera/backends/xnnpack/layout.h"

#include <xnnpack.h>

#include <algorithm>
#include <cassert>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace tessera::xnnpack {

static_assert(kMaxXnnDims == XNN_MAX_TENSOR_DIMS, "update kMaxXnnDims for this XNNPACK");

const char* layout_name(Layout layout) {
  return layout == Layout::ChannelsLast ? "channels-last" : "identity";
}

Dims expand_rank(const Dims& logical, int rank) {
  assert(rank >= logical.rank && rank <= kMaxDims);
  Dims out;
  out.rank = rank;
  const int lead = rank - logical.rank;
  for (int i = 0; i < rank; ++i) out.d[i] = i < lead ? 1 : logical.d[i - lead];
  return out;
}

Dims physical_dims(const Dims& logical, int rank, Layout layout) {
  Dims e = expand_rank(logical, rank);
  if (layout == Layout::Identity) return e;
  assert(rank == 4);
  Dims p;
  p.rank = 4;
  p.d[0] = e.d[0];
  p.d[1] = e.d[2];
  p.d[2] = e.d[3];
  p.d[3] = e.d[1];
  return p;
}

namespace {

// The logical axes of size > 1 of `logical` in the order they are stored at (rank, layout).
int stored_axes(const Dims& logical, int rank, Layout layout, int* axes) {
  static constexpr int kNhwc[4] = {0, 2, 3, 1};
  const int lead = rank - logical.rank;
  int n = 0;
  for (int p = 0; p < rank; ++p) {
    const int expanded = layout == Layout::ChannelsLast ? kNhwc[p] : p;
    const int axis = expanded - lead;
    if (axis >= 0 && logical.d[axis] != 1) axes[n++] = axis;
  }
  return n;
}

}  // namespace

bool same_memory_order(const Dims& logical, int rank_a, Layout a, int rank_b, Layout b) {
  int x[kMaxDims], y[kMaxDims];
  const int nx = stored_axes(logical, rank_a, a, x);
  const int ny = stored_axes(logical, rank_b, b, y);
  if (nx != ny) return false;
  for (int i = 0; i < nx; ++i) {
    if (x[i] != y[i]) return false;
  }
  return true;
}

namespace {

constexpr int64_t kBlock = 16;        // rows per tile
constexpr int64_t kColumnTile = 512;  // columns per tile
// Below this many elements a conversion runs on the calling thread.
constexpr int64_t kParallelThreshold = int64_t{1} << 16;

// out[j][i] = in[i][j] for rows [i0, i0 + kBlock) and columns [c0, c1) (clipped to the plane),
// in 4x4 SIMD tiles where the sizes allow.
void transpose_tile(const float* in, float* out, int64_t rows, int64_t cols, int64_t i0, int64_t c0,
                    int64_t c1) {
  const int64_t i1 = std::min(i0 + kBlock, rows);
  if (i1 - i0 < 4) {
    // Few rows (e.g. 3 colour channels): interleave them, one output row at a time.
    int64_t j = c0;
#if defined(__SSE2__)
    if (i1 - i0 == 3 && rows == 3) {
      // 4 columns at a time; each 4-float store also writes one float of the next output row,
      // which the next store overwrites, so stop while that row is still inside the tile.
      const float* r0 = in + 0 * cols;
      const float* r1 = in + 1 * cols;
      const float* r2 = in + 2 * cols;
      for (; j + 5 <= c1; j += 4) {
        __m128 a = _mm_loadu_ps(r0 + j), b = _mm_loadu_ps(r1 + j), c = _mm_loadu_ps(r2 + j);
        __m128 d = _mm_setzero_ps();
        _MM_TRANSPOSE4_PS(a, b, c, d);
        _mm_storeu_ps(out + (j + 0) * 3, a);
        _mm_storeu_ps(out + (j + 1) * 3, b);
        _mm_storeu_ps(out + (j + 2) * 3, c);
        _mm_storeu_ps(out + (j + 3) * 3, d);
      }
    }
#endif
    for (; j < c1; ++j) {
      for (int64_t i = i0; i < i1; ++i) out[j * rows + i] = in[i * cols + j];
    }
    return;
  }
  for (int64_t j0 = c0; j0 < c1; j0 += kBlock) {
    const int64_t j1 = std::min(j0 + kBlock, c1);
    int64_t i = i0;
#if defined(__SSE2__)
    for (; i + 4 <= i1; i += 4) {
      int64_t j = j0;
      for (; j + 4 <= j1; j += 4) {
        __m128 r0 = _mm_loadu_ps(in + (i + 0) * cols + j);
        __m128 r1 = _mm_loadu_ps(in + (i + 1) * cols + j);
        __m128 r2 = _mm_loadu_ps(in + (i + 2) * cols + j);
        __m128 r3 = _mm_loadu_ps(in + (i + 3) * cols + j);
        _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
        _mm_storeu_ps(out + (j + 0) * rows + i, r0);
        _mm_storeu_ps(out + (j + 1) * rows + i, r1);
        _mm_storeu_ps(out + (j + 2) * rows + i, r2);
        _mm_storeu_ps(out + (j + 3) * rows + i, r3);
      }
      for (; j < j1; ++j) {
        for (int64_t k = i; k < i + 4; ++k) out[j * rows + k] = in[k * cols + j];
      }
    }
#endif
    for (; i < i1; ++i) {
      const float* src = in + i * cols;
      for (int64_t j = j0; j < j1; ++j) out[j * rows + i] = src[j];
    }
  }
}

struct TransposeTask {
  const float* in;
  float* out;
  int64_t rows, cols, row_blocks;
};

// One tile: index0 = batch * row_blocks + row block, index1 = column tile.
void transpose_task(void* context, size_t index0, size_t index1) {
  const auto* t = static_cast<const TransposeTask*>(context);
  const int64_t batch = static_cast<int64_t>(index0) / t->row_blocks;
  const int64_t row_block = static_cast<int64_t>(index0) % t->row_blocks;
  const int64_t plane = t->rows * t->cols;
  const int64_t c0 = static_cast<int64_t>(index1) * kColumnTile;
  transpose_tile(t->in + batch * plane, t->out + batch * plane, t->rows, t->cols,
                 row_block * kBlock, c0, std::min(c0 + kColumnTile, t->cols));
}

void transpose(const float* in, float* out, int64_t n, int64_t rows, int64_t cols,
               pthreadpool_t pool, uint32_t pool_flags) {
  if (rows == 1 || cols == 1) {
    std::copy(in, in + n * rows * cols, out);
    return;
  }
  TransposeTask task{in, out, rows, cols, (rows + kBlock - 1) / kBlock};
  const int64_t column_tiles = (cols + kColumnTile - 1) / kColumnTile;
  if (pool != nullptr && n * rows * cols >= kParallelThreshold &&
      pthreadpool_get_threads_count(pool) > 1) {
    pthreadpool_parallelize_2d(pool, transpose_task, &task,
                               static_cast<size_t>(n * task.row_blocks),
                               static_cast<size_t>(column_tiles), pool_flags);
    return;
  }
  for (int64_t i = 0; i < n * task.row_blocks; ++i) {
    for (int64_t j = 0; j < column_tiles; ++j) {
      transpose_task(&task, static_cast<size_t>(i), static_cast<size_t>(j));
    }
  }
}

}  // namespace

void nchw_to_nhwc(const float* in, float* out, int64_t n, int64_t c, int64_t s, pthreadpool_t pool,
                  uint32_t pool_flags) {
  transpose(in, out, n, c, s, pool, pool_flags);
}

void nhwc_to_nchw(const float* in, float* out, int64_t n, int64_t c, int64_t s, pthreadpool_t pool,
                  uint32_t pool_flags) {
  transpose(in, out, n, s, c, pool, pool_flags);
}

void permute(const float* in, const Dims& in_dims, const int* perm, float* out) {
  const int rank = in_dims.rank;
  int64_t in_strides[kMaxDims];
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; --d) {
    in_strides[d] = s;
    s *= in_dims.d[d];
  }
  int64_t out_sizes[kMaxDims], strides[kMaxDims];  // strides of `in` along each output dim
  for (int d = 0; d < rank; ++d) {
    out_sizes[d] = in_dims.d[perm[d]];
    strides[d] = in_strides[perm[d]];
  }
  const int64_t total = in_dims.numel();
  int64_t index[kMaxDims] = {};
  int64_t offset = 0;
  for (int64_t k = 0; k < total; ++k) {
    out[k] = in[offset];
    for (int d = rank - 1; d >= 0; --d) {
      offset += strides[d];
      if (++index[d] < out_sizes[d]) break;
      offset -= strides[d] * out_sizes[d];
      index[d] = 0;
    }
  }
}

}  // namespace tessera::xnnpack
