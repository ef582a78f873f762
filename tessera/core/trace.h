// Trace: spans of what the runtime did, on a timeline, for Chrome's trace-event JSON (opens in
// Perfetto and chrome://tracing). An application (or tessera-run --trace) starts a trace,
// loads and executes, stops it and writes the file. While a trace runs, the runtime records
// program and method loads, each delegate's init, each execute, each delegate call and
// portable kernel, and every event a backend reports with its profiling option on (operators,
// primitives, kernels), each with its thread. Without a running trace the cost is one relaxed
// atomic load per span.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/result.h"
#include "tessera/core/status.h"

namespace tessera {

struct TraceEvent {
  std::string name;      // "execute forward", "xnnpack#0", "Conv_3", ...
  std::string category;  // "load", "init", "select", "execute", "delegate", "kernel", "operator"
  double start_us = 0;   // steady clock, microseconds since the trace started
  double dur_us = 0;
  uint32_t tid = 0;    // the recording thread (Linux thread id)
  std::string detail;  // e.g. "backend=xnnpack", "delegate=xnnpack#0"; may be empty
};

class Trace {
 public:
  /// Starts collecting events process-wide. InvalidState if a trace is already running.
  static Status start();
  /// Stops collecting and returns the events in the order they ended. InvalidState if no
  /// trace is running.
  static Result<std::vector<TraceEvent>> stop();
  static bool running();

  /// Chrome trace-event JSON: {"traceEvents": [complete events, "ph": "X"], ...} with the
  /// process and thread names as metadata events.
  static std::string to_chrome_json(const std::vector<TraceEvent>& events);
  /// Writes to_chrome_json to `path` (replaced). AccessFailed naming the path and errno's text.
  static Status write_chrome_json(const std::vector<TraceEvent>& events, const std::string& path);

  /// Microseconds on the trace's clock (steady; 0 = the start of the running trace).
  static double now_us();
  /// Records a finished span; dropped when no trace is running.
  static void record(std::string_view category, std::string_view name, double start_us,
                     double dur_us, std::string_view detail = {});
};

/// Records [construction, destruction) as one span when a trace is running at construction.
class TraceSpan {
 public:
  TraceSpan(const char* category, std::string_view name, std::string_view detail = {});
  ~TraceSpan();
  TraceSpan(const TraceSpan&) = delete;
  TraceSpan& operator=(const TraceSpan&) = delete;

 private:
  bool on_;
  const char* category_;
  std::string name_;
  std::string detail_;
  double start_us_ = 0;
};

}  // namespace tessera
