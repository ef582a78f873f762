#include "tessera/backend/device_info.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>
#include <thread>

#include <cpuinfo.h>

#include "tessera/backend/device_probe.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

namespace tessera {
namespace {

const char* vendor_name(enum cpuinfo_vendor v) {
  switch (v) {
    case cpuinfo_vendor_intel:
      return "intel";
    case cpuinfo_vendor_amd:
      return "amd";
    case cpuinfo_vendor_arm:
      return "arm";
    case cpuinfo_vendor_qualcomm:
      return "qualcomm";
    case cpuinfo_vendor_apple:
      return "apple";
    case cpuinfo_vendor_samsung:
      return "samsung";
    case cpuinfo_vendor_nvidia:
      return "nvidia";
    case cpuinfo_vendor_huawei:
      return "huawei";
    case cpuinfo_vendor_hygon:
      return "hygon";
    default:
      return "unknown";
  }
}

void copy_text(char* dst, size_t size, const char* src) {
  std::snprintf(dst, size, "%s", src != nullptr ? src : "");
}

#if defined(__x86_64__) || defined(__i386__)
// AMX is newer than the cpuinfo release Debian ships: read CPUID leaf 7 and XCR0 directly.
void detect_amx(IsaFeatures* isa) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return;
  bool tile = (edx >> 24) & 1, int8 = (edx >> 25) & 1, bf16 = (edx >> 22) & 1;
  unsigned a1 = 0, b1 = 0, c1 = 0, d1 = 0;
  if (!__get_cpuid(1, &a1, &b1, &c1, &d1) || !((c1 >> 27) & 1)) return;  // no OSXSAVE
  uint32_t xcr0_lo = 0, xcr0_hi = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  bool os_tiles = ((xcr0_lo >> 17) & 3) == 3;  // XTILECFG and XTILEDATA enabled
  isa->amx_tile = tile && os_tiles;
  isa->amx_int8 = int8 && os_tiles;
  isa->amx_bf16 = bf16 && os_tiles;
}
#endif

// The live machine's ISA (with the OS's support for the register state) and, as a fallback,
// its name and vendor, from the cpuinfo library. Core counts come from sysfs, not from it.
void detect_isa_live(DeviceInfo* info) {
  if (!cpuinfo_initialize()) return;
  info->cpuinfo_ok = true;
  if (info->cpu_name[0] == '\0' && cpuinfo_get_packages_count() > 0) {
    copy_text(info->cpu_name, sizeof info->cpu_name, cpuinfo_get_package(0)->name);
  }
  if (std::strcmp(info->vendor, "unknown") == 0 && cpuinfo_get_clusters_count() > 0) {
    info->vendor = vendor_name(cpuinfo_get_cluster(0)->vendor);
  }
  IsaFeatures& isa = info->isa;
#if CPUINFO_ARCH_X86 || CPUINFO_ARCH_X86_64
  isa.sse4_2 = cpuinfo_has_x86_sse4_2();
  isa.avx = cpuinfo_has_x86_avx();
  isa.avx2 = cpuinfo_has_x86_avx2();
  isa.fma = cpuinfo_has_x86_fma3();
  isa.f16c = cpuinfo_has_x86_f16c();
  isa.avx512f = cpuinfo_has_x86_avx512f();
  isa.avx512bw = cpuinfo_has_x86_avx512bw();
  isa.avx512vnni = cpuinfo_has_x86_avx512vnni();
  isa.avx512_bf16 = cpuinfo_has_x86_avx512bf16();
  detect_amx(&isa);
#endif
#if CPUINFO_ARCH_ARM || CPUINFO_ARCH_ARM64
  isa.neon = cpuinfo_has_arm_neon();
  isa.neon_fp16 = cpuinfo_has_arm_neon_fp16_arith();
  isa.neon_dot = cpuinfo_has_arm_neon_dot();
  isa.arm_bf16 = cpuinfo_has_arm_bf16();
  isa.sve = cpuinfo_has_arm_sve();
  isa.sve2 = cpuinfo_has_arm_sve2();
#endif
}

// --- OpenCL through the ICD loader, resolved at run time --------------------------------------

struct OpenClApi {
  decltype(&clGetPlatformIDs) get_platform_ids = nullptr;
  decltype(&clGetPlatformInfo) get_platform_info = nullptr;
  decltype(&clGetDeviceIDs) get_device_ids = nullptr;
  decltype(&clGetDeviceInfo) get_device_info = nullptr;
};

template <typename Fn>
bool resolve(void* lib, const char* name, Fn* out) {
  *out = reinterpret_cast<Fn>(dlsym(lib, name));
  return *out != nullptr;
}

// Reads a string property into `out`, truncated to fit (OpenCL fails a too-small buffer).
template <typename Fn, typename Object>
void read_cl_string(Fn fn, Object object, cl_uint param, char* out, size_t out_size) {
  char buffer[1024] = {};
  if (fn(object, param, sizeof buffer - 1, buffer, nullptr) != CL_SUCCESS) buffer[0] = '\0';
  copy_text(out, out_size, buffer);
}

void probe_opencl(OpenClInfo* info) {
  // Kept loaded for the life of the process: drivers do not all survive unloading.
  void* lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) lib = dlopen("libOpenCL.so", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    copy_text(info->error, sizeof info->error, "no OpenCL ICD loader (libOpenCL.so.1)");
    return;
  }
  OpenClApi api;
  if (!resolve(lib, "clGetPlatformIDs", &api.get_platform_ids) ||
      !resolve(lib, "clGetPlatformInfo", &api.get_platform_info) ||
      !resolve(lib, "clGetDeviceIDs", &api.get_device_ids) ||
      !resolve(lib, "clGetDeviceInfo", &api.get_device_info)) {
    copy_text(info->error, sizeof info->error, "the OpenCL loader lacks the platform queries");
    return;
  }
  info->loader_found = true;
  cl_platform_id platforms[OpenClInfo::kMaxPlatforms];
  cl_uint count = 0;
  cl_int err = api.get_platform_ids(OpenClInfo::kMaxPlatforms, platforms, &count);
  if (err != CL_SUCCESS || count == 0) {
    std::snprintf(info->error, sizeof info->error, "no OpenCL platform (clGetPlatformIDs: %d)",
                  err);
    return;
  }
  info->num_platforms = std::min<cl_uint>(count, OpenClInfo::kMaxPlatforms);
  for (uint32_t p = 0; p < info->num_platforms; ++p) {
    OpenClPlatform& out = info->platforms[p];
    read_cl_string(api.get_platform_info, platforms[p], CL_PLATFORM_NAME, out.name,
                   sizeof out.name);
    read_cl_string(api.get_platform_info, platforms[p], CL_PLATFORM_VENDOR, out.vendor,
                   sizeof out.vendor);
    read_cl_string(api.get_platform_info, platforms[p], CL_PLATFORM_VERSION, out.version,
                   sizeof out.version);
    cl_device_id devices[OpenClPlatform::kMaxDevices];
    cl_uint num_devices = 0;
    if (api.get_device_ids(platforms[p], CL_DEVICE_TYPE_ALL, OpenClPlatform::kMaxDevices, devices,
                           &num_devices) != CL_SUCCESS) {
      continue;
    }
    out.num_devices = std::min<cl_uint>(num_devices, OpenClPlatform::kMaxDevices);
    for (uint32_t d = 0; d < out.num_devices; ++d) {
      OpenClDevice& dev = out.devices[d];
      read_cl_string(api.get_device_info, devices[d], CL_DEVICE_NAME, dev.name, sizeof dev.name);
      read_cl_string(api.get_device_info, devices[d], CL_DEVICE_VENDOR, dev.vendor,
                     sizeof dev.vendor);
      read_cl_string(api.get_device_info, devices[d], CL_DEVICE_VERSION, dev.version,
                     sizeof dev.version);
      cl_device_type type = 0;
      api.get_device_info(devices[d], CL_DEVICE_TYPE, sizeof type, &type, nullptr);
      dev.type = (type & CL_DEVICE_TYPE_GPU)           ? OpenClDeviceType::Gpu
                 : (type & CL_DEVICE_TYPE_ACCELERATOR) ? OpenClDeviceType::Accelerator
                 : (type & CL_DEVICE_TYPE_CPU)         ? OpenClDeviceType::Cpu
                                                       : OpenClDeviceType::Other;
      cl_uint units = 0;
      api.get_device_info(devices[d], CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, nullptr);
      dev.compute_units = units;
      cl_ulong memory = 0;
      api.get_device_info(devices[d], CL_DEVICE_GLOBAL_MEM_SIZE, sizeof memory, &memory, nullptr);
      dev.global_memory_bytes = memory;
      size_t group = 0;
      api.get_device_info(devices[d], CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof group, &group, nullptr);
      dev.max_work_group_size = group;
    }
  }
}

}  // namespace

const char* opencl_device_type_name(OpenClDeviceType type) {
  switch (type) {
    case OpenClDeviceType::Cpu:
      return "cpu";
    case OpenClDeviceType::Gpu:
      return "gpu";
    case OpenClDeviceType::Accelerator:
      return "accelerator";
    case OpenClDeviceType::Other:
      return "other";
  }
  return "?";
}

uint32_t OpenClInfo::count_devices(OpenClDeviceType type) const {
  uint32_t n = 0;
  for (const OpenClPlatform& p : platform_list()) {
    for (const OpenClDevice& d : p.device_list()) n += d.type == type ? 1 : 0;
  }
  return n;
}

DeviceProbe DeviceProbe::from_environment() {
  DeviceProbe probe;
  if (const char* root = std::getenv("TESSERA_SYSFS_ROOT"); root != nullptr && *root != '\0') {
    probe.root = root;
  }
  return probe;
}

DeviceInfo DeviceInfo::detect() {
  return detect(DeviceProbe::from_environment());
}

namespace {

// What changes while a process runs, the usable CPUs aside: memory, power, thermal, load.
void read_state(const DeviceProbe& probe, DeviceInfo* info) {
  internal::probe_memory(probe, &info->memory);
  internal::probe_power(probe, &info->power);
  internal::probe_thermal(probe, &info->thermal);
  internal::probe_load(probe, info->affinity.count() > 0 ? info->affinity : info->online,
                       &info->load);
}

}  // namespace

DeviceInfo DeviceInfo::detect(const DeviceProbe& probe) {
  DeviceInfo info;
  internal::probe_cpuinfo_text(probe, &info);
  if (probe.live()) detect_isa_live(&info);
  internal::probe_cpus(probe, &info);
  internal::probe_caches(probe, &info);
  DeviceProbe no_window = probe;
  no_window.load_window_ms = 0;  // detection does not wait; a load samples when it decides
  read_state(no_window, &info);
  return info;
}

void DeviceInfo::refresh_state(const DeviceProbe& probe) {
  // An application may change its affinity or cgroup while it runs (taskset -p, a container's
  // new quota): the usable CPUs are re-read when either moved.
  CpuSet now = internal::read_affinity(probe).intersect(online);
  if (now.count() == 0) now = online;
  if (now != affinity || internal::read_cpu_quota(probe) != cpu_quota) {
    internal::probe_cpus(probe, this);
  }
  read_state(probe, this);
}

const DeviceInfo& DeviceInfo::get() {
  static const DeviceInfo info = detect();
  return info;
}

uint32_t DeviceInfo::recommended_threads() const {
  const uint32_t cores =
      usable_performance_cores > 0 ? usable_performance_cores : usable_efficiency_cores;
  return std::max(1u, std::min(cores, usable_cpus));
}

uint32_t CpuSet::count() const {
  uint32_t n = 0;
  for (uint64_t w : words) n += static_cast<uint32_t>(__builtin_popcountll(w));
  return n;
}

CpuSet CpuSet::intersect(const CpuSet& other) const {
  CpuSet out;
  for (size_t i = 0; i < std::size(words); ++i) out.words[i] = words[i] & other.words[i];
  return out;
}

std::string CpuSet::to_list() const {
  std::string out;
  for (uint32_t c = 0; c < kMaxCpus;) {
    if (!has(c)) {
      ++c;
      continue;
    }
    uint32_t last = c;
    while (last + 1 < kMaxCpus && has(last + 1)) ++last;
    if (!out.empty()) out += ',';
    out += std::to_string(c);
    if (last > c) out += '-' + std::to_string(last);
    c = last + 1;
  }
  return out;
}

bool CpuSet::parse_list(std::string_view text, CpuSet* out) {
  CpuSet set;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  size_t i = 0;
  auto number = [&](uint32_t* v) {
    if (i >= text.size() || text[i] < '0' || text[i] > '9') return false;
    uint64_t n = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      n = n * 10 + static_cast<uint64_t>(text[i++] - '0');
      if (n >= kMaxCpus) return false;
    }
    *v = static_cast<uint32_t>(n);
    return true;
  };
  while (i < text.size()) {
    uint32_t first = 0, last = 0;
    if (!number(&first)) return false;
    last = first;
    if (i < text.size() && text[i] == '-') {
      ++i;
      if (!number(&last) || last < first) return false;
    }
    for (uint32_t c = first; c <= last; ++c) set.add(c);
    if (i < text.size()) {
      if (text[i] != ',') return false;
      ++i;
    }
  }
  *out = set;
  return true;
}

const char* battery_status_name(BatteryStatus status) {
  switch (status) {
    case BatteryStatus::Unknown:
      return "unknown";
    case BatteryStatus::Charging:
      return "charging";
    case BatteryStatus::Discharging:
      return "discharging";
    case BatteryStatus::NotCharging:
      return "not_charging";
    case BatteryStatus::Full:
      return "full";
  }
  return "unknown";
}

bool PowerInfo::on_battery() const {
  if (mains_online == 1) return false;
  for (const BatteryInfo& b : battery_list()) {
    if (b.present && b.status == BatteryStatus::Discharging) return true;
  }
  return false;
}

int32_t PowerInfo::battery_percent() const {
  int32_t lowest = -1;
  for (const BatteryInfo& b : battery_list()) {
    if (!b.present || b.capacity_percent < 0) continue;
    if (lowest < 0 || b.capacity_percent < lowest) lowest = b.capacity_percent;
  }
  return lowest;
}

const OpenClInfo& DeviceInfo::opencl() const {
  if (opencl_override != nullptr) return *opencl_override;
  static const OpenClInfo* probed = [] {
    auto* info = new OpenClInfo;  // lives for the process, like the loaded drivers
    probe_opencl(info);
    return info;
  }();
  return *probed;
}

bool DeviceInfo::has_isa(std::string_view name) const {
  struct Entry {
    const char* name;
    bool IsaFeatures::*flag;
  };
  static constexpr Entry kFlags[] = {
      {"sse4_2", &IsaFeatures::sse4_2},
      {"avx", &IsaFeatures::avx},
      {"avx2", &IsaFeatures::avx2},
      {"fma", &IsaFeatures::fma},
      {"f16c", &IsaFeatures::f16c},
      {"avx512f", &IsaFeatures::avx512f},
      {"avx512bw", &IsaFeatures::avx512bw},
      {"avx512vnni", &IsaFeatures::avx512vnni},
      {"avx512_bf16", &IsaFeatures::avx512_bf16},
      {"amx_tile", &IsaFeatures::amx_tile},
      {"amx_int8", &IsaFeatures::amx_int8},
      {"amx_bf16", &IsaFeatures::amx_bf16},
      {"neon", &IsaFeatures::neon},
      {"neon_fp16", &IsaFeatures::neon_fp16},
      {"neon_dot", &IsaFeatures::neon_dot},
      {"arm_bf16", &IsaFeatures::arm_bf16},
      {"sve", &IsaFeatures::sve},
      {"sve2", &IsaFeatures::sve2},
  };
  for (const Entry& e : kFlags) {
    if (name == e.name) return isa.*(e.flag);
  }
  return false;
}

}  // namespace tessera
