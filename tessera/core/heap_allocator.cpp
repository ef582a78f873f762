#include "tessera/core/heap_allocator.h"

#include <cstdint>
#include <utility>

namespace tessera {

HeapMemoryAllocator::HeapMemoryAllocator(size_t chunk_size, size_t limit)
    : MemoryAllocator(nullptr, 0), chunk_size_(chunk_size), limit_(limit) {}

HeapMemoryAllocator::~HeapMemoryAllocator() { reset(); }

void HeapMemoryAllocator::reset() {
  chunks_.clear();
  last_used_ = 0;
  heap_bytes_ = 0;
}

void* HeapMemoryAllocator::allocate(size_t size, size_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) return nullptr;
  auto try_last = [&]() -> void* {
    const LargeBuffer& c = chunks_.back();
    const uintptr_t start = reinterpret_cast<uintptr_t>(c.data()) + last_used_;
    const uintptr_t aligned = (start + alignment - 1) & ~(static_cast<uintptr_t>(alignment) - 1);
    const size_t need = aligned - start;
    if (need > c.size() - last_used_ || size > c.size() - last_used_ - need) return nullptr;
    last_used_ += need + size;
    return reinterpret_cast<void*>(aligned);
  };
  if (!chunks_.empty()) {
    if (void* p = try_last()) return p;
  }
  if (size > SIZE_MAX / 2) return nullptr;
  size_t want = size + alignment;
  if (want < chunk_size_) want = chunk_size_;
  if (want > limit_ - heap_bytes_ || heap_bytes_ > limit_) return nullptr;
  LargeBuffer c = LargeBuffer::allocate(want, 64);
  if (c.data() == nullptr) return nullptr;
  try {
    chunks_.push_back(std::move(c));
  } catch (...) {
    return nullptr;  // c frees the chunk
  }
  last_used_ = 0;
  heap_bytes_ += want;
  return try_last();
}

}  // namespace tessera
