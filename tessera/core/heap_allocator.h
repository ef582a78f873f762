// HeapMemoryAllocator: a MemoryAllocator that grows by taking chunks from the heap (a chunk from
// large_buffer_threshold() on, such as a large activation arena, is a LargeBuffer mapped for
// huge pages). Used when a caller gives no MemoryManager; frees everything when destroyed.
#pragma once

#include <cstddef>
#include <vector>

#include "tessera/core/large_buffer.h"
#include "tessera/core/memory_allocator.h"

namespace tessera {

class HeapMemoryAllocator final : public MemoryAllocator {
 public:
  /// `limit` caps the total bytes taken from the heap (allocate returns nullptr beyond it).
  explicit HeapMemoryAllocator(size_t chunk_size = 64 * 1024, size_t limit = SIZE_MAX);
  ~HeapMemoryAllocator() override;
  HeapMemoryAllocator(const HeapMemoryAllocator&) = delete;
  HeapMemoryAllocator& operator=(const HeapMemoryAllocator&) = delete;

  void* allocate(size_t size, size_t alignment = kDefaultAlignment) override;
  void reset() override;
  size_t heap_bytes() const { return heap_bytes_; }

 private:
  std::vector<LargeBuffer> chunks_;  // allocations come from the last
  size_t last_used_ = 0;             // bytes of the last chunk handed out
  size_t chunk_size_;
  size_t limit_;
  size_t heap_bytes_ = 0;
};

}  // namespace tessera
