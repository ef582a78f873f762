#include <gtest/gtest.h>

#include "tessera/ir/memory_plan.h"

namespace tessera::ir {
namespace {

bool overlap(const PlanItem& a, int64_t oa, const PlanItem& b, int64_t ob) {
  bool live = a.first <= b.last && b.first <= a.last;
  bool mem = oa < ob + static_cast<int64_t>(b.size) && ob < oa + static_cast<int64_t>(a.size);
  return live && mem;
}

TEST(MemoryPlan, ReusesDeadBuffersAndNeverOverlapsLiveOnes) {
  // A chain a -> b -> c -> d: only neighbours are live together.
  std::vector<PlanItem> items = {{1000, 0, 1}, {2000, 1, 2}, {1000, 2, 3}, {500, 3, 4}};
  MemoryPlan p = plan_memory(items);
  for (size_t i = 0; i < items.size(); ++i) {
    EXPECT_EQ(p.offsets[i] % 64, 0);
    for (size_t j = i + 1; j < items.size(); ++j) {
      EXPECT_FALSE(overlap(items[i], p.offsets[i], items[j], p.offsets[j])) << i << " " << j;
    }
  }
  EXPECT_LT(p.arena_size, p.total_size);
  EXPECT_LE(p.arena_size, 3072u + 64);
}

TEST(MemoryPlan, AllLiveNeedsTheSum) {
  std::vector<PlanItem> items = {{64, 0, 5}, {128, 0, 5}, {64, 0, 5}};
  MemoryPlan p = plan_memory(items);
  EXPECT_EQ(p.arena_size, 256u);
  EXPECT_EQ(p.total_size, 256u);
}

}  // namespace
}  // namespace tessera::ir
