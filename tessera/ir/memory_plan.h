// Ahead-of-time activation memory planning: greedy by size over value lifetimes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessera::ir {

struct PlanItem {
  size_t size = 0;   // bytes at the upper bound
  int first = 0;     // first step at which the value is live (its definition)
  int last = 0;      // last step at which it is read (inclusive)
};

struct MemoryPlan {
  std::vector<int64_t> offsets;  // one per item, 64-byte aligned
  size_t arena_size = 0;
  size_t total_size = 0;         // sum of the items' (aligned) sizes: what the arena replaces
};

/// Places every item so that items with overlapping lifetimes never overlap in memory. Largest
/// first, each at the lowest offset that fits.
MemoryPlan plan_memory(const std::vector<PlanItem>& items, size_t alignment = 64);

}  // namespace tessera::ir
