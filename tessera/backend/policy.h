// Load policies: what a load optimises for (latency, balance, power), and the decision that
// turns a policy and the machine's state (DeviceInfo) into the values backends derive for
// options left at `auto`: thread counts, yielding workers, load-time-expensive transforms.
#pragma once

#include <cstdint>
#include <string_view>

#include "tessera/core/result.h"

namespace tessera {

struct DeviceInfo;

enum class Policy : uint8_t {
  Auto,        // power_saver on low battery, a power-saving profile or past a thermal trip;
               // latency otherwise, with fewer threads when other processes keep CPUs busy
  Latency,     // every usable performance core, workers spin between runs
  Balanced,    // every usable performance core, workers sleep between runs
  PowerSaver,  // one thread, workers sleep, no load-time-expensive transforms (Winograd)
};

/// "auto", "latency", "balanced", "power_saver".
const char* policy_name(Policy policy);
/// Parses a policy name; InvalidArgument listing the names otherwise.
Result<Policy> parse_policy(std::string_view name);

/// The process-wide policy of loads that set none (initially Auto). Thread-safe.
void set_default_policy(Policy policy);
Policy default_policy();

/// Battery level below which `auto` saves power (percent, while discharging).
inline constexpr int32_t kAutoPowerSaverBatteryPercent = 30;

/// What a load runs under, decided once per load and read by every backend's init.
struct PolicyDecision {
  Policy requested = Policy::Auto;
  Policy effective = Policy::Latency;
  char reason[192] = {};  // why `effective`, e.g. "auto: on battery at 15% (below 30%)"
  /// The value of num_threads = 0 for CPU backends, and why.
  uint32_t threads = 1;
  char threads_reason[192] = {};
  /// Workers sleep between runs instead of spinning (XNNPACK's yield_workers, OpenMP passive).
  bool yield_workers = false;
  /// CPUs' worth of other processes' work that made `auto` leave CPUs to them (0 = none did):
  /// `threads` and `yield_workers` are then not what this policy gives an unloaded machine.
  double others_busy_cpus = 0;
  /// `threads` and `yield_workers` as they are when no other process keeps CPUs busy. The
  /// selection cache keys by these, so that a choice remembered on an unloaded machine is not
  /// forgotten, and measured again, because a neighbour was busy at one load.
  uint32_t unloaded_threads = 1;
  bool unloaded_yield_workers = false;
  /// Load-time-expensive work is allowed: oneDNN's Winograd weight transform, OpenCL's local
  /// work size search.
  bool expensive_load_transforms = true;
};

/// Decides for `requested` on `device` (its power, thermal and load fields as they are: refresh
/// them first for current values). Pure: no I/O.
PolicyDecision decide_policy(Policy requested, const DeviceInfo& device);

/// Methods whose activations and weights together stay below this many bytes run on one thread:
/// their operators are so short that waking workers costs more than it saves. Measured with
/// bench/policy (2 usable CPUs): a 2-layer MLP, a one-layer transformer and a 15-delegate op mix
/// (4-480 KiB of activations, 20-130 KiB of weights) ran 1.4-5x slower at 2 threads;
/// ShuffleNetV2 x0.5 (5.7 MiB + 5.2 MiB) and larger gained.
inline constexpr uint64_t kSmallMethodBytes = uint64_t{1} << 20;

/// Applies kSmallMethodBytes to `decision` for a method of `work_bytes` (activation arena plus
/// constants): one thread (and one unloaded thread), with the reason appended. No change for
/// larger methods or 1 thread.
void limit_threads_for_small_methods(uint64_t work_bytes, PolicyDecision* decision);

/// Decides on this machine now: DeviceInfo::get() with its power, thermal and load state
/// re-read (the CPU load is sampled only for `auto` on more than one usable CPU).
PolicyDecision decide_policy_now(Policy requested);

}  // namespace tessera
