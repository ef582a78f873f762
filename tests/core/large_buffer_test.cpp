// LargeBuffer (tessera/core/large_buffer.h): small buffers from the heap, large ones mapped on
// their own, 2 MiB-aligned and advised for huge pages; both usable to their last byte, moved
// and freed with their owner. HeapMemoryAllocator takes its large chunks that way.
#include "tessera/core/large_buffer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>

#include "tessera/core/heap_allocator.h"
#include "tessera/core/sanitizers.h"

namespace tessera {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

bool aligned(const void* p, size_t to) {
  return reinterpret_cast<uintptr_t>(p) % to == 0;
}

// The VmFlags line of the mapping that holds `p`, from /proc/self/smaps ("" when not found).
std::string vm_flags_of(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx ", &lo, &hi) == 2 && line.find('-') < 17) {
      inside = a >= lo && a < hi;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

class LargeBufferTest : public ::testing::Test {
 protected:
  void TearDown() override { internal::set_large_buffer_threshold(0); }
};

TEST_F(LargeBufferTest, BelowTheThresholdItComesFromTheHeap) {
  internal::set_large_buffer_threshold(4 * kMiB);
  LargeBuffer b = LargeBuffer::allocate(1000, 128);
  ASSERT_NE(b.data(), nullptr);
  EXPECT_EQ(b.size(), 1000u);
  EXPECT_FALSE(b.mapped());
  EXPECT_TRUE(aligned(b.data(), 128));
  std::memset(b.data(), 0x5a, b.size());
  EXPECT_EQ(static_cast<uint8_t*>(b.data())[999], 0x5a);
}

TEST_F(LargeBufferTest, FromTheThresholdItIsMappedAtA2MiBBoundaryAndAdvisedForHugePages) {
  internal::set_large_buffer_threshold(2 * kMiB);
  const size_t bytes = 4 * kMiB + kMiB / 2 + 123;  // two whole 2 MiB spans and a short one
  LargeBuffer b = LargeBuffer::allocate(bytes, 64);
  ASSERT_NE(b.data(), nullptr);
  EXPECT_TRUE(b.mapped());
  EXPECT_EQ(b.size(), bytes);
  EXPECT_TRUE(aligned(b.data(), 2 * kMiB));
  auto* p = static_cast<uint8_t*>(b.data());
  std::memset(p, 0x33, bytes);  // every byte, the last partial page's included
  EXPECT_EQ(p[0], 0x33);
  EXPECT_EQ(p[bytes - 1], 0x33);
  // The advice is on the whole spans ("hg"), not on the partial span (under 1 MiB) after them.
  // Where the kernel has no transparent huge pages the advice fails and the buffer is ordinary
  // memory.
  if (std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled").good()) {
    EXPECT_NE(vm_flags_of(p).find(" hg"), std::string::npos) << vm_flags_of(p);
    EXPECT_EQ(vm_flags_of(p + 4 * kMiB + 10).find(" hg"), std::string::npos)
        << vm_flags_of(p + 4 * kMiB + 10);
  }
}

// A partial span at the end of 1 MiB or more is mapped whole and advised with the others: its
// 256 or more 4 KiB page faults cost more than the at most 1 MiB it backs beyond the buffer.
TEST_F(LargeBufferTest, ALongPartialSpanAtTheEndIsMappedWholeForHugePages) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  EXPECT_EQ(internal::large_buffer_mapped_bytes(4 * kMiB), 4 * kMiB);
  EXPECT_EQ(internal::large_buffer_mapped_bytes(4 * kMiB + 1), 4 * kMiB + page);
  EXPECT_EQ(internal::large_buffer_mapped_bytes(5 * kMiB - page), 5 * kMiB - page);
  EXPECT_EQ(internal::large_buffer_mapped_bytes(5 * kMiB - page + 1), 6 * kMiB);
  EXPECT_EQ(internal::large_buffer_mapped_bytes(5 * kMiB), 6 * kMiB);
  EXPECT_EQ(internal::large_buffer_mapped_bytes(kMiB), 2 * kMiB);
  EXPECT_EQ(internal::large_buffer_mapped_bytes(kMiB - page), kMiB - page);

  internal::set_large_buffer_threshold(2 * kMiB);
  const size_t bytes = 5 * kMiB + 123;  // two whole spans and 1 MiB + 123 bytes of a third
  LargeBuffer b = LargeBuffer::allocate(bytes, 64);
  ASSERT_TRUE(b.mapped());
  EXPECT_EQ(b.size(), bytes);  // what the owner asked for
  auto* p = static_cast<uint8_t*>(b.data());
  std::memset(p, 0x44, bytes);
  EXPECT_EQ(p[bytes - 1], 0x44);
  EXPECT_FALSE(vm_flags_of(p + 6 * kMiB - 1).empty());  // mapped to the end of the span
  if (std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled").good()) {
    EXPECT_NE(vm_flags_of(p + 4 * kMiB + 10).find(" hg"), std::string::npos)
        << vm_flags_of(p + 4 * kMiB + 10);
  }
  b.discard_after(kMiB);  // the rest of the mapping, the rounded span's end included
  EXPECT_EQ(p[kMiB - 1], 0x44);
  EXPECT_EQ(p[bytes - 1], 0);
  b.release();
  EXPECT_TRUE(vm_flags_of(p + 6 * kMiB - 1).empty());  // all of it unmapped
}

TEST_F(LargeBufferTest, MovedItHasOneOwnerAndReleaseUnmapsIt) {
  internal::set_large_buffer_threshold(1);
  LargeBuffer a = LargeBuffer::allocate(3 * kMiB);
  ASSERT_TRUE(a.mapped());
  void* p = a.data();
  LargeBuffer b = std::move(a);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(b.data(), p);
  EXPECT_TRUE(b.mapped());
  LargeBuffer c = LargeBuffer::allocate(100);
  ASSERT_TRUE(c.mapped());  // the threshold is 1 byte: a mapping of one page
  c = std::move(b);         // c's own page is unmapped, b's buffer is c's
  EXPECT_EQ(c.data(), p);
  EXPECT_FALSE(vm_flags_of(p).empty());
  c.release();
  EXPECT_EQ(c.data(), nullptr);
  EXPECT_TRUE(vm_flags_of(p).empty());  // no mapping there any more
  c.release();                          // twice is nothing
}

// A pool sized from an estimate gives back what it did not use: the pages after the used bytes
// read as zeros again, the used ones keep their contents; a heap buffer is left as it is.
TEST_F(LargeBufferTest, DiscardAfterGivesBackTheUnusedPages) {
  internal::set_large_buffer_threshold(2 * kMiB);
  LargeBuffer b = LargeBuffer::allocate(3 * kMiB);
  ASSERT_TRUE(b.mapped());
  auto* p = static_cast<uint8_t*>(b.data());
  std::memset(p, 7, 3 * kMiB);
  const size_t used = kMiB + 1;  // the page holding byte kMiB stays
  b.discard_after(used);
  EXPECT_EQ(p[0], 7);
  EXPECT_EQ(p[kMiB], 7);
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  EXPECT_EQ(p[kMiB + page - 1], 7);
  EXPECT_EQ(p[kMiB + page], 0);
  EXPECT_EQ(p[3 * kMiB - 1], 0);
  b.discard_after(3 * kMiB);  // nothing after: nothing happens
  EXPECT_EQ(p[0], 7);

  LargeBuffer heap = LargeBuffer::allocate(10000);
  ASSERT_FALSE(heap.mapped());
  std::memset(heap.data(), 9, 10000);
  heap.discard_after(10);
  EXPECT_EQ(static_cast<uint8_t*>(heap.data())[9999], 9);
}

TEST_F(LargeBufferTest, BadRequestsGiveAnEmptyBuffer) {
  EXPECT_EQ(LargeBuffer::allocate(0).data(), nullptr);
  EXPECT_EQ(LargeBuffer::allocate(64, 3).data(), nullptr);  // not a power of two
  EXPECT_EQ(LargeBuffer::allocate(64, 0).data(), nullptr);
  EXPECT_EQ(LargeBuffer::allocate(64, 4 * kMiB).data(), nullptr);  // above 2 MiB
  EXPECT_EQ(LargeBuffer::allocate(SIZE_MAX - 10).data(), nullptr);
  internal::set_large_buffer_threshold(1);
  EXPECT_EQ(LargeBuffer::allocate(SIZE_MAX - 10).data(), nullptr);  // no such mapping
}

TEST_F(LargeBufferTest, TheDefaultThresholdIs2MiBOrNeverUnderAddressSanitizer) {
  internal::set_large_buffer_threshold(0);
#if TESSERA_ASAN
  EXPECT_EQ(large_buffer_threshold(), SIZE_MAX);
#else
  EXPECT_TRUE(large_buffer_threshold() == 2 * kMiB || large_buffer_threshold() == SIZE_MAX);
#endif
}

TEST_F(LargeBufferTest, HeapAllocatorTakesLargeChunksAsMappedBuffers) {
  internal::set_large_buffer_threshold(2 * kMiB);
  HeapMemoryAllocator heap(64 * 1024);
  auto* small = static_cast<uint8_t*>(heap.allocate(1000));
  auto* large = static_cast<uint8_t*>(heap.allocate(3 * kMiB, 256));
  ASSERT_NE(small, nullptr);
  ASSERT_NE(large, nullptr);
  EXPECT_TRUE(aligned(large, 256));
  std::memset(small, 1, 1000);
  std::memset(large, 2, 3 * kMiB);
  EXPECT_EQ(small[999], 1);
  EXPECT_EQ(large[3 * kMiB - 1], 2);
  EXPECT_GE(heap.heap_bytes(), 3 * kMiB + 64 * 1024);
  EXPECT_FALSE(vm_flags_of(large).empty());
  heap.reset();
  EXPECT_EQ(heap.heap_bytes(), 0u);
  EXPECT_TRUE(vm_flags_of(large).empty());  // the mapped chunk is gone
}

}  // namespace
}  // namespace tessera
