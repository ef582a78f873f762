// DeviceInfo: what this machine offers and what state it is in (usable CPUs, clusters, caches,
// memory, ISA features, power supplies, thermal state, current load, OpenCL devices), so
// applications and backends can derive option values at run time. Every fact comes from /sys and
// /proc under one root (DeviceProbe), so tests feed fixture trees instead of the machine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tessera/core/span.h"

namespace tessera {

/// Most logical CPUs DeviceInfo tracks (CPU numbers 0..kMaxCpus-1).
inline constexpr uint32_t kMaxCpus = 512;

/// A set of logical CPU numbers.
struct CpuSet {
  uint64_t words[kMaxCpus / 64] = {};
  void add(uint32_t cpu) {
    if (cpu < kMaxCpus) words[cpu / 64] |= uint64_t{1} << (cpu % 64);
  }
  bool has(uint32_t cpu) const {
    return cpu < kMaxCpus && ((words[cpu / 64] >> (cpu % 64)) & 1) != 0;
  }
  uint32_t count() const;
  CpuSet intersect(const CpuSet& other) const;
  bool operator==(const CpuSet& other) const = default;
  /// "0-3,8" (Linux cpulist syntax); "" when empty.
  std::string to_list() const;
  /// Parses Linux cpulist syntax ("0-7,16-23"); false on malformed text.
  static bool parse_list(std::string_view text, CpuSet* out);
};

/// A group of cores of one class (same package and the same capacity or maximum clock).
struct CpuCluster {
  uint32_t first_core = 0;          // index of its first physical core in DeviceInfo's order
  uint32_t cores = 0;               // physical cores (never 0 for a listed cluster)
  uint32_t logical_processors = 0;  // hardware threads
  uint32_t usable_cores = 0;        // physical cores with at least one CPU usable by this process
  uint64_t frequency_hz = 0;        // maximum clock; 0 when unknown
  uint32_t capacity = 0;            // kernel cpu_capacity (1024 = the fastest); 0 when unknown
  uint32_t package = 0;
  const char* vendor = "unknown";   // "intel", "amd", "arm", ...
  bool performance = true;          // in the fast class of cores on this machine
  CpuSet cpus;                      // its logical CPUs
};

/// Per-instance cache sizes in bytes and how many instances exist; 0 bytes = unknown (never
/// detected), shown as "unknown" and left out of JSON.
struct CacheSizes {
  uint32_t l1d_bytes = 0;
  uint32_t l2_bytes = 0;
  uint32_t l3_bytes = 0;
  uint32_t l1d_count = 0;
  uint32_t l2_count = 0;
  uint32_t l3_count = 0;
  /// "sysfs", "cpuid" or "none".
  const char* source = "none";
};

/// Instruction-set features the CPU (and OS) support.
struct IsaFeatures {
  // x86
  bool sse4_2 = false, avx = false, avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vnni = false, avx512_bf16 = false;
  bool amx_tile = false, amx_int8 = false, amx_bf16 = false;
  // Arm
  bool neon = false, neon_fp16 = false, neon_dot = false, arm_bf16 = false, sve = false,
       sve2 = false;
};

/// Memory from /proc/meminfo; 0 = unknown.
struct MemoryInfo {
  uint64_t total_bytes = 0;
  uint64_t available_bytes = 0;
};

enum class BatteryStatus : uint8_t { Unknown, Charging, Discharging, NotCharging, Full };
/// "unknown", "charging", "discharging", "not_charging", "full".
const char* battery_status_name(BatteryStatus status);

/// One /sys/class/power_supply entry of type Battery.
struct BatteryInfo {
  char name[32] = {};
  bool present = true;
  BatteryStatus status = BatteryStatus::Unknown;
  int32_t capacity_percent = -1;  // -1 = unknown
};

/// Power supplies and the power-saving state.
struct PowerInfo {
  static constexpr size_t kMaxBatteries = 4;
  uint32_t num_batteries = 0;
  BatteryInfo batteries[kMaxBatteries];
  int8_t mains_online = -1;        // -1: no mains/USB supply is listed; 0 or 1 otherwise
  char platform_profile[32] = {};  // /sys/firmware/acpi/platform_profile ("" when absent)
  bool power_saver = false;        // a power-saving profile is in effect

  Span<const BatteryInfo> battery_list() const { return {batteries, num_batteries}; }
  /// True when some present battery discharges and no mains supply is online.
  bool on_battery() const;
  /// Lowest capacity of the present batteries; -1 when none or unknown.
  int32_t battery_percent() const;
};

/// The hottest thermal zone and its passive trip point.
struct ThermalInfo {
  bool known = false;                     // at least one zone was readable
  int32_t max_millicelsius = 0;           // hottest zone's temperature
  char zone_type[32] = {};                // its type ("x86_pkg_temp", "cpu-thermal", ...)
  int32_t passive_trip_millicelsius = 0;  // that zone's lowest passive trip; 0 = none
  bool passive_trip_exceeded = false;     // some zone is at or past its passive trip
};

/// How busy the machine is because of other processes.
struct LoadInfo {
  bool known = false;
  /// /proc/loadavg: running tasks, this process's threads included (the fewest of the reads a
  /// load makes, a millisecond apart, before it samples a window).
  uint32_t runnable_tasks = 0;
  double load_average_1m = 0;
  /// CPUs' worth of time other processes used over the sample window, on the CPUs this process
  /// may use (0 = idle machine; 1.0 = one CPU fully busy).
  double busy_cpus = 0;
  double window_ms = 0;  // length of the sample window; 0 = no window was sampled
  /// /proc/loadavg counted one runnable task, the thread reading it, at one of up to five reads a
  /// millisecond apart: no other process was running at that instant, so no window was sampled
  /// (busy_cpus is 0). A process that keeps a CPU busy is runnable at every instant; one that
  /// is not seen at some read is idle at least then.
  bool idle_instant = false;
};

enum class OpenClDeviceType : uint8_t { Cpu, Gpu, Accelerator, Other };

/// "cpu", "gpu", "accelerator", "other".
const char* opencl_device_type_name(OpenClDeviceType type);

struct OpenClDevice {
  char name[96] = {};
  char vendor[64] = {};
  char version[64] = {};
  OpenClDeviceType type = OpenClDeviceType::Other;
  uint32_t compute_units = 0;
  uint64_t global_memory_bytes = 0;
  uint64_t max_work_group_size = 0;
};

struct OpenClPlatform {
  static constexpr size_t kMaxDevices = 8;
  char name[96] = {};
  char vendor[64] = {};
  char version[64] = {};
  uint32_t num_devices = 0;
  OpenClDevice devices[kMaxDevices];
  Span<const OpenClDevice> device_list() const { return {devices, num_devices}; }
};

/// OpenCL platforms found through the ICD loader (libOpenCL.so.1, loaded at run time, so a
/// machine without it still works).
struct OpenClInfo {
  static constexpr size_t kMaxPlatforms = 4;
  bool loader_found = false;
  uint32_t num_platforms = 0;
  OpenClPlatform platforms[kMaxPlatforms];
  char error[128] = {};  // why nothing was found, if so
  Span<const OpenClPlatform> platform_list() const { return {platforms, num_platforms}; }
  /// Number of devices of `type` over all platforms.
  uint32_t count_devices(OpenClDeviceType type) const;
};

/// Where detection reads the machine from.
struct DeviceProbe {
  /// Directory holding sys/ and proc/: "/" is this machine. Another root is a fixture tree (tests
  /// and diagnostics): affinity then comes from <root>/proc/self/status, ISA flags from
  /// <root>/proc/cpuinfo, and CPUID (cache sizes when sysfs has none) from <root>/cpuid.txt
  /// ("LEAF SUBLEAF EAX EBX ECX EDX" in hex per line) instead of the instruction.
  std::string root = "/";
  /// Length of the CPU load sample window in milliseconds (/proc/stat counts 10 ms jiffies);
  /// 0 = no window (runnable tasks from /proc/loadavg only). No window is sampled either when
  /// /proc/loadavg counts no runnable task but the reader (LoadInfo::idle_instant) at one of up
  /// to five reads a millisecond apart (a fixture tree: proc/loadavg, then proc/loadavg.later).
  double load_window_ms = 50;

  bool live() const { return root.empty() || root == "/"; }
  /// "/" unless TESSERA_SYSFS_ROOT is set (documented as for tests and diagnostics).
  static DeviceProbe from_environment();
};

/// Plain data, so tests can build a fake one. DeviceInfo::get() is the detected machine.
struct DeviceInfo {
  static constexpr size_t kMaxClusters = 8;

  /// The machine's info, detected once (thread-safe) from DeviceProbe::from_environment(). Does
  /// not probe OpenCL. Its power, thermal and load fields are those of the first call: use
  /// refresh_state() on a copy for current ones.
  static const DeviceInfo& get();
  /// A fresh detection (no caching).
  static DeviceInfo detect();
  static DeviceInfo detect(const DeviceProbe& probe);

  /// Re-reads what changes while a process runs: power, thermal state, memory and load.
  void refresh_state(const DeviceProbe& probe);

  /// The documented value of num_threads=0 under the `latency` policy: the physical performance
  /// cores this process may use, bounded by its CPU quota (at least 1).
  uint32_t recommended_threads() const;

  Span<const CpuCluster> cluster_list() const { return {clusters, num_clusters}; }

  /// OpenCL platforms and devices; probed on the first call (thread-safe) unless
  /// `opencl_override` is set. Probing loads the ICD loader and its drivers.
  const OpenClInfo& opencl() const;

  /// Whether ISA feature `name` ("avx2", "avx512_bf16", "amx_int8", "neon", ...) is present;
  /// false for unknown names.
  bool has_isa(std::string_view name) const;

  /// A multi-line human-readable summary (OpenCL only if `with_opencl`).
  std::string describe(bool with_opencl = false) const;
  /// One JSON object with every field (unknown values left out; OpenCL only if `with_opencl`).
  std::string to_json(bool with_opencl = false) const;

  char cpu_name[64] = {};
  const char* vendor = "unknown";
  uint32_t online_cpus = 1;         // logical CPUs online on the machine
  uint32_t logical_processors = 1;  // the same (kept for earlier callers)
  uint32_t physical_cores = 1;      // over the online CPUs
  uint32_t performance_cores = 1;   // physical cores of performance clusters
  uint32_t efficiency_cores = 0;
  CpuSet online;         // online CPUs
  CpuSet affinity;       // CPUs this process may run on (affinity mask ∩ online)
  double cpu_quota = 0;  // cgroup CPU bandwidth limit in CPUs; 0 = none
  /// Logical CPUs this process may use: the affinity mask's online CPUs, bounded by the CPU
  /// quota (rounded down, at least 1).
  uint32_t usable_cpus = 1;
  uint32_t usable_performance_cores = 1;  // physical performance cores within the affinity mask
  uint32_t usable_efficiency_cores = 0;
  uint32_t num_clusters = 0;
  CpuCluster clusters[kMaxClusters];
  CacheSizes caches;
  MemoryInfo memory;
  IsaFeatures isa;
  PowerInfo power;
  ThermalInfo thermal;
  LoadInfo load;
  /// Which inputs were found ("sysfs topology", "cpufreq", ...), for diagnostics; one line.
  char notes[160] = {};
  bool cpuinfo_ok = false;  // the cpuinfo library initialised (live machine only)
  const OpenClInfo* opencl_override = nullptr;
};

}  // namespace tessera
