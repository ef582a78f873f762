// DeviceInfo: what this machine offers (cores and clusters, caches, ISA features, OpenCL
// devices), so applications and backends can derive option values at run time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tessera/core/span.h"

namespace tessera {

/// A group of cores with the same microarchitecture and clock (cpuinfo's cluster).
struct CpuCluster {
  uint32_t first_core = 0;          // index of its first physical core
  uint32_t cores = 0;               // physical cores
  uint32_t logical_processors = 0;  // hardware threads
  uint64_t frequency_hz = 0;        // base clock; 0 when unknown
  uint32_t uarch = 0;               // cpuinfo_uarch value; 0 when unknown
  const char* vendor = "unknown";   // "intel", "amd", "arm", ...
  bool performance = true;          // in the fastest class of clusters on this machine
};

/// Per-instance cache sizes in bytes (0 when unknown) and how many instances exist.
struct CacheSizes {
  uint32_t l1d_bytes = 0;
  uint32_t l2_bytes = 0;
  uint32_t l3_bytes = 0;
  uint32_t l1d_count = 0;
  uint32_t l2_count = 0;
  uint32_t l3_count = 0;
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

/// Plain data, so tests can build a fake one. DeviceInfo::get() is the detected machine.
struct DeviceInfo {
  static constexpr size_t kMaxClusters = 8;

  /// The machine's info, detected once (thread-safe) with cpuinfo. Does not probe OpenCL.
  static const DeviceInfo& get();
  /// A fresh detection (no caching).
  static DeviceInfo detect();

  /// The documented value of num_threads=0 ("auto"): the performance cores (at least 1).
  uint32_t recommended_threads() const;

  Span<const CpuCluster> cluster_list() const { return {clusters, num_clusters}; }

  /// OpenCL platforms and devices; probed on the first call (thread-safe) unless
  /// `opencl_override` is set. Probing loads the ICD loader and its drivers.
  const OpenClInfo& opencl() const;

  /// Whether ISA feature `name` ("avx2", "avx512_bf16", "amx_int8", "neon", ...) is present;
  /// false for unknown names.
  bool has_isa(std::string_view name) const;

  /// A multi-line human-readable summary (CPU part; OpenCL only if `with_opencl`).
  std::string describe(bool with_opencl = false) const;

  char cpu_name[64] = {};
  uint32_t logical_processors = 1;
  uint32_t physical_cores = 1;
  uint32_t performance_cores = 1;
  uint32_t efficiency_cores = 0;
  uint32_t num_clusters = 0;
  CpuCluster clusters[kMaxClusters];
  CacheSizes caches;
  IsaFeatures isa;
  bool cpuinfo_ok = false;  // false: core counts come from std::thread only
  const OpenClInfo* opencl_override = nullptr;
};

}  // namespace tessera
