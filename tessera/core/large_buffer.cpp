#include "tessera/core/large_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>

#include "tessera/core/sanitizers.h"

namespace tessera {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

#if TESSERA_ASAN
constexpr size_t kDefaultThreshold = SIZE_MAX;
#else
constexpr size_t kDefaultThreshold = kHugePage;
#endif

std::atomic<size_t> g_threshold{0};  // 0: the default

size_t page_size() {
  static const size_t page = [] {
    const long p = ::sysconf(_SC_PAGESIZE);
    return p > 0 ? static_cast<size_t>(p) : size_t{4096};
  }();
  return page;
}

size_t round_up(size_t n, size_t to) {
  return (n + to - 1) / to * to;
}

// `bytes` as internal::large_buffer_mapped_bytes maps them, at a 2 MiB boundary: the mapping is
// 2 MiB longer, and what lies before the boundary and after the buffer is unmapped again.
void* map_aligned(size_t bytes) {
  if (bytes > SIZE_MAX - 2 * kHugePage) return nullptr;
  const size_t len = internal::large_buffer_mapped_bytes(bytes);
  const size_t map_len = len + kHugePage;
  void* m = ::mmap(nullptr, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  const uintptr_t base = reinterpret_cast<uintptr_t>(m);
  const uintptr_t start = (base + kHugePage - 1) & ~(static_cast<uintptr_t>(kHugePage) - 1);
  if (start > base) ::munmap(m, start - base);
  const uintptr_t end = base + map_len;
  if (end > start + len) ::munmap(reinterpret_cast<void*>(start + len), end - (start + len));
  // Whole 2 MiB spans only (a partial one at the end, under 1 MiB, stays in small pages). A
  // failure (no transparent huge pages) is harmless.
  const size_t whole = len / kHugePage * kHugePage;
  if (whole > 0) (void)::madvise(reinterpret_cast<void*>(start), whole, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(start);
}

}  // namespace

size_t large_buffer_threshold() {
  const size_t t = g_threshold.load(std::memory_order_relaxed);
  return t != 0 ? t : kDefaultThreshold;
}

namespace internal {
void set_large_buffer_threshold(size_t bytes) {
  g_threshold.store(bytes, std::memory_order_relaxed);
}

size_t large_buffer_mapped_bytes(size_t bytes) {
  const size_t len = round_up(bytes, page_size());
  return len % kHugePage >= kHugePage / 2 ? round_up(len, kHugePage) : len;
}
}  // namespace internal

LargeBuffer LargeBuffer::allocate(size_t bytes, size_t alignment) {
  LargeBuffer b;
  if (bytes == 0 || alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > kHugePage) {
    return b;
  }
  if (bytes >= large_buffer_threshold()) {
    b.data_ = map_aligned(bytes);
    b.mapped_ = b.data_ != nullptr;
  } else {
    // aligned_alloc wants a size that is a multiple of an alignment of at least a pointer's.
    const size_t align = alignment < sizeof(void*) ? sizeof(void*) : alignment;
    const size_t rounded = round_up(bytes, align);
    if (rounded >= bytes) b.data_ = std::aligned_alloc(align, rounded);
  }
  if (b.data_ != nullptr) b.size_ = bytes;
  return b;
}

LargeBuffer& LargeBuffer::operator=(LargeBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = other.data_;
    size_ = other.size_;
    mapped_ = other.mapped_;
    other.data_ = nullptr;
    other.size_ = 0;
    other.mapped_ = false;
  }
  return *this;
}

void LargeBuffer::discard_after(size_t used) {
  if (!mapped_ || used >= size_) return;
  const size_t from = round_up(used, page_size());
  const size_t end = internal::large_buffer_mapped_bytes(size_);
  if (from < end) (void)::madvise(static_cast<uint8_t*>(data_) + from, end - from, MADV_DONTNEED);
}

void LargeBuffer::release() {
  if (data_ != nullptr) {
    if (mapped_) {
      ::munmap(data_, internal::large_buffer_mapped_bytes(size_));
    } else {
      std::free(data_);
    }
  }
  data_ = nullptr;
  size_ = 0;
  mapped_ = false;
}

}  // namespace tessera
