// Tensor: dtype, sizes, dim order and a data pointer. Fixed capacity (kMaxDims); no heap.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tessera/core/scalar_type.h"
#include "tessera/core/span.h"
#include "tessera/core/status.h"

namespace tessera {

inline constexpr int kMaxDims = 8;

class Tensor {
 public:
  Tensor() = default;
  /// A contiguous tensor in default (row-major) dim order. `data` is borrowed: it must outlive
  /// every use of this Tensor. Sizes beyond kMaxDims are clamped in release builds (asserted).
  Tensor(ScalarType dtype, Span<const int64_t> sizes, void* data);

  ScalarType dtype() const { return dtype_; }
  int dim() const { return dim_; }
  int64_t size(int d) const { return sizes_[d]; }
  Span<const int64_t> sizes() const { return {sizes_, static_cast<size_t>(dim_)}; }
  /// Dim order: dim_order()[0] is the outermost dim in memory. Default is 0, 1, ..., dim-1.
  Span<const uint8_t> dim_order() const { return {dim_order_, static_cast<size_t>(dim_)}; }
  bool is_default_dim_order() const;
  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(dtype_); }

  void* data() const { return data_; }
  template <typename T>
  T* data_as() const {
    return static_cast<T*>(data_);
  }
  void set_data(void* data) { data_ = data; }

  /// Replaces the sizes; the caller guarantees the data buffer is large enough.
  Status set_sizes(Span<const int64_t> sizes);
  Status set_dim_order(Span<const uint8_t> order);
  void set_dtype(ScalarType t) { dtype_ = t; }

  /// Row-major strides in elements of the default dim order.
  void contiguous_strides(int64_t* strides_out) const;

 private:
  ScalarType dtype_ = ScalarType::Float32;
  int32_t dim_ = 0;
  int64_t sizes_[kMaxDims] = {};
  uint8_t dim_order_[kMaxDims] = {0, 1, 2, 3, 4, 5, 6, 7};
  void* data_ = nullptr;
};

/// "[1, 3, 224, 224]" into `buf` (always terminated). Returns buf.
const char* format_sizes(Span<const int64_t> sizes, char* buf, size_t buf_size);

}  // namespace tessera
