#include "tessera/core/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace tessera {
namespace {

void default_sink(LogLevel level, const char* message, void*) {
  std::fprintf(stderr, "tessera [%s] %s\n", log_level_name(level), message);
}

std::mutex g_sink_mutex;
LogSink g_sink = default_sink;
void* g_user_data = nullptr;
std::atomic<int> g_min_level{static_cast<int>(LogLevel::Info)};

}  // namespace

void set_log_sink(LogSink sink, void* user_data) {
  std::lock_guard<std::mutex> lock(g_sink_mutex);
  g_sink = sink ? sink : default_sink;
  g_user_data = sink ? user_data : nullptr;
}

void set_min_log_level(LogLevel level) { g_min_level.store(static_cast<int>(level)); }
LogLevel min_log_level() { return static_cast<LogLevel>(g_min_level.load()); }

void log(LogLevel level, const char* format, ...) {
  if (static_cast<int>(level) < g_min_level.load(std::memory_order_relaxed)) return;
  char buf[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  std::lock_guard<std::mutex> lock(g_sink_mutex);
  g_sink(level, buf, g_user_data);
}

const char* log_level_name(LogLevel level) {
  switch (level) {
    case LogLevel::Debug: return "debug";
    case LogLevel::Info: return "info";
    case LogLevel::Warning: return "warning";
    case LogLevel::Error: return "error";
  }
  return "?";
}

}  // namespace tessera
