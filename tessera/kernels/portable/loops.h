// Strided N-D loops over a contiguous output: broadcasting, coalescing and row iteration.
// Internal to the portable kernels. Plans are built at prepare; for_each_row runs at execute
// and never allocates.
#pragma once

#include <cstdint>
#include <cstring>

#include "tessera/core/tensor.h"
#include "tessera/kernels/portable/op_context.h"

namespace tessera::portable {

/// A loop over a contiguous output of `sizes`, reading N operands through element strides
/// (0 = broadcast). `offset` is each operand's starting element.
template <int N>
struct StridedLoop {
  int rank = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[N][kMaxDims] = {};
  int64_t offset[N] = {};
  bool empty = false;  // some size is 0: nothing to do
};

/// Multidirectional (numpy) broadcast of `a` and `b` into `out`; false if incompatible.
bool broadcast_shapes(Span<const int64_t> a, Span<const int64_t> b, Shape* out);

/// Element strides that read an operand of `shape` broadcast to `out` (right-aligned). The
/// operand must be broadcastable to `out`.
void broadcast_strides(Span<const int64_t> shape, const Shape& out, int64_t* strides);

/// Drops size-1 dims and merges dims that are contiguous for every operand. Rank becomes >= 1.
template <int N>
void coalesce(StridedLoop<N>& loop) {
  int r = 0;
  int64_t sizes[kMaxDims];
  int64_t strides[N][kMaxDims];
  loop.empty = false;
  for (int d = 0; d < loop.rank; ++d) {
    if (loop.sizes[d] == 0) loop.empty = true;
    if (loop.sizes[d] == 1) continue;
    bool merge = r > 0;
    for (int k = 0; merge && k < N; ++k) {
      merge = strides[k][r - 1] == loop.strides[k][d] * loop.sizes[d];
    }
    if (merge) {
      sizes[r - 1] *= loop.sizes[d];
      for (int k = 0; k < N; ++k) strides[k][r - 1] = loop.strides[k][d];
    } else {
      sizes[r] = loop.sizes[d];
      for (int k = 0; k < N; ++k) strides[k][r] = loop.strides[k][d];
      ++r;
    }
  }
  if (r == 0) {
    sizes[0] = 1;
    for (int k = 0; k < N; ++k) strides[k][0] = 0;
    r = 1;
  }
  loop.rank = r;
  for (int d = 0; d < r; ++d) {
    loop.sizes[d] = sizes[d];
    for (int k = 0; k < N; ++k) loop.strides[k][d] = strides[k][d];
  }
}

/// Calls fn(const int64_t* offsets, int64_t out_offset, int64_t count) once per innermost row;
/// offsets[k] is operand k's element offset of the row start, the row's element i is at
/// offsets[k] + i * loop.strides[k][rank - 1]. Rows are visited in output order.
template <int N, typename Fn>
void for_each_row(const StridedLoop<N>& loop, Fn&& fn) {
  if (loop.empty) return;
  const int r = loop.rank;
  const int64_t n = loop.sizes[r - 1];
  int64_t rows = 1;
  for (int d = 0; d < r - 1; ++d) rows *= loop.sizes[d];
  int64_t idx[kMaxDims] = {};
  int64_t off[N];
  for (int k = 0; k < N; ++k) off[k] = loop.offset[k];
  int64_t out_off = 0;
  for (int64_t row = 0; row < rows; ++row, out_off += n) {
    fn(static_cast<const int64_t*>(off), out_off, n);
    for (int d = r - 2; d >= 0; --d) {
      if (++idx[d] < loop.sizes[d]) {
        for (int k = 0; k < N; ++k) off[k] += loop.strides[k][d];
        break;
      }
      idx[d] = 0;
      for (int k = 0; k < N; ++k) off[k] -= loop.strides[k][d] * (loop.sizes[d] - 1);
    }
  }
}

/// Copies `n` elements of `esize` bytes from src (element stride `stride`) to contiguous dst.
void copy_strided_row(void* dst, const void* src, int64_t stride, int64_t n, size_t esize);

/// Runs a 1-operand loop as a gather copy into contiguous `dst`.
void strided_copy(const StridedLoop<1>& loop, void* dst, const void* src, size_t esize);

}  // namespace tessera::portable
