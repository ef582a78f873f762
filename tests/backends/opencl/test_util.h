// Helpers shared by the OpenCL option, cache and device tests: a temporary directory, a log
// capture, and small graphs.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "harness.h"
#include "tessera/core/log.h"

namespace tessera::opencl::testing {

/// A fresh directory under $TMPDIR (or /tmp), removed with its files at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
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

/// A conv + relu + pool + gemm graph: a few kernels of different kinds.
GraphCase small_net(uint32_t seed = 1);

/// Reads or writes a whole file.
std::vector<char> read_bytes(const std::string& path);
void write_bytes(const std::string& path, const std::vector<char>& bytes);

}  // namespace tessera::opencl::testing
