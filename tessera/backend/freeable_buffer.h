// FreeableBuffer: a read-only byte buffer that may release its memory early (e.g. a delegate
// payload the backend no longer needs after init). Move-only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tessera/core/span.h"

namespace tessera {

class FreeableBuffer {
 public:
  /// Called once with the context, data and size given at construction.
  using FreeFn = void (*)(void* context, const void* data, size_t size);

  FreeableBuffer() = default;
  /// `data` stays valid until free() (or destruction); `free_fn` may be null for memory the
  /// buffer does not own.
  FreeableBuffer(const void* data, size_t size, FreeFn free_fn = nullptr, void* context = nullptr)
      : data_(data), size_(size), free_fn_(free_fn), context_(context) {}

  FreeableBuffer(FreeableBuffer&& other) noexcept
      : data_(other.data_), size_(other.size_), free_fn_(other.free_fn_), context_(other.context_) {
    other.release_without_free();
  }
  FreeableBuffer& operator=(FreeableBuffer&& other) noexcept {
    if (this != &other) {
      free();
      data_ = other.data_;
      size_ = other.size_;
      free_fn_ = other.free_fn_;
      context_ = other.context_;
      other.release_without_free();
    }
    return *this;
  }
  FreeableBuffer(const FreeableBuffer&) = delete;
  FreeableBuffer& operator=(const FreeableBuffer&) = delete;
  ~FreeableBuffer() { free(); }

  /// Releases the memory now; afterwards data() is null and size() is 0. Idempotent.
  void free() {
    if (data_ != nullptr && free_fn_ != nullptr) free_fn_(context_, data_, size_);
    release_without_free();
  }

  const void* data() const { return data_; }
  size_t size() const { return size_; }
  Span<const uint8_t> bytes() const { return {static_cast<const uint8_t*>(data_), size_}; }

 private:
  void release_without_free() {
    data_ = nullptr;
    size_ = 0;
    free_fn_ = nullptr;
    context_ = nullptr;
  }

  const void* data_ = nullptr;
  size_t size_ = 0;
  FreeFn free_fn_ = nullptr;
  void* context_ = nullptr;
};

}  // namespace tessera
