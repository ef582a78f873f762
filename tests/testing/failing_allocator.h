// FailingAllocator: a MemoryAllocator for fault injection. It takes its memory from the heap
// and returns nullptr on the k-th call to allocate(), counting calls over every FailingAllocator
// that shares one AllocationCounter (a Method's allocator and its arena, say).
#pragma once

#include <cstddef>

#include "tessera/core/heap_allocator.h"
#include "tessera/core/memory_allocator.h"

namespace tessera::testing {

/// Counts allocate() calls and says which one fails. `fail_at` 0: none fails.
struct AllocationCounter {
  long fail_at = 0;
  long calls = 0;
  bool failed = false;  // whether the fail_at-th call happened
};

class FailingAllocator final : public MemoryAllocator {
 public:
  /// `counter` is borrowed and must outlive the allocator.
  explicit FailingAllocator(AllocationCounter* counter)
      : MemoryAllocator(nullptr, 0), counter_(counter) {}

  void* allocate(size_t size, size_t alignment = kDefaultAlignment) override {
    if (++counter_->calls == counter_->fail_at) {
      counter_->failed = true;
      return nullptr;
    }
    return heap_.allocate(size, alignment);
  }
  void reset() override { heap_.reset(); }

 private:
  AllocationCounter* counter_;
  HeapMemoryAllocator heap_;
};

}  // namespace tessera::testing
