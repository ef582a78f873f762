#include "tests/backends/common/test_files.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace tessera::backend_testing {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/tessera-test-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  path_ = mkdtemp(buf.data()) ? buf.data() : "";
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

std::vector<std::string> TempDir::files() const {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(path_)) {
    if (e.is_regular_file()) out.push_back(e.path().filename().string());
  }
  return out;
}

LogCapture::LogCapture() {
  set_log_sink(&LogCapture::sink, this);
}
LogCapture::~LogCapture() {
  set_log_sink(nullptr, nullptr);
}

void LogCapture::sink(LogLevel level, const char* message, void* self) {
  auto* c = static_cast<LogCapture*>(self);
  if (level != LogLevel::Warning) return;
  std::lock_guard<std::mutex> lock(c->mutex_);
  c->warnings_.push_back(message);
}

std::vector<std::string> LogCapture::warnings() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return warnings_;
}

void LogCapture::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  warnings_.clear();
}

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace tessera::backend_testing
