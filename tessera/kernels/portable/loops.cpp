#include "tessera/kernels/portable/loops.h"

namespace tessera::portable {

bool broadcast_shapes(Span<const int64_t> a, Span<const int64_t> b, Shape* out) {
  size_t r = a.size() > b.size() ? a.size() : b.size();
  if (r > static_cast<size_t>(kMaxDims)) return false;
  out->rank = static_cast<int>(r);
  for (size_t i = 0; i < r; ++i) {
    // Right-aligned: dim i of the result pairs with dim i - (r - size) of each operand.
    int64_t da = i + a.size() >= r ? a[i + a.size() - r] : 1;
    int64_t db = i + b.size() >= r ? b[i + b.size() - r] : 1;
    if (da != db && da != 1 && db != 1) return false;
    out->d[i] = da == 1 ? db : da;
  }
  return true;
}

void broadcast_strides(Span<const int64_t> shape, const Shape& out, int64_t* strides) {
  int lead = out.rank - static_cast<int>(shape.size());
  int64_t s = 1;
  for (int d = out.rank - 1; d >= 0; --d) {
    if (d < lead) {
      strides[d] = 0;
      continue;
    }
    int64_t size = shape[d - lead];
    strides[d] = size == 1 ? 0 : s;
    s *= size;
  }
}

template <typename T>
static void copy_row_typed(T* dst, const T* src, int64_t stride, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i * stride];
}

void copy_strided_row(void* dst, const void* src, int64_t stride, int64_t n, size_t esize) {
  if (stride == 1) {
    std::memcpy(dst, src, static_cast<size_t>(n) * esize);
    return;
  }
  switch (esize) {
    case 1:
      copy_row_typed(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), stride, n);
      break;
    case 2:
      copy_row_typed(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), stride, n);
      break;
    case 4:
      copy_row_typed(static_cast<uint32_t*>(dst), static_cast<const uint32_t*>(src), stride, n);
      break;
    default:
      copy_row_typed(static_cast<uint64_t*>(dst), static_cast<const uint64_t*>(src), stride, n);
      break;
  }
}

void strided_copy(const StridedLoop<1>& loop, void* dst, const void* src, size_t esize) {
  auto* d = static_cast<uint8_t*>(dst);
  auto* s = static_cast<const uint8_t*>(src);
  const int64_t stride = loop.strides[0][loop.rank - 1];
  for_each_row(loop, [&](const int64_t* off, int64_t out_off, int64_t n) {
    copy_strided_row(d + out_off * static_cast<int64_t>(esize),
                     s + off[0] * static_cast<int64_t>(esize), stride, n, esize);
  });
}

}  // namespace tessera::portable
