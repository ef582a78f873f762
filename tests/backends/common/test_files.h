// Test helpers for backends that persist files (caches, tuning results): a temporary directory,
// whole-file reads and writes, and a capture of logged warnings.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "tessera/core/log.h"

namespace tessera::backend_testing {

/// A fresh directory under $TMPDIR (or /tmp), removed with its files at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  /// Regular files in the directory (names only).
  std::vector<std::string> files() const;

 private:
  std::string path_;
};

/// Captures warnings logged while it lives.
class LogCapture {
 public:
  LogCapture();
  ~LogCapture();
  std::vector<std::string> warnings() const;
  void clear();

 private:
  static void sink(LogLevel level, const char* message, void* self);
  mutable std::mutex mutex_;
  std::vector<std::string> warnings_;
};

/// Reads or writes a whole file.
std::vector<char> read_bytes(const std::string& path);
void write_bytes(const std::string& path, const std::vector<char>& bytes);

}  // namespace tessera::backend_testing
