// MemoryManager: the memory a Method may use. Borrowed pointers: each allocator must outlive
// every Method loaded with this manager.
#pragma once

#include "tessera/core/memory_allocator.h"

namespace tessera {

class MemoryManager {
 public:
  /// @param method_allocator  load-time structures (values, kernels, delegate bookkeeping).
  /// @param planned_memory    the activation arena; must hold the program's planned arena size.
  ///                          nullptr lets the method take it from method_allocator.
  /// @param temp_allocator    scratch for kernels and delegates; may be nullptr.
  explicit MemoryManager(MemoryAllocator* method_allocator, MemoryAllocator* planned_memory = nullptr,
                         MemoryAllocator* temp_allocator = nullptr)
      : method_allocator_(method_allocator),
        planned_memory_(planned_memory),
        temp_allocator_(temp_allocator) {}

  MemoryAllocator* method_allocator() const { return method_allocator_; }
  MemoryAllocator* planned_memory() const { return planned_memory_; }
  MemoryAllocator* temp_allocator() const { return temp_allocator_; }

 private:
  MemoryAllocator* method_allocator_;
  MemoryAllocator* planned_memory_;
  MemoryAllocator* temp_allocator_;
};

}  // namespace tessera
