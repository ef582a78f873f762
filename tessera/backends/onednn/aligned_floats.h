// The packed float32 constants of one of Tessera's own kernels in the oneDNN backend
// (narrow_conv.h, dw_pointwise.h, stem_conv.h), starting on a 64-byte boundary: the kernels load
// them as whole aligned vectors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessera::onednn {

class AlignedFloats {
 public:
  AlignedFloats() = default;
  // Move-only: a copy of the vector could start at another offset from a 64-byte boundary, and
  // its first aligned float would not be the first one packed.
  AlignedFloats(AlignedFloats&&) = default;
  AlignedFloats& operator=(AlignedFloats&&) = default;
  AlignedFloats(const AlignedFloats&) = delete;
  AlignedFloats& operator=(const AlignedFloats&) = delete;

  /// `count` zeros from data() on.
  void assign(size_t count) { storage_.assign(count + kSlack, 0.0f); }
  const float* data() const { return storage_.data() + skip(); }
  float* data() { return storage_.data() + skip(); }

 private:
  static constexpr size_t kSlack = 64 / sizeof(float);  // room to start on a 64-byte boundary
  size_t skip() const {
    const auto addr = reinterpret_cast<uintptr_t>(storage_.data());
    return (64 - addr % 64) % 64 / sizeof(float);
  }
  std::vector<float> storage_;
};

}  // namespace tessera::onednn
