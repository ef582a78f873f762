#include "tessera/backend/device_probe.h"

#include <dirent.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace tessera::internal {
namespace {

std::string join(const DeviceProbe& probe, std::string_view path) {
  std::string out = probe.live() ? std::string() : probe.root;
  while (!out.empty() && out.back() == '/') out.pop_back();
  if (path.empty() || path.front() != '/') out += '/';
  out += path;
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Reads a file holding one integer; false if absent or malformed.
bool read_int(const DeviceProbe& probe, std::string_view path, int64_t* out) {
  std::string text;
  if (!read_text(probe, path, &text)) return false;
  std::string_view t = trim(text);
  if (t.empty()) return false;
  std::string s(t);
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (end == s.c_str() || *end != '\0') return false;
  *out = v;
  return true;
}

bool read_word(const DeviceProbe& probe, std::string_view path, std::string* out) {
  std::string text;
  if (!read_text(probe, path, &text)) return false;
  *out = std::string(trim(text));
  return true;
}

// Names of the entries of <root>/<path> that start with `prefix`, sorted.
std::vector<std::string> list_dir(const DeviceProbe& probe, std::string_view path,
                                  std::string_view prefix) {
  std::vector<std::string> names;
  DIR* dir = opendir(join(probe, path).c_str());
  if (dir == nullptr) return names;
  while (dirent* e = readdir(dir)) {
    std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    if (name.substr(0, prefix.size()) == prefix) names.emplace_back(name);
  }
  closedir(dir);
  std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    // Natural order for names ending in numbers: cpu2 before cpu10.
    if (a.size() != b.size()) return a.size() < b.size();
    return a < b;
  });
  return names;
}

void copy_text(char* dst, size_t size, std::string_view src) {
  std::snprintf(dst, size, "%.*s", static_cast<int>(src.size()), src.data());
}

void add_note(DeviceInfo* info, const char* note) {
  size_t used = std::strlen(info->notes);
  std::snprintf(info->notes + used, sizeof info->notes - used, "%s%s", used ? ", " : "", note);
}

const char* vendor_from_id(std::string_view id) {
  if (id == "GenuineIntel") return "intel";
  if (id == "AuthenticAMD") return "amd";
  if (id == "HygonGenuine") return "hygon";
  return "unknown";
}

// --- CPUID: the instruction on the live machine, a table from cpuid.txt in a fixture ----------

struct Cpuid {
  bool live = false;
  struct Entry {
    uint32_t leaf, subleaf, regs[4];
  };
  std::vector<Entry> table;

  bool query(uint32_t leaf, uint32_t subleaf, uint32_t regs[4]) const {
    regs[0] = regs[1] = regs[2] = regs[3] = 0;
#if defined(__x86_64__) || defined(__i386__)
    if (live) {
      unsigned max = __get_cpuid_max(leaf & 0x80000000u, nullptr);
      if (max == 0 || leaf > max) return false;
      __cpuid_count(leaf, subleaf, regs[0], regs[1], regs[2], regs[3]);
      return true;
    }
#endif
    for (const Entry& e : table) {
      if (e.leaf == leaf && e.subleaf == subleaf) {
        std::memcpy(regs, e.regs, sizeof e.regs);
        return true;
      }
    }
    return false;
  }
};

Cpuid make_cpuid(const DeviceProbe& probe) {
  Cpuid c;
#if defined(__x86_64__) || defined(__i386__)
  c.live = probe.live();
#endif
  if (probe.live()) return c;
  std::string text;
  if (!read_text(probe, "cpuid.txt", &text)) return c;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    Cpuid::Entry e{};
    if (std::sscanf(line.c_str(), "%x %x %x %x %x %x", &e.leaf, &e.subleaf, &e.regs[0], &e.regs[1],
                    &e.regs[2], &e.regs[3]) == 6) {
      c.table.push_back(e);
    }
  }
  return c;
}

// --- CPU topology ----------------------------------------------------------------------------

struct CpuFacts {
  uint32_t cpu = 0;
  uint32_t package = 0;
  uint32_t core_key = 0;  // the lowest CPU number among its core's hardware threads
  uint32_t capacity = 0;  // 0 = unknown
  uint64_t max_khz = 0;   // 0 = unknown
  int hybrid = -1;        // Intel hybrid: 1 = cpu_core (P), 0 = cpu_atom (E), -1 = not listed
  uint64_t class_value = 0;
  bool performance = true;
};

bool read_cpulist(const DeviceProbe& probe, std::string_view path, CpuSet* out) {
  std::string text;
  return read_text(probe, path, &text) && CpuSet::parse_list(trim(text), out);
}

uint32_t first_cpu(const CpuSet& set) {
  for (uint32_t c = 0; c < kMaxCpus; ++c) {
    if (set.has(c)) return c;
  }
  return kMaxCpus;
}

}  // namespace

CpuSet read_affinity(const DeviceProbe& probe) {
  CpuSet set;
  if (probe.live()) {
    cpu_set_t mask;
    CPU_ZERO(&mask);
    if (sched_getaffinity(0, sizeof mask, &mask) == 0) {
      for (uint32_t c = 0; c < kMaxCpus && c < CPU_SETSIZE; ++c) {
        if (CPU_ISSET(c, &mask)) set.add(c);
      }
      return set;
    }
  }
  std::string status;
  if (read_text(probe, "proc/self/status", &status)) {
    std::istringstream lines(status);
    std::string line;
    while (std::getline(lines, line)) {
      constexpr std::string_view kKey = "Cpus_allowed_list:";
      if (line.compare(0, kKey.size(), kKey) == 0) {
        if (CpuSet::parse_list(trim(std::string_view(line).substr(kKey.size())), &set)) return set;
      }
    }
  }
  return set;  // empty: unknown, the caller uses every online CPU
}

namespace {

// cgroup v2: the smallest cpu.max along `path` up to the hierarchy's root.
double v2_quota(const DeviceProbe& probe, std::string path) {
  double best = 0;
  for (;;) {
    std::string text;
    if (read_text(probe, "sys/fs/cgroup" + path + (path == "/" ? "" : "/") + "cpu.max", &text)) {
      char max[32] = {};
      unsigned long long period = 0;
      if (std::sscanf(text.c_str(), "%31s %llu", max, &period) == 2 &&
          std::strcmp(max, "max") != 0 && period > 0) {
        double cpus = std::strtod(max, nullptr) / static_cast<double>(period);
        if (cpus > 0 && (best == 0 || cpus < best)) best = cpus;
      }
    }
    if (path == "/" || path.empty()) break;
    size_t slash = path.find_last_of('/');
    path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
  }
  return best;
}

double v1_quota(const DeviceProbe& probe, const std::string& mount, std::string path) {
  double best = 0;
  for (;;) {
    const std::string dir = mount + (path == "/" ? "" : path);
    int64_t quota = 0, period = 0;
    if (read_int(probe, dir + "/cpu.cfs_quota_us", &quota) &&
        read_int(probe, dir + "/cpu.cfs_period_us", &period) && quota > 0 && period > 0) {
      double cpus = static_cast<double>(quota) / static_cast<double>(period);
      if (best == 0 || cpus < best) best = cpus;
    }
    if (path == "/" || path.empty()) break;
    size_t slash = path.find_last_of('/');
    path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
  }
  return best;
}

bool dir_exists(const DeviceProbe& probe, const std::string& path) {
  DIR* d = opendir(join(probe, path).c_str());
  if (d == nullptr) return false;
  closedir(d);
  return true;
}

}  // namespace

bool read_text(const DeviceProbe& probe, std::string_view path, std::string* out) {
  std::ifstream in(join(probe, path), std::ios::binary);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return false;
  *out = text.str();
  return true;
}

double read_cpu_quota(const DeviceProbe& probe) {
  std::string text;
  if (!read_text(probe, "proc/self/cgroup", &text)) return 0;
  double best = 0;
  auto take = [&best](double q) {
    if (q > 0 && (best == 0 || q < best)) best = q;
  };
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    size_t a = line.find(':');
    size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    std::string path = line.substr(b + 1);
    if (path.empty()) path = "/";
    if (controllers.empty()) {  // v2
      // Inside a cgroup namespace the path may not exist from our view: the root is ours.
      if (!dir_exists(probe, "sys/fs/cgroup" + path)) path = "/";
      take(v2_quota(probe, path));
      continue;
    }
    bool has_cpu = false;
    std::istringstream names(controllers);
    std::string name;
    while (std::getline(names, name, ',')) has_cpu |= name == "cpu";
    if (!has_cpu) continue;
    for (const char* mount :
         {"sys/fs/cgroup/cpu,cpuacct", "sys/fs/cgroup/cpu", "sys/fs/cgroup/cpuacct,cpu"}) {
      if (!dir_exists(probe, mount)) continue;
      std::string p = dir_exists(probe, std::string(mount) + path) ? path : "/";
      take(v1_quota(probe, mount, p));
      break;
    }
  }
  return best;
}

// x86's /proc/cpuinfo names each processor's "physical id" and "core id": the topology where
// sysfs has none (some containers and sandboxes hide /sys/devices/system/cpu/cpu*/topology),
// and a cross-check where it has. Returns false unless every CPU in `cpus` is described.
struct CpuinfoTopology {
  uint32_t package = 0;
  uint32_t core = 0;
};
bool cpuinfo_topology(const DeviceProbe& probe, const std::vector<CpuFacts>& cpus,
                      std::vector<CpuinfoTopology>* out) {
  std::string text;
  if (cpus.empty() || !read_text(probe, "proc/cpuinfo", &text)) return false;
  out->assign(cpus.size(), CpuinfoTopology{});
  std::vector<uint8_t> seen(cpus.size(), 0);  // bit 0: physical id, bit 1: core id
  std::istringstream lines(text);
  std::string line;
  int64_t index = -1;  // into `cpus` of the current "processor" block, -1 if not one of them
  while (std::getline(lines, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string_view key = trim(std::string_view(line).substr(0, colon));
    const std::string_view value = trim(std::string_view(line).substr(colon + 1));
    uint32_t number = 0;
    const bool numeric =
        !value.empty() && value.size() <= 9 &&
        std::all_of(value.begin(), value.end(), [&](char c) { return c >= '0' && c <= '9'; });
    if (numeric) {
      for (char c : value) number = number * 10 + static_cast<uint32_t>(c - '0');
    }
    if (key == "processor") {
      index = -1;
      for (size_t i = 0; numeric && i < cpus.size(); ++i) {
        if (cpus[i].cpu == number) index = static_cast<int64_t>(i);
      }
    } else if (index >= 0 && numeric && key == "physical id") {
      (*out)[static_cast<size_t>(index)].package = number;
      seen[static_cast<size_t>(index)] |= 1;
    } else if (index >= 0 && numeric && key == "core id") {
      (*out)[static_cast<size_t>(index)].core = number;
      seen[static_cast<size_t>(index)] |= 2;
    }
  }
  return std::all_of(seen.begin(), seen.end(), [](uint8_t s) { return s == 3; });
}

// Distinct cores among `cpus` by their core_key.
uint32_t count_cores(const std::vector<CpuFacts>& cpus) {
  std::vector<uint32_t> keys;
  for (const CpuFacts& f : cpus) {
    if (std::find(keys.begin(), keys.end(), f.core_key) == keys.end()) keys.push_back(f.core_key);
  }
  return static_cast<uint32_t>(keys.size());
}

void probe_cpus(const DeviceProbe& probe, DeviceInfo* info) {
  info->notes[0] = '\0';
  CpuSet online;
  if (!read_cpulist(probe, "sys/devices/system/cpu/online", &online) || online.count() == 0) {
    if (!read_cpulist(probe, "sys/devices/system/cpu/present", &online) || online.count() == 0) {
      unsigned hw = probe.live() ? std::thread::hardware_concurrency() : 1;
      for (uint32_t c = 0; c < std::max(1u, hw); ++c) online.add(c);
      add_note(info, "no cpu online list");
    }
  }
  info->online = online;
  info->online_cpus = online.count();
  info->logical_processors = info->online_cpus;

  CpuSet atom, core;
  const bool hybrid = read_cpulist(probe, "sys/devices/cpu_atom/cpus", &atom) && atom.count() > 0 &&
                      read_cpulist(probe, "sys/devices/cpu_core/cpus", &core);
  std::vector<CpuFacts> cpus;
  bool have_topology = false, have_capacity = true, have_freq = true;
  for (uint32_t c = 0; c < kMaxCpus; ++c) {
    if (!online.has(c)) continue;
    CpuFacts f;
    f.cpu = c;
    const std::string base = "sys/devices/system/cpu/cpu" + std::to_string(c);
    int64_t v = 0;
    if (read_int(probe, base + "/topology/physical_package_id", &v) && v >= 0) {
      f.package = static_cast<uint32_t>(v);
    }
    CpuSet siblings;
    if ((read_cpulist(probe, base + "/topology/core_cpus_list", &siblings) ||
         read_cpulist(probe, base + "/topology/thread_siblings_list", &siblings)) &&
        siblings.count() > 0) {
      f.core_key = first_cpu(siblings);
      have_topology = true;
    } else {
      f.core_key = c;  // no topology: every CPU its own core
    }
    if (read_int(probe, base + "/cpu_capacity", &v) && v > 0) {
      f.capacity = static_cast<uint32_t>(v);
    } else {
      have_capacity = false;
    }
    if (read_int(probe, base + "/cpufreq/cpuinfo_max_freq", &v) && v > 0) {
      f.max_khz = static_cast<uint64_t>(v);
    } else {
      have_freq = false;
    }
    if (hybrid) f.hybrid = atom.has(c) ? 0 : 1;
    cpus.push_back(f);
  }
  if (have_topology) add_note(info, "sysfs topology");
  std::vector<CpuinfoTopology> listed;
  if (cpuinfo_topology(probe, cpus, &listed)) {
    // Each CPU's core is named by the lowest CPU listed with the same (physical id, core id).
    std::vector<CpuFacts> by_cpuinfo = cpus;
    for (size_t i = 0; i < cpus.size(); ++i) {
      by_cpuinfo[i].package = listed[i].package;
      for (size_t j = 0; j <= i; ++j) {
        if (listed[j].package == listed[i].package && listed[j].core == listed[i].core) {
          by_cpuinfo[i].core_key = cpus[j].cpu;
          break;
        }
      }
    }
    const uint32_t sysfs_cores = count_cores(cpus), cpuinfo_cores = count_cores(by_cpuinfo);
    if (!have_topology) {
      cpus = std::move(by_cpuinfo);
      add_note(info, "topology from /proc/cpuinfo");
    } else if (sysfs_cores != cpuinfo_cores) {
      char note[96];
      std::snprintf(note, sizeof note, "/proc/cpuinfo disagrees: %u cores (sysfs %u, used)",
                    cpuinfo_cores, sysfs_cores);
      add_note(info, note);
    }
  }

  // Classes: Intel's hybrid lists, else kernel capacities, else maximum clocks, else one class.
  uint64_t max_capacity = 0, max_khz = 0, min_capacity = UINT64_MAX, min_khz = UINT64_MAX;
  for (const CpuFacts& f : cpus) {
    max_capacity = std::max<uint64_t>(max_capacity, f.capacity);
    min_capacity = std::min<uint64_t>(min_capacity, f.capacity);
    max_khz = std::max(max_khz, f.max_khz);
    min_khz = std::min(min_khz, f.max_khz);
  }
  const char* split = "none";
  for (CpuFacts& f : cpus) {
    if (hybrid) {
      f.class_value = static_cast<uint64_t>(f.hybrid);
      f.performance = f.hybrid == 1;
      split = "intel hybrid (cpu_core/cpu_atom)";
    } else if (have_capacity && max_capacity != min_capacity) {
      // big.LITTLE: "big" and "prime" cores sit above half the top capacity, "LITTLE" below.
      f.class_value = f.capacity;
      f.performance = f.capacity * 2 > max_capacity;
      split = "cpu_capacity";
    } else if (have_freq && max_khz != min_khz) {
      f.class_value = f.max_khz;
      f.performance = f.max_khz * 5 >= max_khz * 4;  // within 80% of the top clock
      split = "cpuinfo_max_freq";
    }
  }
  if (std::strcmp(split, "none") != 0) {
    char note[64];
    std::snprintf(note, sizeof note, "classes from %s", split);
    add_note(info, note);
  }

  // Clusters: one per (package, class), the faster classes first.
  std::vector<std::pair<uint32_t, uint64_t>> keys;
  for (const CpuFacts& f : cpus) {
    std::pair<uint32_t, uint64_t> k{f.package, f.class_value};
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  }
  std::sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second > b.second;
  });
  if (keys.size() > DeviceInfo::kMaxClusters) {
    add_note(info, "more clusters than tracked: the slowest merged into the last");
  }

  CpuSet affinity = read_affinity(probe).intersect(online);
  if (affinity.count() == 0) affinity = online;
  info->affinity = affinity;

  info->num_clusters = 0;
  info->physical_cores = 0;
  info->performance_cores = 0;
  info->efficiency_cores = 0;
  uint32_t usable_perf = 0, usable_eff = 0;
  for (size_t k = 0; k < keys.size(); ++k) {
    const size_t slot = std::min(k, DeviceInfo::kMaxClusters - 1);
    CpuCluster& cl = info->clusters[slot];
    if (slot == k) {
      cl = CpuCluster{};
      cl.first_core = info->physical_cores;
      cl.package = keys[k].first;
      cl.vendor = info->vendor;
    }
    std::vector<uint32_t> cores, usable_cores;
    for (const CpuFacts& f : cpus) {
      if (f.package != keys[k].first || f.class_value != keys[k].second) continue;
      cl.cpus.add(f.cpu);
      ++cl.logical_processors;
      cl.performance = f.performance;
      cl.capacity = f.capacity;
      cl.frequency_hz = f.max_khz * 1000;
      if (std::find(cores.begin(), cores.end(), f.core_key) == cores.end()) {
        cores.push_back(f.core_key);
      }
      if (affinity.has(f.cpu) &&
          std::find(usable_cores.begin(), usable_cores.end(), f.core_key) == usable_cores.end()) {
        usable_cores.push_back(f.core_key);
      }
    }
    cl.cores += static_cast<uint32_t>(cores.size());
    cl.usable_cores += static_cast<uint32_t>(usable_cores.size());
    info->physical_cores += static_cast<uint32_t>(cores.size());
    (cl.performance ? info->performance_cores : info->efficiency_cores) +=
        static_cast<uint32_t>(cores.size());
    (cl.performance ? usable_perf : usable_eff) += static_cast<uint32_t>(usable_cores.size());
    info->num_clusters = static_cast<uint32_t>(slot + 1);
  }
  info->physical_cores = std::max(1u, info->physical_cores);
  if (info->performance_cores == 0 && info->efficiency_cores == 0) info->performance_cores = 1;

  info->cpu_quota = read_cpu_quota(probe);
  uint32_t usable = affinity.count();
  uint32_t quota_cap = UINT32_MAX;
  if (info->cpu_quota > 0) {
    quota_cap = std::max(1u, static_cast<uint32_t>(std::floor(info->cpu_quota + 1e-9)));
    add_note(info, "cgroup cpu quota");
  }
  info->usable_cpus = std::max(1u, std::min(usable, quota_cap));
  info->usable_performance_cores = std::min(usable_perf, quota_cap);
  info->usable_efficiency_cores = std::min(usable_eff, quota_cap);
}

uint64_t parse_cache_size(std::string_view text) {
  text = trim(text);
  if (text.empty()) return 0;
  uint64_t scale = 1;
  switch (text.back()) {
    case 'K':
      scale = 1024;
      text.remove_suffix(1);
      break;
    case 'M':
      scale = 1024 * 1024;
      text.remove_suffix(1);
      break;
    case 'G':
      scale = uint64_t{1} << 30;
      text.remove_suffix(1);
      break;
    default:
      break;
  }
  if (text.empty() || text.size() > 12) return 0;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return 0;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v * scale;
}

namespace {

// Records a data or unified cache (callers skip instruction caches) of `level`.
void set_cache(CacheSizes* caches, uint32_t level, uint64_t bytes, uint32_t sharing,
               uint32_t online) {
  if (bytes == 0 || bytes > UINT32_MAX) return;
  sharing = std::max(1u, std::min(sharing, online));
  const uint32_t count = (online + sharing - 1) / sharing;
  if (level == 1) {
    caches->l1d_bytes = static_cast<uint32_t>(bytes);
    caches->l1d_count = count;
  } else if (level == 2) {
    caches->l2_bytes = static_cast<uint32_t>(bytes);
    caches->l2_count = count;
  } else if (level == 3) {
    caches->l3_bytes = static_cast<uint32_t>(bytes);
    caches->l3_count = count;
  }
}

bool caches_from_sysfs(const DeviceProbe& probe, DeviceInfo* info) {
  uint32_t cpu = first_cpu(info->affinity);
  if (cpu == kMaxCpus) cpu = 0;
  const std::string base = "sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/cache";
  bool any = false;
  for (const std::string& index : list_dir(probe, base, "index")) {
    const std::string dir = base + "/" + index;
    int64_t level = 0;
    std::string type, size;
    if (!read_int(probe, dir + "/level", &level) || !read_word(probe, dir + "/type", &type) ||
        !read_word(probe, dir + "/size", &size)) {
      continue;
    }
    if (type == "Instruction") continue;
    CpuSet shared;
    uint32_t sharing = 1;
    if (read_cpulist(probe, dir + "/shared_cpu_list", &shared) && shared.count() > 0) {
      sharing = shared.count();
    }
    uint64_t bytes = parse_cache_size(size);
    if (bytes == 0) continue;
    set_cache(&info->caches, static_cast<uint32_t>(level), bytes, sharing, info->online_cpus);
    any = true;
  }
  return any;
}

// AMD's older leaves: 0x80000005 ECX[31:24] = L1d KiB, 0x80000006 ECX[31:16] = L2 KiB and
// EDX[31:18] = L3 in 512 KiB units. No sharing information: L1d and L2 are per core, L3 is
// counted once.
bool amd_legacy_caches(const Cpuid& cpuid, std::string_view vendor, DeviceInfo* info) {
  if (vendor != "AuthenticAMD" && vendor != "HygonGenuine") return false;
  uint32_t r[4];
  if (!cpuid.query(0x80000000u, 0, r) || r[0] < 0x80000006u) return false;
  const uint32_t per_core = std::max(1u, info->online_cpus / std::max(1u, info->physical_cores));
  bool any = false;
  if (cpuid.query(0x80000005u, 0, r) && (r[2] >> 24) != 0) {
    set_cache(&info->caches, 1, uint64_t{r[2] >> 24} * 1024, per_core, info->online_cpus);
    any = true;
  }
  if (cpuid.query(0x80000006u, 0, r)) {
    if ((r[2] >> 16) != 0) {
      set_cache(&info->caches, 2, uint64_t{r[2] >> 16} * 1024, per_core, info->online_cpus);
      any = true;
    }
    if ((r[3] >> 18) != 0) {
      set_cache(&info->caches, 3, uint64_t{r[3] >> 18} * 512 * 1024, info->online_cpus,
                info->online_cpus);
      any = true;
    }
  }
  return any;
}

// Deterministic cache parameters: Intel leaf 4, AMD leaf 0x8000001D (same layout).
bool caches_from_cpuid(const Cpuid& cpuid, DeviceInfo* info) {
  uint32_t r[4];
  if (!cpuid.query(0, 0, r)) return false;
  char id[13] = {};
  std::memcpy(id, &r[1], 4);
  std::memcpy(id + 4, &r[3], 4);
  std::memcpy(id + 8, &r[2], 4);
  const std::string_view vendor = id;
  uint32_t leaf = 0;
  if (vendor == "GenuineIntel" && r[0] >= 4) {
    leaf = 4;
  } else if (vendor == "AuthenticAMD" || vendor == "HygonGenuine") {
    uint32_t ext[4];
    if (cpuid.query(0x80000000u, 0, ext) && ext[0] >= 0x8000001Du &&
        cpuid.query(0x80000001u, 0, ext) && ((ext[2] >> 22) & 1) != 0) {  // TopologyExtensions
      leaf = 0x8000001Du;
    }
  }
  bool any = false;
  if (leaf == 0) return amd_legacy_caches(cpuid, vendor, info);
  for (uint32_t sub = 0; sub < 16; ++sub) {
    if (!cpuid.query(leaf, sub, r)) break;
    const uint32_t type = r[0] & 0x1f;  // 0 none, 1 data, 2 instruction, 3 unified
    if (type == 0) break;
    if (type == 2) continue;
    const uint32_t level = (r[0] >> 5) & 0x7;
    const uint32_t sharing = ((r[0] >> 14) & 0xfff) + 1;
    const uint64_t ways = ((r[1] >> 22) & 0x3ff) + 1;
    const uint64_t partitions = ((r[1] >> 12) & 0x3ff) + 1;
    const uint64_t line = (r[1] & 0xfff) + 1;
    const uint64_t sets = static_cast<uint64_t>(r[2]) + 1;
    set_cache(&info->caches, level, ways * partitions * line * sets, sharing,
              info->online_cpus);
    any = true;
  }
  // Some hypervisors pass TopologyExtensions through but leave leaf 0x8000001D empty.
  return any || amd_legacy_caches(cpuid, vendor, info);
}

}  // namespace

void probe_caches(const DeviceProbe& probe, DeviceInfo* info) {
  // Each reader fills the caches only when it finds some, so one that finds none leaves the
  // sizes unknown for the next.
  info->caches = CacheSizes{};
  if (caches_from_sysfs(probe, info)) {
    info->caches.source = "sysfs";
  } else if (caches_from_cpuid(make_cpuid(probe), info)) {
    info->caches.source = "cpuid";
  }
}

void probe_cpuinfo_text(const DeviceProbe& probe, DeviceInfo* info) {
  std::string text;
  if (!read_text(probe, "proc/cpuinfo", &text)) return;
  std::istringstream lines(text);
  std::string line;
  std::string flags, features, implementer;
  while (std::getline(lines, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string_view key = trim(std::string_view(line).substr(0, colon));
    std::string_view value = trim(std::string_view(line).substr(colon + 1));
    if (key == "model name" && info->cpu_name[0] == '\0') {
      copy_text(info->cpu_name, sizeof info->cpu_name, value);
    } else if (key == "vendor_id" && std::strcmp(info->vendor, "unknown") == 0) {
      info->vendor = vendor_from_id(value);
    } else if (key == "flags" && flags.empty()) {
      flags = " " + std::string(value) + " ";
    } else if (key == "Features" && features.empty()) {
      features = " " + std::string(value) + " ";
    } else if (key == "CPU implementer" && implementer.empty()) {
      implementer = value;
    }
  }
  if (!implementer.empty() && std::strcmp(info->vendor, "unknown") == 0) {
    info->vendor = implementer == "0x41" ? "arm" : implementer == "0x51" ? "qualcomm" : "unknown";
  }
  if (probe.live()) return;  // ISA on the live machine comes from cpuinfo and XCR0
  auto has = [](const std::string& list, const char* name) {
    return list.find(" " + std::string(name) + " ") != std::string::npos;
  };
  IsaFeatures& isa = info->isa;
  isa.sse4_2 = has(flags, "sse4_2");
  isa.avx = has(flags, "avx");
  isa.avx2 = has(flags, "avx2");
  isa.fma = has(flags, "fma");
  isa.f16c = has(flags, "f16c");
  isa.avx512f = has(flags, "avx512f");
  isa.avx512bw = has(flags, "avx512bw");
  isa.avx512vnni = has(flags, "avx512_vnni");
  isa.avx512_bf16 = has(flags, "avx512_bf16");
  isa.amx_tile = has(flags, "amx_tile");
  isa.amx_int8 = has(flags, "amx_int8");
  isa.amx_bf16 = has(flags, "amx_bf16");
  isa.neon = has(features, "asimd") || has(features, "neon");
  isa.neon_fp16 = has(features, "asimdhp");
  isa.neon_dot = has(features, "asimddp");
  isa.arm_bf16 = has(features, "bf16");
  isa.sve = has(features, "sve");
  isa.sve2 = has(features, "sve2");
}

void probe_memory(const DeviceProbe& probe, MemoryInfo* out) {
  *out = MemoryInfo{};
  std::string text;
  if (!read_text(probe, "proc/meminfo", &text)) return;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    unsigned long long kb = 0;
    if (std::sscanf(line.c_str(), "MemTotal: %llu kB", &kb) == 1) out->total_bytes = kb * 1024;
    if (std::sscanf(line.c_str(), "MemAvailable: %llu kB", &kb) == 1) {
      out->available_bytes = kb * 1024;
    }
  }
}

void probe_power(const DeviceProbe& probe, PowerInfo* out) {
  *out = PowerInfo{};
  const std::string base = "sys/class/power_supply";
  for (const std::string& name : list_dir(probe, base, "")) {
    const std::string dir = base + "/" + name;
    std::string type;
    if (!read_word(probe, dir + "/type", &type)) continue;
    int64_t v = 0;
    if (type == "Battery") {
      if (out->num_batteries == PowerInfo::kMaxBatteries) continue;
      BatteryInfo& b = out->batteries[out->num_batteries++];
      copy_text(b.name, sizeof b.name, name);
      b.present = !read_int(probe, dir + "/present", &v) || v != 0;
      std::string status;
      if (read_word(probe, dir + "/status", &status)) {
        b.status = status == "Charging"       ? BatteryStatus::Charging
                   : status == "Discharging"  ? BatteryStatus::Discharging
                   : status == "Not charging" ? BatteryStatus::NotCharging
                   : status == "Full"         ? BatteryStatus::Full
                                              : BatteryStatus::Unknown;
      }
      if (read_int(probe, dir + "/capacity", &v) && v >= 0 && v <= 100) {
        b.capacity_percent = static_cast<int32_t>(v);
      }
    } else if (type == "Mains" || type == "USB" || type == "USB_C" || type == "Wireless") {
      if (read_int(probe, dir + "/online", &v)) {
        out->mains_online = static_cast<int8_t>(out->mains_online == 1 || v != 0 ? 1 : 0);
      }
    }
  }
  std::string profile;
  if (read_word(probe, "sys/firmware/acpi/platform_profile", &profile)) {
    copy_text(out->platform_profile, sizeof out->platform_profile, profile);
    out->power_saver = profile == "low-power" || profile == "quiet" || profile == "cool";
  }
}

void probe_thermal(const DeviceProbe& probe, ThermalInfo* out) {
  *out = ThermalInfo{};
  const std::string base = "sys/class/thermal";
  for (const std::string& zone : list_dir(probe, base, "thermal_zone")) {
    const std::string dir = base + "/" + zone;
    int64_t temp = 0;
    if (!read_int(probe, dir + "/temp", &temp)) continue;
    int64_t passive = 0;
    for (int t = 0; t < 32; ++t) {
      std::string type;
      int64_t trip = 0;
      const std::string trip_base = dir + "/trip_point_" + std::to_string(t);
      if (!read_word(probe, trip_base + "_type", &type)) break;
      if (type == "passive" && read_int(probe, trip_base + "_temp", &trip) && trip > 0 &&
          (passive == 0 || trip < passive)) {
        passive = trip;
      }
    }
    if (passive > 0 && temp >= passive) out->passive_trip_exceeded = true;
    if (!out->known || temp > out->max_millicelsius) {
      out->known = true;
      out->max_millicelsius = static_cast<int32_t>(temp);
      out->passive_trip_millicelsius = static_cast<int32_t>(passive);
      std::string type;
      read_word(probe, dir + "/type", &type);
      copy_text(out->zone_type, sizeof out->zone_type, type);
    }
  }
}

CpuTimes parse_proc_stat(std::string_view text) {
  CpuTimes t;
  std::istringstream lines{std::string(text)};
  std::string line;
  while (std::getline(lines, line)) {
    if (line.compare(0, 3, "cpu") != 0 || line.size() < 4 || !std::isdigit(line[3])) continue;
    unsigned cpu = 0;
    unsigned long long v[8] = {};
    int n = std::sscanf(line.c_str(), "cpu%u %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &v[0],
                        &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
    if (n < 5 || cpu >= kMaxCpus) continue;
    if (t.busy.size() <= cpu) {
      t.busy.resize(cpu + 1);
      t.total.resize(cpu + 1);
    }
    // user nice system idle iowait irq softirq steal
    const uint64_t busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    t.busy[cpu] = busy;
    t.total[cpu] = busy + v[3] + v[4];
  }
  return t;
}

uint64_t parse_self_ticks(std::string_view text) {
  // The command name (field 2) is in parentheses and may hold spaces: count from its end.
  size_t close = text.rfind(')');
  if (close == std::string_view::npos) return 0;
  std::istringstream fields{std::string(text.substr(close + 1))};
  std::string field;
  uint64_t utime = 0, stime = 0;
  for (int i = 3; i <= 15 && (fields >> field); ++i) {
    if (i == 14) utime = std::strtoull(field.c_str(), nullptr, 10);
    if (i == 15) stime = std::strtoull(field.c_str(), nullptr, 10);
  }
  return utime + stime;
}

double busy_cpus_between(const CpuTimes& before, const CpuTimes& after, uint64_t self_before,
                         uint64_t self_after, const CpuSet& cpus) {
  uint64_t busy = 0, elapsed = 0;
  uint32_t n = 0;
  for (uint32_t c = 0; c < after.busy.size() && c < before.busy.size(); ++c) {
    if (!cpus.has(c) || after.total[c] < before.total[c] || after.busy[c] < before.busy[c])
      continue;
    busy += after.busy[c] - before.busy[c];
    elapsed += after.total[c] - before.total[c];
    ++n;
  }
  if (n == 0 || elapsed == 0) return 0;
  const uint64_t self = self_after > self_before ? self_after - self_before : 0;
  const double others = busy > self ? static_cast<double>(busy - self) : 0.0;
  return others / (static_cast<double>(elapsed) / n);
}

namespace {

struct StatSample {
  std::chrono::steady_clock::time_point when;
  CpuTimes times;
  uint64_t self = 0;
  bool valid = false;
};

StatSample take_sample(const DeviceProbe& probe, bool later) {
  StatSample s;
  std::string stat, self;
  if (!read_text(probe, later ? "proc/stat.later" : "proc/stat", &stat)) return s;
  s.times = parse_proc_stat(stat);
  if (read_text(probe, later ? "proc/self/stat.later" : "proc/self/stat", &self)) {
    s.self = parse_self_ticks(self);
  }
  s.when = std::chrono::steady_clock::now();
  s.valid = !s.times.busy.empty();
  return s;
}

}  // namespace

namespace {

constexpr int kInstantReads = 5;
constexpr std::chrono::milliseconds kInstantGap{1};

// /proc/loadavg: the 1-minute average and the tasks runnable at this instant.
bool read_loadavg(const DeviceProbe& probe, const char* path, double* average, unsigned* running) {
  std::string text;
  if (!read_text(probe, path, &text)) return false;
  double l5 = 0, l15 = 0;
  unsigned total = 0;
  return std::sscanf(text.c_str(), "%lf %lf %lf %u/%u", average, &l5, &l15, running, &total) == 5;
}

}  // namespace

void probe_load(const DeviceProbe& probe, const CpuSet& usable, LoadInfo* out) {
  *out = LoadInfo{};
  double average = 0;
  unsigned running = 0;
  if (read_loadavg(probe, "proc/loadavg", &average, &running)) {
    out->known = true;
    out->load_average_1m = average;
    out->runnable_tasks = running;
  }
  // The count includes the thread reading it. Nothing else runnable now: waiting a window to
  // measure how busy the others are would cost every load about 50 ms (a small model's whole
  // fixed load is 5) to learn that they are not. A task runnable at one instant may only be
  // passing through (a pipe's reader starting up, a kernel thread), where one that keeps a CPU
  // busy is runnable at every instant: so /proc/loadavg is read again, kInstantReads times in
  // all, kInstantGap apart, and one read that counts only the reader is enough. (A fixture tree
  // gives its second read as proc/loadavg.later.)
  if (probe.load_window_ms > 0 && out->known) {
    for (int k = 1; k < kInstantReads && out->runnable_tasks > 1; ++k) {
      if (probe.live()) std::this_thread::sleep_for(kInstantGap);
      if (!read_loadavg(probe, probe.live() ? "proc/loadavg" : "proc/loadavg.later", &average,
                        &running)) {
        break;
      }
      out->runnable_tasks = std::min(out->runnable_tasks, running);
      if (!probe.live()) break;
    }
    if (out->runnable_tasks <= 1) {
      out->idle_instant = true;
      return;
    }
  }
  if (!probe.live()) {
    if (probe.load_window_ms <= 0) return;
    StatSample a = take_sample(probe, false), b = take_sample(probe, true);
    if (a.valid && b.valid) {
      out->known = true;
      out->busy_cpus = busy_cpus_between(a.times, b.times, a.self, b.self, usable);
      out->window_ms = probe.load_window_ms;
    }
    return;
  }
  // /proc/stat counts in 10 ms jiffies, so a useful window is longer than a load should wait.
  // The last sample of the process is remembered: a load shortly after another one measures
  // from it without sleeping, and a result younger than a second is reused as it is.
  static std::mutex mutex;
  static StatSample last;
  static LoadInfo last_result;
  static std::chrono::steady_clock::time_point last_result_time;
  std::lock_guard<std::mutex> lock(mutex);
  if (probe.load_window_ms <= 0) {  // no window now: remember a sample for a later one
    if (!last.valid) last = take_sample(probe, false);
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  const auto window = std::chrono::duration<double, std::milli>(probe.load_window_ms);
  if (last_result.window_ms > 0 && now - last_result_time < std::chrono::seconds(1)) {
    out->busy_cpus = last_result.busy_cpus;
    out->window_ms = last_result.window_ms;
    return;
  }
  if (!last.valid || now - last.when > std::chrono::seconds(5)) {
    last = take_sample(probe, false);
    if (!last.valid) return;
  }
  const auto age = std::chrono::steady_clock::now() - last.when;
  if (age < window) std::this_thread::sleep_for(window - age);
  StatSample current = take_sample(probe, false);
  if (!current.valid) return;
  out->busy_cpus = busy_cpus_between(last.times, current.times, last.self, current.self, usable);
  out->window_ms = std::chrono::duration<double, std::milli>(current.when - last.when).count();
  last = current;
  last_result = *out;
  last_result_time = current.when;
}

}  // namespace tessera::internal
