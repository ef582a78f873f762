#include "tessera/backend/dims.h"

#include <cassert>

namespace tessera {

Dims::Dims(Span<const int64_t> sizes) {
  assert(sizes.size() <= static_cast<size_t>(kMaxDims));
  rank = static_cast<int>(sizes.size() < static_cast<size_t>(kMaxDims) ? sizes.size() : kMaxDims);
  for (int i = 0; i < rank; ++i) d[i] = sizes[static_cast<size_t>(i)];
}

int64_t Dims::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= d[i];
  return n;
}

bool Dims::operator==(const Dims& other) const {
  if (rank != other.rank) return false;
  for (int i = 0; i < rank; ++i) {
    if (d[i] != other.d[i]) return false;
  }
  return true;
}

}  // namespace tessera
