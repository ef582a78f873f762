#include "tessera/core/chunk_pool.h"

#include <atomic>

namespace tessera {
namespace {

std::atomic<size_t> g_min_bytes{0};  // 0: the default

constexpr size_t kMaxAlignment = 4096;

}  // namespace

namespace internal {
void set_chunk_pool_min_bytes(size_t bytes) {
  g_min_bytes.store(bytes, std::memory_order_relaxed);
}
}  // namespace internal

size_t ChunkPool::min_bytes() {
  const size_t m = g_min_bytes.load(std::memory_order_relaxed);
  return m != 0 ? m : kDefaultMinBytes;
}

bool ChunkPool::enabled() {
  return large_buffer_threshold() <= kChunkBytes;
}

void* ChunkPool::allocate(size_t bytes, size_t alignment) {
  if (bytes < min_bytes() || bytes > kMaxBytes || alignment == 0 ||
      (alignment & (alignment - 1)) != 0 || alignment > kMaxAlignment || !enabled()) {
    return nullptr;
  }
  auto offset_in = [&](const Chunk& c) -> size_t {
    const size_t at = (c.used + alignment - 1) / alignment * alignment;
    return at <= kChunkBytes && bytes <= kChunkBytes - at ? at : kChunkBytes;
  };
  std::lock_guard<std::mutex> lock(mu_);
  Chunk* chunk = nullptr;
  size_t at = kChunkBytes;
  for (auto& [start, c] : chunks_) {  // best fit: the chunk it leaves the least room in
    const size_t o = offset_in(c);
    if (o < kChunkBytes && (chunk == nullptr || o > at)) {
      chunk = &c;
      at = o;
    }
  }
  if (chunk == nullptr) {
    LargeBuffer memory = LargeBuffer::allocate(kChunkBytes, kChunkBytes);
    if (memory.data() == nullptr || !memory.mapped()) return nullptr;
    const auto start = reinterpret_cast<uintptr_t>(memory.data());
    try {
      chunk = &chunks_[start];
    } catch (...) {
      return nullptr;  // `memory` unmaps it
    }
    chunk->memory = std::move(memory);
    at = 0;
  }
  void* p = static_cast<uint8_t*>(chunk->memory.data()) + at;
  try {
    buffers_.emplace(p, bytes);
  } catch (...) {
    if (chunk->live == 0 && chunk->used == 0) {
      chunks_.erase(reinterpret_cast<uintptr_t>(chunk->memory.data()));
    }
    return nullptr;
  }
  chunk->used = at + bytes;
  ++chunk->live;
  return p;
}

bool ChunkPool::free(void* p) {
  if (p == nullptr) return false;
  std::lock_guard<std::mutex> lock(mu_);
  auto b = buffers_.find(p);
  if (b == buffers_.end()) return false;
  buffers_.erase(b);
  // Chunks are kChunkBytes long and aligned to it: the one holding p starts at p rounded down.
  const uintptr_t start = reinterpret_cast<uintptr_t>(p) & ~(uintptr_t{kChunkBytes} - 1);
  auto c = chunks_.find(start);
  if (c != chunks_.end() && --c->second.live == 0) chunks_.erase(c);
  return true;
}

size_t ChunkPool::size_of(const void* p) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto b = buffers_.find(p);
  return b == buffers_.end() ? 0 : b->second;
}

size_t ChunkPool::chunks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return chunks_.size();
}

}  // namespace tessera
