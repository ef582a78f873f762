// Tensor layouts inside an XNNPACK delegate, and the copies that convert between them.
//
// The portable IR is NCHW (row-major, logical dim order). XNNPACK's spatial operators want NHWC.
// A delegate keeps each 4-D value in the layout its producer gives it and converts only at the
// delegate boundary, or where an operator needs another layout whose memory order differs.
#pragma once

#include <cstddef>
#include <cstdint>

#include <pthreadpool.h>

#include "tessera/backend/dims.h"
#include "tessera/core/tensor.h"

namespace tessera::xnnpack {

/// XNNPACK's XNN_MAX_TENSOR_DIMS for this version (checked in layout.cpp).
inline constexpr int kMaxXnnDims = 6;

enum class Layout : uint8_t {
  Identity,      // the logical order (NCHW for 4-D)
  ChannelsLast,  // 4-D only: stored as N, H, W, C
};

const char* layout_name(Layout layout);

/// `logical` with leading 1s added up to `rank` (numpy broadcasting alignment).
Dims expand_rank(const Dims& logical, int rank);

/// The physical dims of a tensor whose logical dims are `logical`, expanded to `rank`, stored in
/// `layout`. ChannelsLast requires rank 4.
Dims physical_dims(const Dims& logical, int rank, Layout layout);

/// True when a tensor with logical dims `logical` has its bytes in the same order when stored
/// as (rank_a, a) and as (rank_b, b): its axes of size > 1 come in the same sequence. Converting
/// between the two is then a plain view (a reshape).
bool same_memory_order(const Dims& logical, int rank_a, Layout a, int rank_b, Layout b);

/// NCHW -> NHWC over [n, c, s] (s = H * W): out[n][s][c] = in[n][c][s]. `pool` may be null; it
/// is used for large tensors, with `pool_flags` (PTHREADPOOL_FLAG_*).
void nchw_to_nhwc(const float* in, float* out, int64_t n, int64_t c, int64_t s, pthreadpool_t pool,
                  uint32_t pool_flags = 0);
/// NHWC -> NCHW over [n, s, c]: out[n][c][s] = in[n][s][c].
void nhwc_to_nchw(const float* in, float* out, int64_t n, int64_t c, int64_t s, pthreadpool_t pool,
                  uint32_t pool_flags = 0);

/// General permutation for load-time weight reordering: out has dims in[perm[0]], in[perm[1]],
/// ...; element size 4 bytes. Slow and simple; never on the execute path.
void permute(const float* in, const Dims& in_dims, const int* perm, float* out);

}  // namespace tessera::xnnpack
