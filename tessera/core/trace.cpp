#include "tessera/core/trace.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>

#include <nlohmann/json.hpp>

namespace tessera {
namespace {

using Clock = std::chrono::steady_clock;

struct State {
  std::mutex mutex;
  std::vector<TraceEvent> events;
  Clock::time_point origin;
};

State& state() {
  static State* s = new State();  // never destroyed: spans may end during static destruction
  return *s;
}

std::atomic<bool> g_running{false};
std::atomic<int64_t> g_origin_ns{0};

uint32_t thread_id() {
  thread_local const uint32_t tid = static_cast<uint32_t>(::syscall(SYS_gettid));
  return tid;
}

}  // namespace

Status Trace::start() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (g_running.load(std::memory_order_relaxed)) {
    return Status(Error::InvalidState, "a trace is already running: stop it first");
  }
  s.events.clear();
  s.origin = Clock::now();
  g_origin_ns.store(s.origin.time_since_epoch().count(), std::memory_order_relaxed);
  g_running.store(true, std::memory_order_release);
  return Status::ok();
}

Result<std::vector<TraceEvent>> Trace::stop() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!g_running.load(std::memory_order_relaxed)) {
    return Status(Error::InvalidState, "no trace is running: start one first");
  }
  g_running.store(false, std::memory_order_release);
  std::vector<TraceEvent> out;
  out.swap(s.events);
  return out;
}

bool Trace::running() {
  return g_running.load(std::memory_order_acquire);
}

double Trace::now_us() {
  const int64_t now = Clock::now().time_since_epoch().count();
  const int64_t origin = g_origin_ns.load(std::memory_order_relaxed);
  return std::chrono::duration<double, std::micro>(Clock::duration(now - origin)).count();
}

void Trace::record(std::string_view category, std::string_view name, double start_us, double dur_us,
                   std::string_view detail) {
  if (!running()) return;
  TraceEvent e;
  e.name.assign(name);
  e.category.assign(category);
  e.start_us = start_us;
  e.dur_us = dur_us < 0 ? 0 : dur_us;
  e.tid = thread_id();
  e.detail.assign(detail);
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (g_running.load(std::memory_order_relaxed)) s.events.push_back(std::move(e));
}

std::string Trace::to_chrome_json(const std::vector<TraceEvent>& events) {
  const int pid = static_cast<int>(::getpid());
  nlohmann::json list = nlohmann::json::array();
  list.push_back({{"name", "process_name"},
                  {"ph", "M"},
                  {"pid", pid},
                  {"tid", 0},
                  {"args", {{"name", "tessera"}}}});
  std::vector<uint32_t> threads;
  for (const TraceEvent& e : events) {
    if (std::find(threads.begin(), threads.end(), e.tid) == threads.end()) threads.push_back(e.tid);
  }
  for (size_t i = 0; i < threads.size(); ++i) {
    list.push_back(
        {{"name", "thread_name"},
         {"ph", "M"},
         {"pid", pid},
         {"tid", threads[i]},
         {"args", {{"name", i == 0 ? std::string("main") : "thread " + std::to_string(i)}}}});
  }
  for (const TraceEvent& e : events) {
    nlohmann::json j = {{"name", e.name},  {"cat", e.category}, {"ph", "X"},   {"ts", e.start_us},
                        {"dur", e.dur_us}, {"pid", pid},        {"tid", e.tid}};
    if (!e.detail.empty()) j["args"] = {{"detail", e.detail}};
    list.push_back(std::move(j));
  }
  nlohmann::json doc = {{"traceEvents", std::move(list)}, {"displayTimeUnit", "ms"}};
  return doc.dump(1);
}

Status Trace::write_chrome_json(const std::vector<TraceEvent>& events, const std::string& path) {
  const std::string text = to_chrome_json(events);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return Status::error(Error::AccessFailed, "cannot write the trace to '%s': %s", path.c_str(),
                         std::strerror(errno));
  }
  const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const int saved = errno;
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed) {
    return Status::error(Error::AccessFailed, "cannot write the trace to '%s': %s", path.c_str(),
                         std::strerror(written ? errno : saved));
  }
  return Status::ok();
}

TraceSpan::TraceSpan(const char* category, std::string_view name, std::string_view detail)
    : on_(Trace::running()), category_(category) {
  if (!on_) return;
  name_.assign(name);
  detail_.assign(detail);
  start_us_ = Trace::now_us();
}

TraceSpan::~TraceSpan() {
  if (!on_) return;
  Trace::record(category_, name_, start_us_, Trace::now_us() - start_us_, detail_);
}

}  // namespace tessera
