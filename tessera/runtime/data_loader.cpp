#include "tessera/runtime/data_loader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace tessera {

Result<MmapDataLoader> MmapDataLoader::from(const char* path) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    return Status::error(err == ENOENT ? Error::NotFound : Error::AccessFailed,
                         "cannot open program '%s': %s", path, std::strerror(err));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::error(Error::AccessFailed, "program '%s' is not a regular file", path);
  }
  size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return MmapDataLoader(nullptr, 0, -1);
  }
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) {
    int err = errno;
    ::close(fd);
    return Status::error(Error::AccessFailed, "cannot map program '%s': %s", path,
                         std::strerror(err));
  }
  return MmapDataLoader(static_cast<const uint8_t*>(p), size, fd);
}

MmapDataLoader::MmapDataLoader(MmapDataLoader&& other) noexcept
    : data_(other.data_), size_(other.size_), fd_(other.fd_) {
  other.data_ = nullptr;
  other.size_ = 0;
  other.fd_ = -1;
}

MmapDataLoader& MmapDataLoader::operator=(MmapDataLoader&& other) noexcept {
  if (this != &other) {
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
    if (fd_ >= 0) ::close(fd_);
    data_ = other.data_;
    size_ = other.size_;
    fd_ = other.fd_;
    other.data_ = nullptr;
    other.size_ = 0;
    other.fd_ = -1;
  }
  return *this;
}

namespace {

// The pages of `range` when it is a non-empty range inside the mapping [data, data + size):
// `whole_only`, the pages wholly inside it (the neighbours may be in use), else every page it
// touches. False outside the mapping, or when no page is left.
bool pages_of(const uint8_t* data, size_t size, Span<const uint8_t> range, bool whole_only,
              uintptr_t* begin, uintptr_t* end) {
  const auto base = reinterpret_cast<uintptr_t>(data);
  *begin = reinterpret_cast<uintptr_t>(range.data());
  *end = *begin + range.size();
  if (data == nullptr || *begin < base || *end > base + size || *end <= *begin) return false;
  static const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t in = whole_only ? page - 1 : 0, out = whole_only ? 0 : page - 1;
  *begin = (*begin + in) / page * page;
  *end = (*end + out) / page * page;
  return *begin < *end;
}

}  // namespace

void MmapDataLoader::release(Span<const uint8_t> range) const {
  uintptr_t begin = 0, end = 0;
  if (!pages_of(data_, size_, range, /*whole_only=*/true, &begin, &end)) return;
  // Never written (PROT_READ), so dropping loses nothing: the next read maps the file's page.
  ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

void MmapDataLoader::will_read(Span<const uint8_t> range) const {
  uintptr_t begin = 0, end = 0;
  if (range.size() < kWillReadMinBytes ||
      !pages_of(data_, size_, range, /*whole_only=*/false, &begin, &end)) {
    return;
  }
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14 (glibc 2.35 names it)
#endif
  // Reads the pages in and maps them; an older kernel answers EINVAL, and the read-ahead hint
  // is what is left. Errors change nothing: the bytes are read (and fault) as before.
  if (::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_READ) != 0 &&
      errno == EINVAL) {
    (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_WILLNEED);
  }
}

bool MmapDataLoader::read(size_t offset, Span<uint8_t> out) const {
  if (fd_ < 0 || offset > size_ || out.size() > size_ - offset) return false;
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t got =
        ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;  // an error, or the file shrank under the mapping
    done += static_cast<size_t>(got);
  }
  return true;
}

MmapDataLoader::~MmapDataLoader() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
}

bool MmapDataLoader::file_identity(FileIdentity* out) const {
  struct stat st;
  if (fd_ < 0 || ::fstat(fd_, &st) != 0) return false;
  out->device = static_cast<uint64_t>(st.st_dev);
  out->inode = static_cast<uint64_t>(st.st_ino);
  out->size = static_cast<uint64_t>(st.st_size);
  out->modified_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  out->changed_ns = int64_t{st.st_ctim.tv_sec} * 1000000000 + st.st_ctim.tv_nsec;
  return true;
}

}  // namespace tessera
