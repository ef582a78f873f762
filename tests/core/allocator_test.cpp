#include <gtest/gtest.h>

#include <cstdint>

#include "tessera/core/heap_allocator.h"
#include "tessera/core/memory_allocator.h"

namespace tessera {
namespace {

TEST(MemoryAllocator, BumpsWithAlignmentAndExhausts) {
  alignas(64) uint8_t buf[256];
  MemoryAllocator a(buf, sizeof buf);
  void* p = a.allocate(10, 64);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  void* q = a.allocate(10, 64);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(static_cast<uint8_t*>(q) - static_cast<uint8_t*>(p), 64);
  EXPECT_EQ(a.allocate(200, 1), nullptr);  // does not fit
  EXPECT_NE(a.allocate(100, 1), nullptr);
  EXPECT_EQ(a.allocate(8, 3), nullptr);    // not a power of two
  a.reset();
  EXPECT_EQ(a.used(), 0u);
  EXPECT_EQ(a.allocate(SIZE_MAX, 1), nullptr);
}

TEST(MemoryAllocator, ArraysAndObjects) {
  alignas(64) uint8_t buf[128];
  MemoryAllocator a(buf, sizeof buf);
  int64_t* xs = a.allocate_array<int64_t>(4);
  ASSERT_NE(xs, nullptr);
  EXPECT_EQ(a.allocate_array<int64_t>(SIZE_MAX / 4), nullptr);  // overflow guarded
  struct P {
    int x, y;
  };
  P* p = a.make<P>(P{1, 2});
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->y, 2);
}

TEST(HeapMemoryAllocator, GrowsAndRespectsLimit) {
  HeapMemoryAllocator a(1024, 1 << 20);
  for (int i = 0; i < 100; ++i) ASSERT_NE(a.allocate(100, 16), nullptr);
  void* big = a.allocate(100000, 64);
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big) % 64, 0u);
  EXPECT_EQ(a.allocate(2 << 20, 64), nullptr);
  EXPECT_LE(a.heap_bytes(), size_t{1} << 20);
}

}  // namespace
}  // namespace tessera
