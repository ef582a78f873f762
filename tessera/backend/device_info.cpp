#include "tessera/backend/device_info.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include <cpuinfo.h>

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

// Number of CPUs in a Linux cpulist file ("0-7,16-23"); 0 if absent or empty.
uint32_t count_cpulist(const char* path) {
  std::FILE* f = std::fopen(path, "r");
  if (f == nullptr) return 0;
  char text[256] = {};
  size_t n = std::fread(text, 1, sizeof text - 1, f);
  std::fclose(f);
  text[n] = '\0';
  uint32_t count = 0;
  for (char* p = text; *p != '\0' && *p != '\n';) {
    char* end = nullptr;
    unsigned long first = std::strtoul(p, &end, 10);
    if (end == p) break;
    unsigned long last = first;
    if (*end == '-') {
      p = end + 1;
      last = std::strtoul(p, &end, 10);
    }
    if (last >= first) count += static_cast<uint32_t>(last - first + 1);
    p = *end == ',' ? end + 1 : end;
  }
  return count;
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

void detect_cpu(DeviceInfo* info) {
  unsigned hw = std::thread::hardware_concurrency();
  info->logical_processors = hw > 0 ? hw : 1;
  info->physical_cores = info->logical_processors;
  info->performance_cores = info->physical_cores;
  if (!cpuinfo_initialize()) return;
  info->cpuinfo_ok = true;
  if (cpuinfo_get_packages_count() > 0)
    copy_text(info->cpu_name, sizeof info->cpu_name, cpuinfo_get_package(0)->name);
  info->logical_processors = std::max(1u, cpuinfo_get_processors_count());
  info->physical_cores = std::max(1u, cpuinfo_get_cores_count());

  uint64_t fastest = 0;
  uint32_t n = std::min<uint32_t>(cpuinfo_get_clusters_count(), DeviceInfo::kMaxClusters);
  for (uint32_t i = 0; i < n; ++i) {
    const cpuinfo_cluster* c = cpuinfo_get_cluster(i);
    CpuCluster& out = info->clusters[i];
    out.first_core = c->core_start;
    out.cores = c->core_count;
    out.logical_processors = c->processor_count;
    out.frequency_hz = c->frequency;
    out.uarch = static_cast<uint32_t>(c->uarch);
    out.vendor = vendor_name(c->vendor);
    fastest = std::max(fastest, c->frequency);
  }
  info->num_clusters = n;
  // Clusters are "performance" when they run at the top clock; with no clock information every
  // cluster counts as performance (a homogeneous machine as far as we can tell).
  info->performance_cores = 0;
  info->efficiency_cores = 0;
  for (uint32_t i = 0; i < n; ++i) {
    CpuCluster& c = info->clusters[i];
    c.performance = fastest == 0 || c.frequency_hz == 0 || c.frequency_hz == fastest;
    (c.performance ? info->performance_cores : info->efficiency_cores) += c.cores;
  }
  if (info->performance_cores == 0) info->performance_cores = info->physical_cores;
  // Intel hybrid parts: cpuinfo may report one cluster, but Linux lists the E-cores (no SMT, so
  // one CPU each) under cpu_atom.
  if (info->efficiency_cores == 0) {
    uint32_t atom = count_cpulist("/sys/devices/cpu_atom/cpus");
    if (atom > 0 && atom < info->physical_cores) {
      info->efficiency_cores = atom;
      info->performance_cores = info->physical_cores - atom;
    }
  }

  CacheSizes& caches = info->caches;
  caches.l1d_count = cpuinfo_get_l1d_caches_count();
  caches.l2_count = cpuinfo_get_l2_caches_count();
  caches.l3_count = cpuinfo_get_l3_caches_count();
  if (caches.l1d_count) caches.l1d_bytes = cpuinfo_get_l1d_cache(0)->size;
  if (caches.l2_count) caches.l2_bytes = cpuinfo_get_l2_cache(0)->size;
  if (caches.l3_count) caches.l3_bytes = cpuinfo_get_l3_cache(0)->size;

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

DeviceInfo DeviceInfo::detect() {
  DeviceInfo info;
  detect_cpu(&info);
  return info;
}

const DeviceInfo& DeviceInfo::get() {
  static const DeviceInfo info = detect();
  return info;
}

uint32_t DeviceInfo::recommended_threads() const {
  return std::max(1u, performance_cores);
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

std::string DeviceInfo::describe(bool with_opencl) const {
  std::string text;
  char line[256];
  std::snprintf(line, sizeof line,
                "cpu: %s\ncores: %u logical, %u physical (%u performance, %u efficiency)%s\n",
                cpu_name[0] ? cpu_name : "unknown", logical_processors, physical_cores,
                performance_cores, efficiency_cores, cpuinfo_ok ? "" : " [cpuinfo unavailable]");
  text += line;
  for (const CpuCluster& c : cluster_list()) {
    char uarch[32] = "unknown uarch";
    if (c.uarch != 0) std::snprintf(uarch, sizeof uarch, "uarch 0x%08x", c.uarch);
    char clock[32] = "unknown clock";
    if (c.frequency_hz != 0) {
      std::snprintf(clock, sizeof clock, "%.2f GHz", static_cast<double>(c.frequency_hz) / 1e9);
    }
    std::snprintf(line, sizeof line, "  cluster: cores %u-%u, %u threads, %s %s, %s, %s\n",
                  c.first_core, c.first_core + c.cores - 1, c.logical_processors, c.vendor, uarch,
                  clock, c.performance ? "performance" : "efficiency");
    text += line;
  }
  std::snprintf(line, sizeof line, "caches: L1d %u KiB x%u, L2 %u KiB x%u, L3 %u KiB x%u\n",
                caches.l1d_bytes / 1024, caches.l1d_count, caches.l2_bytes / 1024, caches.l2_count,
                caches.l3_bytes / 1024, caches.l3_count);
  text += line;
  text += "isa:";
  for (const char* f : {"sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vnni",
                        "avx512_bf16", "amx_tile", "amx_int8", "amx_bf16", "neon", "neon_fp16",
                        "neon_dot", "arm_bf16", "sve", "sve2"}) {
    if (has_isa(f)) {
      text += ' ';
      text += f;
    }
  }
  text += '\n';
  if (with_opencl) {
    const OpenClInfo& cl = opencl();
    if (cl.num_platforms == 0) {
      text += "opencl: none (";
      text += cl.error;
      text += ")\n";
    }
    for (const OpenClPlatform& p : cl.platform_list()) {
      std::snprintf(line, sizeof line, "opencl platform: %s (%s, %s)\n", p.name, p.vendor,
                    p.version);
      text += line;
      for (const OpenClDevice& d : p.device_list()) {
        std::snprintf(line, sizeof line, "  device: %s [%s], %u compute units, %llu MiB\n", d.name,
                      opencl_device_type_name(d.type), d.compute_units,
                      static_cast<unsigned long long>(d.global_memory_bytes >> 20));
        text += line;
      }
    }
  }
  return text;
}

}  // namespace tessera
