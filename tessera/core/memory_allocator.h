// MemoryAllocator: a bump allocator over a caller's buffer. Never touches the heap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>

namespace tessera {

class MemoryAllocator {
 public:
  static constexpr size_t kDefaultAlignment = 64;

  /// `base` is borrowed and must outlive the allocator and everything allocated from it.
  MemoryAllocator(void* base, size_t size) : base_(static_cast<uint8_t*>(base)), size_(size) {}
  virtual ~MemoryAllocator() = default;

  /// Returns `size` bytes aligned to `alignment` (a power of two), or nullptr when exhausted.
  virtual void* allocate(size_t size, size_t alignment = kDefaultAlignment);

  /// Allocates an uninitialised array of `n` T; nullptr when exhausted.
  template <typename T>
  T* allocate_array(size_t n) {
    if (n != 0 && n > SIZE_MAX / sizeof(T)) return nullptr;
    return static_cast<T*>(allocate(n * sizeof(T), alignof(T) > 8 ? alignof(T) : 8));
  }
  /// Constructs one T in allocator memory; its destructor is never run, so T must be trivially
  /// destructible or the caller must destroy it.
  template <typename T, typename... Args>
  T* make(Args&&... args) {
    void* p = allocate(sizeof(T), alignof(T) > 8 ? alignof(T) : 8);
    return p ? new (p) T(static_cast<Args&&>(args)...) : nullptr;
  }

  /// Releases everything allocated so far.
  virtual void reset() { used_ = 0; }

  size_t used() const { return used_; }
  size_t capacity() const { return size_; }
  uint8_t* base() const { return base_; }

 private:
  uint8_t* base_;
  size_t size_;
  size_t used_ = 0;
};

}  // namespace tessera
