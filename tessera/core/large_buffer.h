// Large buffers (packed weights, activation arenas, workspaces) placed so that the kernel can
// back them with transparent huge pages: one page fault per 2 MiB instead of one per 4 KiB.
//
// Where page faults are dear this is most of a load: on a KVM guest here (AMD EPYC, family 26)
// touching 32 MiB of new memory took 82 ms in 4 KiB faults and 7 ms in 2 MiB ones, and
// ResNet-18's oneDNN load took about 20,000 faults. madvise(MADV_HUGEPAGE) is a hint: where
// transparent huge pages are off or not built, it fails and the buffer is ordinary memory.
#pragma once

#include <cstddef>

namespace tessera {

/// One buffer of at least `size()` bytes, uninitialised, freed with its owner. From
/// large_buffer_threshold() bytes on it is mapped on its own, 2 MiB-aligned, with its whole
/// 2 MiB spans marked MADV_HUGEPAGE; a partial span at its end of at least 1 MiB is mapped whole
/// and marked too (at most 1 MiB backed that the buffer does not use, where its 256 or more
/// 4 KiB faults took 2.5 ms or more: MobileNetV2's oneDNN load took 725 in two such tails), a
/// shorter one stays in 4 KiB pages (see internal::large_buffer_mapped_bytes). Below the
/// threshold it comes from aligned_alloc.
class LargeBuffer {
 public:
  LargeBuffer() = default;
  /// `bytes` aligned to `alignment` (a power of two, at most 2 MiB). Empty (data() null) when
  /// the memory is not there, `bytes` is 0 or `alignment` is not a power of two up to 2 MiB.
  static LargeBuffer allocate(size_t bytes, size_t alignment = 64);
  ~LargeBuffer() { release(); }
  LargeBuffer(LargeBuffer&& other) noexcept { *this = static_cast<LargeBuffer&&>(other); }
  LargeBuffer& operator=(LargeBuffer&& other) noexcept;
  LargeBuffer(const LargeBuffer&) = delete;
  LargeBuffer& operator=(const LargeBuffer&) = delete;

  void* data() const { return data_; }
  size_t size() const { return size_; }
  /// Whether it was mapped on its own (and marked for huge pages), rather than from the heap.
  bool mapped() const { return mapped_; }
  /// Frees the buffer now; empty afterwards.
  void release();
  /// A mapped buffer of which only the first `used` bytes will be used: gives the memory of the
  /// whole pages after them back (MADV_DONTNEED; a huge page there is split), so that a huge
  /// page the used bytes end in holds no unused memory. They read as zeros if touched again.
  /// Nothing for a buffer from the heap.
  void discard_after(size_t used);

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
};

/// The size from which LargeBuffer maps buffers on their own: 2 MiB (the smallest that holds a
/// whole huge page). Under AddressSanitizer, never (SIZE_MAX), so that every buffer keeps its
/// redzones, unless a test set it.
size_t large_buffer_threshold();

namespace internal {
/// Tests: maps buffers from `bytes` on (0 restores the default), so that the mapped path runs
/// with small buffers and under the sanitizers.
void set_large_buffer_threshold(size_t bytes);
/// What a mapped buffer of `bytes` maps: whole 4 KiB pages, and a partial 2 MiB span at the end
/// of at least 1 MiB rounded up to the whole span (marked for huge pages with the others).
size_t large_buffer_mapped_bytes(size_t bytes);
}  // namespace internal

}  // namespace tessera
