#include "tessera/ir/memory_plan.h"

#include <algorithm>
#include <numeric>

namespace tessera::ir {

MemoryPlan plan_memory(const std::vector<PlanItem>& items, size_t alignment) {
  MemoryPlan plan;
  plan.offsets.assign(items.size(), 0);
  auto aligned = [&](size_t n) { return (n + alignment - 1) / alignment * alignment; };
  std::vector<size_t> order(items.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return items[a].size > items[b].size; });

  struct Placed {
    size_t offset, size;
    int first, last;
  };
  std::vector<Placed> placed;
  placed.reserve(items.size());
  for (size_t idx : order) {
    const PlanItem& it = items[idx];
    size_t size = aligned(std::max<size_t>(it.size, 1));
    plan.total_size += size;
    // Collect the memory ranges of live-overlapping items, sorted by offset; take the first gap.
    std::vector<std::pair<size_t, size_t>> busy;
    for (const Placed& p : placed) {
      if (p.first <= it.last && it.first <= p.last) busy.emplace_back(p.offset, p.offset + p.size);
    }
    std::sort(busy.begin(), busy.end());
    size_t offset = 0;
    for (const auto& [lo, hi] : busy) {
      if (offset + size <= lo) break;
      offset = std::max(offset, hi);
    }
    placed.push_back({offset, size, it.first, it.last});
    plan.offsets[idx] = static_cast<int64_t>(offset);
    plan.arena_size = std::max(plan.arena_size, offset + size);
  }
  return plan;
}

}  // namespace tessera::ir
