#include "tessera/core/tensor.h"

#include <cassert>
#include <cstdio>

namespace tessera {

Tensor::Tensor(ScalarType dtype, Span<const int64_t> sizes, void* data) : dtype_(dtype), data_(data) {
  assert(sizes.size() <= static_cast<size_t>(kMaxDims));
  dim_ = static_cast<int32_t>(sizes.size() <= kMaxDims ? sizes.size() : kMaxDims);
  for (int i = 0; i < dim_; ++i) sizes_[i] = sizes[i];
}

bool Tensor::is_default_dim_order() const {
  for (int i = 0; i < dim_; ++i) {
    if (dim_order_[i] != i) return false;
  }
  return true;
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int i = 0; i < dim_; ++i) n *= sizes_[i];
  return n;
}

Status Tensor::set_sizes(Span<const int64_t> sizes) {
  if (sizes.size() > static_cast<size_t>(kMaxDims)) {
    return Status::error(Error::InvalidArgument, "tensor rank %zu exceeds the maximum of %d",
                         sizes.size(), kMaxDims);
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0) {
      return Status::error(Error::InvalidArgument, "negative size %lld at dim %zu",
                           static_cast<long long>(sizes[i]), i);
    }
  }
  dim_ = static_cast<int32_t>(sizes.size());
  for (int i = 0; i < dim_; ++i) sizes_[i] = sizes[i];
  for (int i = 0; i < kMaxDims; ++i) dim_order_[i] = static_cast<uint8_t>(i);
  return Status::ok();
}

Status Tensor::set_dim_order(Span<const uint8_t> order) {
  if (order.size() != static_cast<size_t>(dim_)) {
    return Status::error(Error::InvalidArgument, "dim order has %zu entries for a rank-%d tensor",
                         order.size(), dim_);
  }
  bool seen[kMaxDims] = {};
  for (uint8_t d : order) {
    if (d >= dim_ || seen[d]) {
      return Status::error(Error::InvalidArgument, "dim order is not a permutation of 0..%d",
                           dim_ - 1);
    }
    seen[d] = true;
  }
  for (int i = 0; i < dim_; ++i) dim_order_[i] = order[i];
  return Status::ok();
}

void Tensor::contiguous_strides(int64_t* strides_out) const {
  int64_t s = 1;
  for (int i = dim_ - 1; i >= 0; --i) {
    strides_out[i] = s;
    s *= sizes_[i];
  }
}

const char* format_sizes(Span<const int64_t> sizes, char* buf, size_t buf_size) {
  if (buf_size == 0) return buf;
  size_t pos = 0;
  auto put = [&](const char* fmt, long long v) {
    if (pos < buf_size) {
      int n = std::snprintf(buf + pos, buf_size - pos, fmt, v);
      if (n > 0) pos += static_cast<size_t>(n);
    }
  };
  put("[", 0);
  for (size_t i = 0; i < sizes.size(); ++i) put(i == 0 ? "%lld" : ", %lld", static_cast<long long>(sizes[i]));
  put("]", 0);
  buf[buf_size - 1] = '\0';
  return buf;
}

}  // namespace tessera
