#include "tessera/backends/opencl/integrity_file.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

#include "tessera/backends/opencl/cl_util.h"

namespace tessera::opencl {
namespace {

void put_u32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
void put_u64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }
uint32_t get_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint64_t get_u64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

}  // namespace

Result<std::vector<uint8_t>> read_integrity_file(const std::string& path,
                                                 const IntegrityKey& key) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    if (errno == ENOENT) return Status::error(Error::NotFound, "'%s' does not exist", path.c_str());
    return Status::error(Error::AccessFailed, "cannot read '%s': %s", path.c_str(),
                         std::strerror(errno));
  }
  std::vector<uint8_t> bytes;
  uint8_t chunk[65536];
  size_t n;
  while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0) bytes.insert(bytes.end(), chunk, chunk + n);
  std::fclose(f);
  if (bytes.size() < kIntegrityHeaderSize) {
    return Status::error(Error::Truncated, "'%s' is truncated (%zu bytes, header needs %zu)",
                         path.c_str(), bytes.size(), kIntegrityHeaderSize);
  }
  const uint8_t* h = bytes.data();
  if (std::memcmp(h, key.magic, 8) != 0) {
    return Status::error(Error::InvalidProgram, "'%s' is not a %.8s file (bad magic)", path.c_str(),
                         key.magic);
  }
  const uint32_t version = get_u32(h + 8);
  if (version != kIntegrityFormatVersion) {
    return Status::error(Error::InvalidProgram, "'%s' has format version %u, expected %u",
                         path.c_str(), version, kIntegrityFormatVersion);
  }
  if (get_u64(h + 16) != key.device) {
    return Status::error(Error::DelegateInvalidCompatibility,
                         "'%s' was written for another device or driver", path.c_str());
  }
  if (key.content != 0 && get_u64(h + 24) != key.content) {
    return Status::error(Error::DelegateInvalidCompatibility,
                         "'%s' was built from other kernel source or build options", path.c_str());
  }
  const uint64_t size = get_u64(h + 32);
  if (size != bytes.size() - kIntegrityHeaderSize) {
    return Status::error(Error::Truncated, "'%s' holds %zu payload bytes, header says %llu",
                         path.c_str(), bytes.size() - kIntegrityHeaderSize,
                         static_cast<unsigned long long>(size));
  }
  if (fnv1a64(h + kIntegrityHeaderSize, size) != get_u64(h + 40)) {
    return Status::error(Error::InvalidProgram, "'%s' is corrupted (checksum mismatch)",
                         path.c_str());
  }
  return std::vector<uint8_t>(bytes.begin() + kIntegrityHeaderSize, bytes.end());
}

Status write_integrity_file(const std::string& path, const IntegrityKey& key,
                            const std::vector<uint8_t>& payload) {
  uint8_t header[kIntegrityHeaderSize] = {};
  std::memcpy(header, key.magic, 8);
  put_u32(header + 8, kIntegrityFormatVersion);
  put_u64(header + 16, key.device);
  put_u64(header + 24, key.content);
  put_u64(header + 32, payload.size());
  put_u64(header + 40, fnv1a64(payload.data(), payload.size()));

  static std::atomic<uint64_t> counter{0};
  char suffix[64];
  std::snprintf(suffix, sizeof suffix, ".tmp.%ld.%llu", static_cast<long>(getpid()),
                static_cast<unsigned long long>(counter.fetch_add(1)));
  const std::string temp = path + suffix;
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status::error(Error::AccessFailed, "cannot create '%s': %s", temp.c_str(),
                         std::strerror(errno));
  }
  bool ok = true;
  auto write_all = [&](const uint8_t* p, size_t n) {
    while (ok && n > 0) {
      const ssize_t w = ::write(fd, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        ok = false;
        break;
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
  };
  write_all(header, sizeof header);
  write_all(payload.data(), payload.size());
  const int saved = errno;
  if (::close(fd) != 0) ok = false;
  if (!ok || std::rename(temp.c_str(), path.c_str()) != 0) {
    const int err = ok ? errno : saved;
    ::unlink(temp.c_str());
    return Status::error(Error::AccessFailed, "cannot write '%s': %s", path.c_str(),
                         std::strerror(err));
  }
  return Status::ok();
}

}  // namespace tessera::opencl
