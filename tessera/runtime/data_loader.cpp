#include "tessera/runtime/data_loader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
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
    return MmapDataLoader(nullptr, 0);
  }
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int err = errno;
  ::close(fd);
  if (p == MAP_FAILED) {
    return Status::error(Error::AccessFailed, "cannot map program '%s': %s", path,
                         std::strerror(err));
  }
  return MmapDataLoader(static_cast<const uint8_t*>(p), size);
}

MmapDataLoader::MmapDataLoader(MmapDataLoader&& other) noexcept
    : data_(other.data_), size_(other.size_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MmapDataLoader& MmapDataLoader::operator=(MmapDataLoader&& other) noexcept {
  if (this != &other) {
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
    data_ = other.data_;
    size_ = other.size_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

MmapDataLoader::~MmapDataLoader() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace tessera
