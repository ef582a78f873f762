// Internal: the readers behind DeviceInfo. Each reads one part of /sys or /proc under a probe's
// root (or a fixture tree) and fills its part of DeviceInfo; the parsers of file contents are
// separate so tests can feed them text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/backend/device_info.h"

namespace tessera::internal {

/// Reads <root>/<path> whole; false when it cannot be read.
bool read_text(const DeviceProbe& probe, std::string_view path, std::string* out);

/// Online CPUs, topology, clusters, performance/efficiency split, affinity and CPU quota.
void probe_cpus(const DeviceProbe& probe, DeviceInfo* info);
/// Cache sizes from sysfs, else CPUID (live: the instruction; fixture: <root>/cpuid.txt).
void probe_caches(const DeviceProbe& probe, DeviceInfo* info);
/// CPU name, vendor and (for fixture trees) ISA flags from /proc/cpuinfo.
void probe_cpuinfo_text(const DeviceProbe& probe, DeviceInfo* info);
void probe_memory(const DeviceProbe& probe, MemoryInfo* out);
void probe_power(const DeviceProbe& probe, PowerInfo* out);
void probe_thermal(const DeviceProbe& probe, ThermalInfo* out);
/// /proc/loadavg, and busy CPUs from two /proc/stat samples over the probe's window (live: a
/// remembered earlier sample when recent enough, else a short sleep; fixture: proc/stat and
/// proc/stat.later, with proc/self/stat and proc/self/stat.later for this process's share).
void probe_load(const DeviceProbe& probe, const CpuSet& usable, LoadInfo* out);

/// The CPUs this process may run on (live: sched_getaffinity; fixture: Cpus_allowed_list of
/// <root>/proc/self/status); empty when unknown.
CpuSet read_affinity(const DeviceProbe& probe);

/// The CPU bandwidth limit of this process's cgroup (v2 cpu.max or v1 cfs quota/period, the
/// smallest along the path to the root), in CPUs; 0 = none.
double read_cpu_quota(const DeviceProbe& probe);

/// Per-CPU jiffies from /proc/stat text: busy (user, nice, system, irq, softirq, steal) and
/// total (busy + idle + iowait), indexed by CPU number.
struct CpuTimes {
  std::vector<uint64_t> busy, total;
};
CpuTimes parse_proc_stat(std::string_view text);
/// utime + stime (fields 14 and 15) of /proc/<pid>/stat text; 0 when malformed.
uint64_t parse_self_ticks(std::string_view text);
/// CPUs' worth of time spent by others on `cpus` between two samples: the busy jiffies of
/// those CPUs minus this process's own, over the mean elapsed jiffies. 0 when nothing elapsed.
double busy_cpus_between(const CpuTimes& before, const CpuTimes& after, uint64_t self_before,
                         uint64_t self_after, const CpuSet& cpus);

/// Parses a sysfs cache size ("32K", "1024K", "8M", "512"): bytes, 0 when malformed.
uint64_t parse_cache_size(std::string_view text);

}  // namespace tessera::internal
