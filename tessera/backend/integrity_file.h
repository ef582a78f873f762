// Files backends persist (OpenCL's compiled program binaries and tuning results, oneDNN's
// transformed weights) share one integrity-checked layout, written atomically (temporary file,
// then rename):
//
//   magic[8] | format version u32 | reserved u32 | device fingerprint u64 | content key u64 |
//   payload size u64 | payload checksum (hash64) u64 | payload
//
// All integers little-endian as stored by this machine. A reader rejects a file whose magic,
// version, device, key, size or checksum differ from what it expects, so a truncated, corrupted,
// foreign or stale file is never used.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/core/result.h"
#include "tessera/core/status.h"

namespace tessera {

// Version 2: the payload checksum is hash64 (version 1 used fnv1a64, too slow for the tens of
// megabytes of transformed weights).
inline constexpr uint32_t kIntegrityFormatVersion = 2;

/// A fast 64-bit hash of large buffers (payload checksums, weights in cache keys): four
/// independent multiply-xorshift lanes over 8-byte words, about 10 GB/s here. Not cryptographic:
/// it detects damage and tells contents apart, it does not resist forgery.
uint64_t hash64(const void* data, size_t size, uint64_t seed = 0);

/// FNV-1a 64-bit hash, continued from `seed` (short keys: names, fingerprints).
uint64_t fnv1a64(const void* data, size_t size, uint64_t seed = 14695981039346656037ull);
inline uint64_t fnv1a64(const std::string& s, uint64_t seed = 14695981039346656037ull) {
  return fnv1a64(s.data(), s.size(), seed);
}
inline constexpr size_t kIntegrityHeaderSize = 48;

/// What a file must match to be used.
struct IntegrityKey {
  char magic[8];         // e.g. "TSCLBIN1"
  uint64_t device = 0;   // device + driver (or library + ISA) fingerprint hash
  uint64_t content = 0;  // hash of what the payload was derived from (0: not checked)
};

/// Reads `path`. NotFound if it does not exist (a cold cache, not a problem); otherwise any
/// mismatch is an error whose message says what was wrong (DelegateInvalidCompatibility for a
/// foreign device or stale key, Truncated for a short file, InvalidProgram for a bad magic,
/// version or checksum, AccessFailed for an unreadable file).
Result<std::vector<uint8_t>> read_integrity_file(const std::string& path, const IntegrityKey& key);

/// As read_integrity_file, the payload read straight into `dst` (`size` bytes: transformed
/// weights into the memory they are used from, with no vector to fill and copy). A payload of
/// another size is DelegateInvalidCompatibility and nothing is read. On any error `dst` may hold
/// part of the file: the caller recomputes it.
Status read_integrity_file_into(const std::string& path, const IntegrityKey& key, void* dst,
                                size_t size);

/// Writes `payload` to `path` atomically (a unique temporary file in the same directory, then
/// rename). AccessFailed when the directory is not writable.
Status write_integrity_file(const std::string& path, const IntegrityKey& key,
                            const std::vector<uint8_t>& payload);

/// Fault injection (tests and reliability drills), for every thread: write_integrity_file fails
/// with errno `error` as if the kernel had refused it: creating the file when `after_bytes` is 0
/// (EROFS or EACCES: a read-only directory), else the write after `after_bytes` bytes of the
/// file (ENOSPC: a full disk; EIO). The temporary file is removed as on a real failure. `error`
/// 0 turns it off.
void set_integrity_write_fault(int error, uint64_t after_bytes = 0);

/// Called by read_integrity_file after it has read a file's header and before it reads the
/// payload, with the path (tests use it to replace or rewrite the file mid-read). Null: none.
/// `hook` must stay callable until it is replaced.
void set_integrity_read_hook(void (*hook)(const char* path, void* context), void* context);

}  // namespace tessera
