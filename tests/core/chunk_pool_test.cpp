// ChunkPool (tessera/core/chunk_pool.h): mid-size buffers share 2 MiB chunks mapped for huge
// pages, each in the chunk it fits best; a chunk is unmapped with its last buffer; sizes,
// alignments and foreign pointers outside its range are refused, so the caller allocates
// elsewhere; off where LargeBuffer would not map.
#include "tessera/core/chunk_pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "tessera/core/large_buffer.h"

namespace tessera {
namespace {

constexpr size_t kKiB = size_t{1} << 10;
constexpr size_t kMiB = size_t{1} << 20;

uintptr_t chunk_of(const void* p) {
  return reinterpret_cast<uintptr_t>(p) & ~(uintptr_t{ChunkPool::kChunkBytes} - 1);
}

class ChunkPoolTest : public ::testing::Test {
 protected:
  // Under AddressSanitizer large buffers are not mapped, and the pool is off, unless a test
  // lowers the threshold: the tests here run the pool in every build.
  void SetUp() override { internal::set_large_buffer_threshold(ChunkPool::kChunkBytes); }
  void TearDown() override {
    internal::set_large_buffer_threshold(0);
    internal::set_chunk_pool_min_bytes(0);
  }
};

TEST_F(ChunkPoolTest, BuffersShareAChunkUntilItIsFullAndItGoesWithTheLastOne) {
  ChunkPool pool;
  ASSERT_TRUE(ChunkPool::enabled());
  void* a = pool.allocate(1000 * kKiB, 64);
  void* b = pool.allocate(300 * kKiB, 4096);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(pool.chunks(), 1u);
  EXPECT_EQ(chunk_of(a), chunk_of(b));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % ChunkPool::kChunkBytes, 0u);  // the chunk's start
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 4096, 0u);
  EXPECT_GE(static_cast<uint8_t*>(b), static_cast<uint8_t*>(a) + 1000 * kKiB);  // no overlap
  EXPECT_EQ(pool.size_of(a), 1000 * kKiB);
  EXPECT_EQ(pool.size_of(b), 300 * kKiB);
  std::memset(a, 0x11, 1000 * kKiB);  // both usable to their last byte
  std::memset(b, 0x22, 300 * kKiB);
  EXPECT_EQ(static_cast<uint8_t*>(a)[1000 * kKiB - 1], 0x11);

  // 1 MiB no longer fits beside them (1300 of 2048 KiB used): a second chunk. 64 KiB fits both,
  // best the first (748 KiB left there, 1024 in the second).
  void* c = pool.allocate(kMiB, 64);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(pool.chunks(), 2u);
  EXPECT_NE(chunk_of(c), chunk_of(a));
  void* d = pool.allocate(64 * kKiB, 64);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(chunk_of(d), chunk_of(a));
  EXPECT_EQ(pool.chunks(), 2u);

  // Freed: each once; the first chunk goes with its last buffer, the second with its only one.
  EXPECT_TRUE(pool.free(a));
  EXPECT_FALSE(pool.free(a));
  EXPECT_EQ(pool.size_of(a), 0u);
  EXPECT_TRUE(pool.free(b));
  EXPECT_EQ(pool.chunks(), 2u);  // d is still in it
  EXPECT_TRUE(pool.free(d));
  EXPECT_EQ(pool.chunks(), 1u);
  EXPECT_TRUE(pool.free(c));
  EXPECT_EQ(pool.chunks(), 0u);
}

TEST_F(ChunkPoolTest, WhatItDoesNotTakeIsRefusedForTheCallerToAllocateElsewhere) {
  ChunkPool pool;
  EXPECT_EQ(pool.allocate(ChunkPool::kDefaultMinBytes - 1, 64), nullptr);  // small: the heap's
  EXPECT_EQ(pool.allocate(ChunkPool::kMaxBytes + 1, 64), nullptr);
  EXPECT_EQ(pool.allocate(100 * kKiB, 0), nullptr);
  EXPECT_EQ(pool.allocate(100 * kKiB, 48), nullptr);    // not a power of two
  EXPECT_EQ(pool.allocate(100 * kKiB, 8192), nullptr);  // above 4096
  EXPECT_EQ(pool.chunks(), 0u);

  int on_the_stack = 0;
  std::vector<uint8_t> heap(100 * kKiB);
  EXPECT_FALSE(pool.free(nullptr));
  EXPECT_FALSE(pool.free(&on_the_stack));
  EXPECT_FALSE(pool.free(heap.data()));
  EXPECT_EQ(pool.size_of(heap.data()), 0u);

  // A pointer inside a live buffer is not one of its buffers.
  void* a = pool.allocate(100 * kKiB, 64);
  ASSERT_NE(a, nullptr);
  EXPECT_FALSE(pool.free(static_cast<uint8_t*>(a) + 64));
  EXPECT_EQ(pool.chunks(), 1u);
  EXPECT_TRUE(pool.free(a));

  // A test may lower the smallest size it takes.
  internal::set_chunk_pool_min_bytes(1);
  void* tiny = pool.allocate(1, 16);
  ASSERT_NE(tiny, nullptr);
  EXPECT_EQ(pool.size_of(tiny), 1u);
  EXPECT_TRUE(pool.free(tiny));
}

TEST_F(ChunkPoolTest, OffWhereLargeBuffersAreNotMapped) {
  internal::set_large_buffer_threshold(4 * kMiB);  // as under AddressSanitizer: not from 2 MiB
  EXPECT_FALSE(ChunkPool::enabled());
  ChunkPool pool;
  EXPECT_EQ(pool.allocate(100 * kKiB, 64), nullptr);
  EXPECT_EQ(pool.chunks(), 0u);
}

TEST_F(ChunkPoolTest, ThreadsAllocateAndFreeAtOnce) {
  ChunkPool pool;
  auto work = [&pool](uint8_t mark) {
    for (int round = 0; round < 50; ++round) {
      std::vector<void*> mine;
      for (size_t size : {64 * kKiB, 200 * kKiB, 90 * kKiB}) {
        void* p = pool.allocate(size, 64);
        if (p == nullptr) continue;
        std::memset(p, mark, size);
        mine.push_back(p);
      }
      for (void* p : mine) {
        const size_t size = pool.size_of(p);
        EXPECT_EQ(static_cast<uint8_t*>(p)[size - 1], mark);  // nobody else wrote it
        EXPECT_TRUE(pool.free(p));
      }
    }
  };
  std::thread t1(work, 0x5a), t2(work, 0xa5);
  t1.join();
  t2.join();
  EXPECT_EQ(pool.chunks(), 0u);
}

}  // namespace
}  // namespace tessera
