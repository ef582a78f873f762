#include "tessera/core/memory_allocator.h"

namespace tessera {

void* MemoryAllocator::allocate(size_t size, size_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) return nullptr;
  uintptr_t start = reinterpret_cast<uintptr_t>(base_) + used_;
  uintptr_t aligned = (start + alignment - 1) & ~(static_cast<uintptr_t>(alignment) - 1);
  size_t pad = aligned - start;
  if (pad > size_ - used_ || size > size_ - used_ - pad) return nullptr;
  used_ += pad + size;
  return reinterpret_cast<void*>(aligned);
}

}  // namespace tessera
