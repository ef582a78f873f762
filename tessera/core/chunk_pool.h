// Mid-size buffers packed into shared 2 MiB chunks that the kernel can back with huge pages.
//
// LargeBuffer maps buffers of 2 MiB and more for huge pages; below that, each buffer came from
// the heap, where glibc maps every one from 128 KiB on by itself: fresh 4 KiB pages, one page fault
// each at the first write. XNNPACK's packed weights and indirection buffers are mostly 64 KiB to
// 1 MiB; packed into chunks, they take one fault per 2 MiB where huge pages are on. A load and
// first run of SqueezeNet 1.1 on XNNPACK then took 1,390 fewer faults, MobileNetV2 1,670, and
// on a KVM guest here a fault costs about 10 us (docs/performance.md, twentieth session).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "tessera/core/large_buffer.h"

namespace tessera {

/// Buffers of min_bytes() to kMaxBytes, handed out in 2 MiB chunks (each a mapped LargeBuffer,
/// 2 MiB-aligned and advised for huge pages), each where it fits best (the chunk with the least
/// room left after it; a new one when none has room). A chunk goes back to
/// the system when the last buffer in it is freed; space freed before that is not reused, so a
/// chunk holds at most one unused tail and the freed buffers of a chunk still in use.
/// Thread-safe. Off (allocate() returns null) where chunks would not be mapped: under
/// AddressSanitizer, which keeps its redzones around every heap buffer, unless a test lowered
/// large_buffer_threshold().
class ChunkPool {
 public:
  static constexpr size_t kChunkBytes = size_t{2} << 20;
  static constexpr size_t kMaxBytes = size_t{1} << 20;
  static constexpr size_t kDefaultMinBytes = size_t{64} << 10;

  ChunkPool() = default;
  /// Unmaps every chunk: buffers still held are gone with them.
  ~ChunkPool() = default;
  ChunkPool(const ChunkPool&) = delete;
  ChunkPool& operator=(const ChunkPool&) = delete;

  /// `bytes` aligned to `alignment` (a power of two up to 4096), uninitialised. Null when `bytes`
  /// is outside [min_bytes(), kMaxBytes], the alignment is not one of those, the pool is off, or
  /// the memory is not there: the caller then allocates elsewhere.
  void* allocate(size_t bytes, size_t alignment);
  /// Frees `p` and returns true when it came from allocate() and was not freed yet; otherwise
  /// does nothing and returns false (a buffer from elsewhere, null).
  bool free(void* p);
  /// The size `p` was allocated with, 0 when it is not a live buffer of the pool.
  size_t size_of(const void* p) const;
  /// Chunks mapped now.
  size_t chunks() const;

  /// Whether allocate() hands out buffers: chunks are mapped (large_buffer_threshold() is at
  /// most kChunkBytes).
  static bool enabled();
  /// The smallest buffer the pool takes: kDefaultMinBytes unless a test set it.
  static size_t min_bytes();

 private:
  struct Chunk {
    LargeBuffer memory;
    size_t used = 0;  // bytes handed out from its start, freed ones included
    size_t live = 0;  // buffers not freed yet
  };
  mutable std::mutex mu_;
  std::unordered_map<uintptr_t, Chunk> chunks_;      // by start address
  std::unordered_map<const void*, size_t> buffers_;  // live buffers and their sizes
};

namespace internal {
/// Tests: the pool takes buffers from `bytes` on (0 restores kDefaultMinBytes), so that whole
/// suites run their small buffers through it.
void set_chunk_pool_min_bytes(size_t bytes);
}  // namespace internal

}  // namespace tessera
