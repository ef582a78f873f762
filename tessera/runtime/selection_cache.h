// The selection cache: a measured choice of backend for one delegate, remembered on disk so a
// later load on the same machine, with the same program, dims, policy and options, skips the
// measurement (LoadOptions::selection, selection_cache_dir).
//
// One file per delegate and key: <dir>/<16 hex digits>.tsel, the name a hash of everything in
// the key except the device, in the integrity-checked layout of tessera/backend/integrity_file.h
// (magic "TSSEL001", the device fingerprint in the header, the full key hash as its content
// key), written atomically. The payload is JSON (the key in words, the chosen backend and every
// candidate with its median and why it was rejected) so a person can read it. Writers take an
// exclusive lock on <file>.lock (flock) for the measurement and the write, so two processes (or
// threads) loading the same program measure once; the second reads what the first wrote.
// The directory's entries are kept within LoadOptions::selection_cache_max_kb
// (trim_selection_cache, after each write), least recently used first.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/backend/cache_limit.h"
#include "tessera/core/result.h"
#include "tessera/core/status.h"
#include "tessera/runtime/delegate_info.h"

namespace tessera {
struct DeviceInfo;
}

namespace tessera::internal {

/// The selection cache's format version (in the payload; the integrity header has its own).
// 2: init_ms, the whole-method check; 3: disturbed_runs.
inline constexpr int kSelectionCacheVersion = 3;

/// The directory LoadOptions::selection_cache_dir names: `option` itself when set (an empty
/// string: the cache is disabled, returns ""), else $XDG_CACHE_HOME/tessera/selection, else
/// $HOME/.cache/tessera/selection, else "" (no usable location).
std::string selection_cache_dir(const char* option);

/// What a cached choice must match. Built field by field; `text` lists them for people.
class SelectionKey {
 public:
  /// The machine: CPU name, vendor, ISA features, usable CPUs and performance cores, and the
  /// Tessera version. Goes into the file header (a file from another machine is rejected).
  void set_device(const DeviceInfo& device);
  /// Any other field: program hash, method, delegate, dims, policy, backend build ids,
  /// resolved options of each candidate, selection settings.
  void add(std::string_view name, std::string_view value);
  void add(std::string_view name, uint64_t value);

  uint64_t device_hash() const { return device_hash_; }
  /// Hash of the fields added with add() (the file name).
  uint64_t fields_hash() const { return fields_hash_; }
  /// Hash of everything (the header's content key).
  uint64_t full_hash() const;
  const std::string& text() const { return text_; }
  const std::string& device_text() const { return device_text_; }

 private:
  std::string text_, device_text_;
  uint64_t device_hash_ = 0;
  uint64_t fields_hash_ = 14695981039346656037ull;
};

/// <dir>/<16 hex digits of key.fields_hash()>.tsel
std::string selection_cache_path(const std::string& dir, const SelectionKey& key);

/// Serialises `report` (with `chosen`, the backend that was chosen) and the key's text.
std::vector<uint8_t> encode_selection(const SelectionKey& key, const SelectionReport& report);

/// Parses a payload written by encode_selection into `report` (mode "measure", cached true) and
/// returns the chosen backend. InvalidProgram naming what is wrong for anything malformed: not
/// JSON, a wrong version, a missing or mistyped field, more candidates than fit, no chosen
/// candidate or one that was not accepted, a malformed "method" (the whole-method check; absent
/// when there was none). `report` is only written on success.
Result<std::string> decode_selection(const uint8_t* data, size_t size, SelectionReport* report);

/// Reads the entry at `path` for `key`. NotFound: no entry (a cold cache). Any other error says
/// what was wrong with the file (the caller warns and measures again).
Result<std::string> read_selection(const std::string& path, const SelectionKey& key,
                                   SelectionReport* report);

/// Writes the entry atomically, creating `dir` (and its parents) first if needed.
Status write_selection(const std::string& dir, const std::string& path, const SelectionKey& key,
                       const SelectionReport& report);

/// Keeps `dir`'s entries (`.tsel` choices and `.tphash` program hash memos) within `max_kb`
/// KiB (0: no bound), least recently used first (a read touches the entry it used). A choice
/// goes with its lock file, and only when its lock is free: one another load holds (measuring,
/// writing or reading it) stays, counted as `failed`. Never fails.
CacheTrim trim_selection_cache(const std::string& dir, int64_t max_kb);

/// An exclusive advisory lock on <path>.lock (flock), released on destruction. When the lock
/// file cannot be created (read-only directory) `locked()` is false and `error()` says why; the
/// caller goes on without it.
class SelectionLock {
 public:
  explicit SelectionLock(const std::string& path);
  ~SelectionLock();
  SelectionLock(const SelectionLock&) = delete;
  SelectionLock& operator=(const SelectionLock&) = delete;
  bool locked() const { return fd_ >= 0; }
  const std::string& error() const { return error_; }

 private:
  int fd_ = -1;
  std::string error_;
};

}  // namespace tessera::internal
