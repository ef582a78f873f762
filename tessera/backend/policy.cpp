#include "tessera/backend/policy.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "tessera/backend/device_info.h"

namespace tessera {
namespace {

std::atomic<Policy> g_default_policy{Policy::Auto};

// "2 usable performance cores" with what bounded them.
void describe_cores(const DeviceInfo& d, char* out, size_t size) {
  const bool efficiency_only = d.usable_performance_cores == 0 && d.usable_efficiency_cores > 0;
  int n = std::snprintf(out, size, "%u usable %s core%s", d.recommended_threads(),
                        efficiency_only ? "efficiency" : "performance",
                        d.recommended_threads() == 1 ? "" : "s");
  if (n < 0 || static_cast<size_t>(n) >= size) return;
  if (d.affinity.count() < d.online_cpus) {
    n += std::snprintf(out + n, size - static_cast<size_t>(n), ", affinity %s of %u CPUs",
                       d.affinity.to_list().c_str(), d.online_cpus);
  }
  if (n < 0 || static_cast<size_t>(n) >= size) return;
  if (d.cpu_quota > 0) {
    std::snprintf(out + n, size - static_cast<size_t>(n), ", cpu quota %.2f", d.cpu_quota);
  }
}

}  // namespace

const char* policy_name(Policy policy) {
  switch (policy) {
    case Policy::Auto:
      return "auto";
    case Policy::Latency:
      return "latency";
    case Policy::Balanced:
      return "balanced";
    case Policy::PowerSaver:
      return "power_saver";
  }
  return "?";
}

Result<Policy> parse_policy(std::string_view name) {
  for (Policy p : {Policy::Auto, Policy::Latency, Policy::Balanced, Policy::PowerSaver}) {
    if (name == policy_name(p)) return p;
  }
  return Status::error(Error::InvalidArgument,
                       "unknown policy '%.*s' (expected auto, latency, balanced or power_saver)",
                       static_cast<int>(name.size()), name.data());
}

void set_default_policy(Policy policy) {
  g_default_policy.store(policy);
}
Policy default_policy() {
  return g_default_policy.load();
}

PolicyDecision decide_policy(Policy requested, const DeviceInfo& device) {
  PolicyDecision d;
  d.requested = requested;
  char cores[128];
  describe_cores(device, cores, sizeof cores);
  Policy effective = requested;
  double busy = 0;
  if (requested == Policy::Auto) {
    const int32_t percent = device.power.battery_percent();
    if (device.power.on_battery() && percent >= 0 && percent < kAutoPowerSaverBatteryPercent) {
      effective = Policy::PowerSaver;
      std::snprintf(d.reason, sizeof d.reason, "auto: on battery at %d%% (below %d%%)", percent,
                    kAutoPowerSaverBatteryPercent);
    } else if (device.power.power_saver) {
      effective = Policy::PowerSaver;
      std::snprintf(d.reason, sizeof d.reason, "auto: platform profile '%s' saves power",
                    device.power.platform_profile);
    } else if (device.thermal.passive_trip_exceeded) {
      effective = Policy::PowerSaver;
      std::snprintf(d.reason, sizeof d.reason, "auto: %s at %.1f C, past a passive trip point",
                    device.thermal.zone_type[0] ? device.thermal.zone_type : "a thermal zone",
                    device.thermal.max_millicelsius / 1000.0);
    } else {
      effective = Policy::Latency;
      busy = device.load.window_ms > 0 ? device.load.busy_cpus : 0;
      if (busy >= 0.5) {
        std::snprintf(d.reason, sizeof d.reason,
                      "auto: latency, %.1f CPUs busy with other processes", busy);
      } else {
        std::snprintf(
            d.reason, sizeof d.reason, "auto: latency (%s%s)",
            device.power.on_battery() ? "on battery above the threshold" : "not on battery",
            device.thermal.known ? ", below thermal trips" : "");
      }
    }
  } else {
    std::snprintf(d.reason, sizeof d.reason, "%s (requested)", policy_name(requested));
  }
  d.effective = effective;
  const uint32_t all = device.recommended_threads();
  switch (effective) {
    case Policy::Auto:  // not reached: auto always resolves above
    case Policy::Latency: {
      d.threads = all;
      d.yield_workers = false;
      d.unloaded_threads = all;
      d.unloaded_yield_workers = false;
      if (busy >= 0.5) {
        // Leave the CPUs others keep busy: threads for the free ones only, and sleeping
        // workers, so two threads never share one free CPU.
        const double free_cpus = static_cast<double>(device.usable_cpus) - busy;
        const auto fit = static_cast<uint32_t>(std::max(1.0, std::floor(free_cpus + 0.5)));
        d.threads = std::min(all, fit);
        d.yield_workers = true;
        d.others_busy_cpus = busy;
        std::snprintf(d.threads_reason, sizeof d.threads_reason,
                      "%s, %.1f busy with other processes, policy latency (auto)", cores, busy);
      } else {
        std::snprintf(d.threads_reason, sizeof d.threads_reason, "%s, policy latency%s", cores,
                      requested == Policy::Auto ? " (auto)" : "");
      }
      break;
    }
    case Policy::Balanced:
      d.threads = d.unloaded_threads = all;
      d.yield_workers = d.unloaded_yield_workers = true;
      std::snprintf(d.threads_reason, sizeof d.threads_reason, "%s, policy balanced", cores);
      break;
    case Policy::PowerSaver:
      d.threads = d.unloaded_threads = 1;
      d.yield_workers = d.unloaded_yield_workers = true;
      d.expensive_load_transforms = false;
      std::snprintf(d.threads_reason, sizeof d.threads_reason,
                    "1 thread of %u, policy power_saver%s", all,
                    requested == Policy::Auto ? " (auto)" : "");
      break;
  }
  return d;
}

void limit_threads_for_small_methods(uint64_t work_bytes, PolicyDecision* decision) {
  if (work_bytes < kSmallMethodBytes) decision->unloaded_threads = 1;
  if (decision->threads <= 1 || work_bytes >= kSmallMethodBytes) return;
  const size_t used = std::strlen(decision->threads_reason);
  std::snprintf(decision->threads_reason + used, sizeof decision->threads_reason - used,
                "; 1 for a small method (%llu KiB of activations and weights)",
                static_cast<unsigned long long>(work_bytes >> 10));
  decision->threads = 1;
}

PolicyDecision decide_policy_now(Policy requested) {
  DeviceInfo current = DeviceInfo::get();
  DeviceProbe probe = DeviceProbe::from_environment();
  if (requested != Policy::Auto || current.usable_cpus <= 1) probe.load_window_ms = 0;
  current.refresh_state(probe);
  return decide_policy(requested, current);
}

}  // namespace tessera
