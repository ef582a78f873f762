#include "tessera/core/heap_allocator.h"

#include <cstdint>
#include <cstdlib>

namespace tessera {

HeapMemoryAllocator::HeapMemoryAllocator(size_t chunk_size, size_t limit)
    : MemoryAllocator(nullptr, 0), chunk_size_(chunk_size), limit_(limit) {}

HeapMemoryAllocator::~HeapMemoryAllocator() { reset(); }

void HeapMemoryAllocator::reset() {
  while (head_) {
    Chunk* next = head_->next;
    std::free(head_);
    head_ = next;
  }
  heap_bytes_ = 0;
}

void* HeapMemoryAllocator::allocate(size_t size, size_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) return nullptr;
  auto try_chunk = [&](Chunk* c) -> void* {
    uintptr_t base = reinterpret_cast<uintptr_t>(c + 1);
    uintptr_t start = base + c->used;
    uintptr_t aligned = (start + alignment - 1) & ~(static_cast<uintptr_t>(alignment) - 1);
    size_t need = (aligned - start);
    if (need > c->size - c->used || size > c->size - c->used - need) return nullptr;
    c->used += need + size;
    return reinterpret_cast<void*>(aligned);
  };
  if (head_) {
    if (void* p = try_chunk(head_)) return p;
  }
  if (size > SIZE_MAX / 2) return nullptr;
  size_t want = size + alignment;
  if (want < chunk_size_) want = chunk_size_;
  if (want > limit_ - heap_bytes_ || heap_bytes_ > limit_) return nullptr;
  Chunk* c = static_cast<Chunk*>(std::malloc(sizeof(Chunk) + want));
  if (c == nullptr) return nullptr;
  c->next = head_;
  c->size = want;
  c->used = 0;
  head_ = c;
  heap_bytes_ += want;
  return try_chunk(c);
}

}  // namespace tessera
