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

void MmapDataLoader::release(Span<const uint8_t> range) const {
  const auto base = reinterpret_cast<uintptr_t>(data_);
  auto begin = reinterpret_cast<uintptr_t>(range.data());
  uintptr_t end = begin + range.size();
  if (data_ == nullptr || begin < base || end > base + size_ || end <= begin) return;
  static const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  begin = (begin + page - 1) / page * page;  // whole pages only: the neighbours may be in use
  end = end / page * page;
  if (end <= begin) return;
  // Never written (PROT_READ), so dropping loses nothing: the next read maps the file's page.
  ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

void MmapDataLoader::will_read(Span<const uint8_t> range) const {
  const auto base = reinterpret_cast<uintptr_t>(data_);
  auto begin = reinterpret_cast<uintptr_t>(range.data());
  const uintptr_t end = begin + range.size();
  if (data_ == nullptr || range.size() < kWillReadMinBytes || begin < base || end > base + size_) {
    return;
  }
  static const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  begin = begin / page * page;  // madvise wants a page-aligned start; the mapping starts on one
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
