#include "tessera/backend/integrity_file.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tessera {
namespace {

// Injected faults (set_integrity_write_fault, set_integrity_read_hook).
std::atomic<int> g_write_fault_errno{0};
std::atomic<uint64_t> g_write_fault_after{0};
std::atomic<void (*)(const char*, void*)> g_read_hook{nullptr};
std::atomic<void*> g_read_hook_context{nullptr};

void put_u32(uint8_t* p, uint32_t v) {
  std::memcpy(p, &v, 4);
}
void put_u64(uint8_t* p, uint64_t v) {
  std::memcpy(p, &v, 8);
}
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

uint64_t fnv1a64(const void* data, size_t size, uint64_t seed) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t h = seed;
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

uint64_t hash64(const void* data, size_t size, uint64_t seed) {
  constexpr uint64_t kMul = 0x9e3779b97f4a7c15ull;
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t lane[4] = {seed ^ 0x243f6a8885a308d3ull, seed ^ 0x13198a2e03707344ull,
                      seed ^ 0xa4093822299f31d0ull, seed ^ 0x082efa98ec4e6c89ull};
  auto mix = [](uint64_t h, uint64_t w) {
    h = (h ^ w) * kMul;
    return h ^ (h >> 29);
  };
  size_t i = 0;
  for (; i + 32 <= size; i += 32) {
    for (int k = 0; k < 4; ++k) {
      uint64_t w;
      std::memcpy(&w, p + i + 8 * k, 8);
      lane[k] = mix(lane[k], w);
    }
  }
  uint64_t h = mix(mix(lane[0], lane[1]), mix(lane[2], lane[3]));
  for (; i + 8 <= size; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = mix(h, w);
  }
  uint64_t tail = 0;
  if (size > i) std::memcpy(&tail, p + i, size - i);
  return mix(mix(h, tail), size);
}

namespace {

// An open file whose header matched the key (magic, version, device, content); the payload's
// size and checksum are left to the reader.
struct CheckedHeader {
  std::FILE* file = nullptr;
  uint64_t announced = 0;  // payload size in the header
  uint64_t checksum = 0;   // payload checksum in the header
  uint64_t on_disk = 0;    // payload bytes the file holds
  ~CheckedHeader() {
    if (file != nullptr) std::fclose(file);
  }
};

Status open_checked(const std::string& path, const IntegrityKey& key, CheckedHeader* out) {
  out->file = std::fopen(path.c_str(), "rb");
  if (out->file == nullptr) {
    if (errno == ENOENT) return Status::error(Error::NotFound, "'%s' does not exist", path.c_str());
    return Status::error(Error::AccessFailed, "cannot read '%s': %s", path.c_str(),
                         std::strerror(errno));
  }
  uint8_t h[kIntegrityHeaderSize];
  const size_t got = std::fread(h, 1, sizeof h, out->file);
  if (got < kIntegrityHeaderSize) {
    return Status::error(Error::Truncated, "'%s' is truncated (%zu bytes, header needs %zu)",
                         path.c_str(), got, kIntegrityHeaderSize);
  }
  if (auto hook = g_read_hook.load()) hook(path.c_str(), g_read_hook_context.load());
  struct stat st;
  if (::fstat(::fileno(out->file), &st) != 0 || !S_ISREG(st.st_mode)) {
    return Status::error(Error::AccessFailed, "cannot read '%s': not a regular file", path.c_str());
  }
  const uint64_t size_on_disk = static_cast<uint64_t>(st.st_size);
  out->on_disk = size_on_disk > kIntegrityHeaderSize ? size_on_disk - kIntegrityHeaderSize : 0;
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
  out->announced = get_u64(h + 32);
  out->checksum = get_u64(h + 40);
  return Status::ok();
}

// Reads the payload of `h` into `dst` (room for h.announced bytes; nothing is read when the file
// cannot hold them: a damaged header must not ask for gigabytes) and checks its size and
// checksum.
Status read_checked_payload(const std::string& path, CheckedHeader& h, uint8_t* dst) {
  size_t got = 0;
  bool more = false;
  if (h.announced <= h.on_disk) {
    got = std::fread(dst, 1, static_cast<size_t>(h.announced), h.file);
    more = std::fgetc(h.file) != EOF;  // a longer file than announced
  }
  if (more || got != h.announced) {
    return Status::error(Error::Truncated, "'%s' holds %s payload bytes than its header's %llu",
                         path.c_str(), more ? "more" : "fewer",
                         static_cast<unsigned long long>(h.announced));
  }
  if (hash64(dst, got) != h.checksum) {
    return Status::error(Error::InvalidProgram, "'%s' is corrupted (checksum mismatch)",
                         path.c_str());
  }
  return Status::ok();
}

}  // namespace

Result<std::vector<uint8_t>> read_integrity_file(const std::string& path, const IntegrityKey& key) {
  CheckedHeader h;
  TESSERA_RETURN_IF_ERROR(open_checked(path, key, &h));
  // Allocated only for what the file holds (read_checked_payload reads nothing otherwise).
  std::vector<uint8_t> payload(h.announced <= h.on_disk ? static_cast<size_t>(h.announced) : 0);
  TESSERA_RETURN_IF_ERROR(read_checked_payload(path, h, payload.data()));
  return payload;
}

Status read_integrity_file_into(const std::string& path, const IntegrityKey& key, void* dst,
                                size_t size) {
  CheckedHeader h;
  TESSERA_RETURN_IF_ERROR(open_checked(path, key, &h));
  if (h.announced != size) {
    return Status::error(Error::DelegateInvalidCompatibility,
                         "'%s' holds a %llu-byte payload, expected %zu", path.c_str(),
                         static_cast<unsigned long long>(h.announced), size);
  }
  return read_checked_payload(path, h, static_cast<uint8_t*>(dst));
}

Status write_integrity_file(const std::string& path, const IntegrityKey& key,
                            const std::vector<uint8_t>& payload) {
  uint8_t header[kIntegrityHeaderSize] = {};
  std::memcpy(header, key.magic, 8);
  put_u32(header + 8, kIntegrityFormatVersion);
  put_u64(header + 16, key.device);
  put_u64(header + 24, key.content);
  put_u64(header + 32, payload.size());
  put_u64(header + 40, hash64(payload.data(), payload.size()));

  static std::atomic<uint64_t> counter{0};
  char suffix[64];
  std::snprintf(suffix, sizeof suffix, ".tmp.%ld.%llu", static_cast<long>(getpid()),
                static_cast<unsigned long long>(counter.fetch_add(1)));
  const std::string temp = path + suffix;
  const int fault = g_write_fault_errno.load();
  const uint64_t fault_after = g_write_fault_after.load();
  int fd = -1;
  if (fault != 0 && fault_after == 0) {
    errno = fault;  // as a read-only or full directory refuses the new file
  } else {
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  }
  if (fd < 0) {
    return Status::error(Error::AccessFailed, "cannot create '%s': %s", temp.c_str(),
                         std::strerror(errno));
  }
  bool ok = true;
  uint64_t budget = fault != 0 ? fault_after : UINT64_MAX;  // bytes written before the fault
  auto write_all = [&](const uint8_t* p, size_t n) {
    while (ok && n > 0) {
      if (budget == 0) {
        errno = fault;
        ok = false;
        break;
      }
      const size_t chunk = n < budget ? n : static_cast<size_t>(budget);
      const ssize_t w = ::write(fd, p, chunk);
      if (w > 0 && budget != UINT64_MAX) budget -= static_cast<uint64_t>(w);
      if (w < 0) {
        if (errno == EINTR) continue;
        ok = false;
        break;
      }
      if (w == 0) {  // no progress and no error: treat as a full disk rather than spin
        errno = ENOSPC;
        ok = false;
        break;
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
  };
  write_all(header, sizeof header);
  write_all(payload.data(), payload.size());
  // The data reaches the disk before the rename makes it the entry, so a crash leaves the old
  // entry or the whole new one (the checksum catches the rest). File systems that cannot sync
  // (EINVAL) are not an error.
  if (ok && ::fsync(fd) != 0 && errno != EINVAL) ok = false;
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

void set_integrity_write_fault(int error, uint64_t after_bytes) {
  g_write_fault_after.store(after_bytes);
  g_write_fault_errno.store(error);
}

void set_integrity_read_hook(void (*hook)(const char* path, void* context), void* context) {
  g_read_hook_context.store(context);
  g_read_hook.store(hook);
}

}  // namespace tessera
