// Dims: a resolved tensor shape of fixed capacity (kMaxDims), the one shape type of the backend
// layer. No heap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "tessera/core/span.h"
#include "tessera/core/tensor.h"

namespace tessera {

/// A shape of at most kMaxDims dims. Entries past `rank` are 0.
struct Dims {
  int rank = 0;
  int64_t d[kMaxDims] = {};

  Dims() = default;
  /// `sizes` must have at most kMaxDims entries (asserted; clamped in release builds).
  explicit Dims(Span<const int64_t> sizes);
  /// `{n, c, h, w}`; as above.
  Dims(std::initializer_list<int64_t> sizes)
      : Dims(Span<const int64_t>(sizes.begin(), sizes.size())) {}

  /// Product of the dims (1 for rank 0).
  int64_t numel() const;
  bool operator==(const Dims& other) const;
  Span<const int64_t> span() const { return {d, static_cast<size_t>(rank)}; }
  size_t size() const { return static_cast<size_t>(rank); }
  const int64_t* begin() const { return d; }
  const int64_t* end() const { return d + rank; }
  int64_t back() const { return d[rank - 1]; }  // rank must be > 0
  int64_t operator[](size_t i) const { return d[i]; }
  int64_t& operator[](size_t i) { return d[i]; }
};

}  // namespace tessera
