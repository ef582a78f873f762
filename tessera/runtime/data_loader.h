// DataLoaders give a Program the bytes of a program file: a memory-mapped file, or a caller's
// buffer. The bytes must stay valid and unchanged for the loader's lifetime, which must exceed
// that of every Program loaded from it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tessera/core/result.h"
#include "tessera/core/span.h"

namespace tessera {

class DataLoader {
 public:
  virtual ~DataLoader() = default;
  /// The whole file.
  virtual Span<const uint8_t> data() const = 0;
  /// A hint that nothing reads `range` (inside data()) for now: a backend has its own copy of
  /// those constants. A loader that can read the bytes back (a file mapping) may drop them from
  /// the process's memory; they stay valid and unchanged, and come back when read. The default
  /// keeps them (a caller's buffer is never touched).
  virtual void release(Span<const uint8_t> range) const { (void)range; }
};

/// Maps a file read-only. Constants are then used in place, straight from the page cache.
class MmapDataLoader final : public DataLoader {
 public:
  /// Errors: NotFound (no such file), AccessFailed (unreadable, not a regular file, mmap failed).
  static Result<MmapDataLoader> from(const char* path);

  MmapDataLoader(MmapDataLoader&& other) noexcept;
  MmapDataLoader& operator=(MmapDataLoader&& other) noexcept;
  MmapDataLoader(const MmapDataLoader&) = delete;
  MmapDataLoader& operator=(const MmapDataLoader&) = delete;
  ~MmapDataLoader() override;

  Span<const uint8_t> data() const override { return {data_, size_}; }
  /// Drops the whole pages inside `range` from the process (madvise MADV_DONTNEED on the
  /// read-only private mapping): its resident size shrinks, and a later read maps the page
  /// again from the file (the page cache, normally). Ranges outside the mapping are ignored.
  void release(Span<const uint8_t> range) const override;

 private:
  MmapDataLoader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

/// Borrows a caller's buffer. It must be 64-byte aligned for constants to be used in place
/// (Program::load rejects a misaligned buffer).
class BufferDataLoader final : public DataLoader {
 public:
  BufferDataLoader(const void* data, size_t size)
      : data_(static_cast<const uint8_t*>(data)), size_(size) {}
  Span<const uint8_t> data() const override { return {data_, size_}; }

 private:
  const uint8_t* data_;
  size_t size_;
};

}  // namespace tessera
