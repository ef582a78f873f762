// DataLoaders give a Program the bytes of a program file: a memory-mapped file, or a caller's
// buffer. The bytes must stay valid and unchanged for the loader's lifetime, which must exceed
// that of every Program loaded from it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tessera/core/result.h"
#include "tessera/core/span.h"

namespace tessera {

/// What tells one state of a file apart from another without reading it: the file (device and
/// inode), its size, and the times of its last change (content and status, in nanoseconds).
struct FileIdentity {
  uint64_t device = 0;
  uint64_t inode = 0;
  uint64_t size = 0;
  int64_t modified_ns = 0;
  int64_t changed_ns = 0;
};

class DataLoader {
 public:
  virtual ~DataLoader() = default;
  /// The identity of the file data() comes from, as it is now; false where the bytes are not a
  /// file's (the default: a caller's buffer) or the file cannot be examined.
  virtual bool file_identity(FileIdentity* out) const {
    (void)out;
    return false;
  }
  /// The whole file.
  virtual Span<const uint8_t> data() const = 0;
  /// A hint that nothing reads `range` (inside data()) for now: a backend has its own copy of
  /// those constants. A loader that can read the bytes back (a file mapping) may drop them from
  /// the process's memory; they stay valid and unchanged, and come back when read. The default
  /// keeps them (a caller's buffer is never touched).
  virtual void release(Span<const uint8_t> range) const { (void)range; }
  /// A hint that `range` (inside data()) is about to be read whole (a backend packing those
  /// constants): a loader that maps a file may map all its pages now, at once. The default does
  /// nothing.
  virtual void will_read(Span<const uint8_t> range) const { (void)range; }
  /// Copies the bytes of data() from `offset` on into `out` without mapping them into the
  /// process, for a caller that reads each byte once (a hash of the whole program). Returns
  /// false, with `out` unspecified, where the loader cannot (the default: read data()) or the
  /// range runs past the end or the read fails.
  virtual bool read(size_t offset, Span<uint8_t> out) const {
    (void)offset;
    (void)out;
    return false;
  }
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
  /// Maps the pages of `range` of at least kWillReadMinBytes in one call (madvise
  /// MADV_POPULATE_READ, Linux 5.14 on; before it, MADV_WILLNEED starts reading them from the
  /// file) instead of a page fault every 64 KiB as they are read: ResNet-18's weights took 680
  /// such faults in a load; oneDNN loads of ResNet-18, MobileNetV2 and ResNeXt-50 took 4-5 %
  /// less time without them on a KVM guest. Shorter ranges, and ranges outside the mapping, are
  /// left to the faults.
  void will_read(Span<const uint8_t> range) const override;
  static constexpr size_t kWillReadMinBytes = size_t{64} << 10;
  /// fstat of the file the mapping was made from (the loader keeps it open).
  bool file_identity(FileIdentity* out) const override;
  /// pread from the file the mapping was made from (the loader keeps it open): the kernel copies
  /// from the page cache, and no page of the mapping is touched. Reading a mapped page costs a
  /// page fault the first time, several times a copy's price in a virtual machine (8.9 MB hashed:
  /// 5 ms mapped, 1.3 ms read, on a KVM guest).
  bool read(size_t offset, Span<uint8_t> out) const override;

 private:
  MmapDataLoader(const uint8_t* data, size_t size, int fd) : data_(data), size_(size), fd_(fd) {}
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  int fd_ = -1;  // the mapped file, for read(); -1 for an empty file
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
