// DeviceInfo::describe (text) and DeviceInfo::to_json.
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "tessera/backend/device_info.h"
#include "tessera/core/string_format.h"

namespace tessera {
namespace {

constexpr const char* kIsaNames[] = {
    "sse4_2",   "avx",        "avx2",        "fma",      "f16c",     "avx512f",
    "avx512bw", "avx512vnni", "avx512_bf16", "amx_tile", "amx_int8", "amx_bf16",
    "neon",     "neon_fp16",  "neon_dot",    "arm_bf16", "sve",      "sve2"};

std::string cache_text(const char* level, uint32_t bytes, uint32_t count) {
  return bytes == 0 ? string_format("%s unknown", level)
                    : string_format("%s %u KiB x%u", level, bytes / 1024, count);
}

}  // namespace

std::string DeviceInfo::describe(bool with_opencl) const {
  std::string text;
  text += string_format("cpu: %s (%s)\n", cpu_name[0] ? cpu_name : "unknown", vendor);
  char quota[48] = "no cpu quota";
  if (cpu_quota > 0) std::snprintf(quota, sizeof quota, "cpu quota %.2f", cpu_quota);
  text += string_format("cpus: %u online (%s), %u usable by this process (affinity %s; %s)\n",
                      online_cpus, online.to_list().c_str(), usable_cpus,
                      affinity.to_list().c_str(), quota);
  text += string_format(
      "cores: %u physical (%u performance, %u efficiency); usable: %u performance, %u "
      "efficiency; recommended threads %u\n",
      physical_cores, performance_cores, efficiency_cores, usable_performance_cores,
      usable_efficiency_cores, recommended_threads());
  for (uint32_t i = 0; i < num_clusters; ++i) {
    const CpuCluster& c = clusters[i];
    char clock[32] = "unknown clock";
    if (c.frequency_hz != 0) {
      std::snprintf(clock, sizeof clock, "%.2f GHz", static_cast<double>(c.frequency_hz) / 1e9);
    }
    char capacity[32] = "unknown capacity";
    if (c.capacity != 0) std::snprintf(capacity, sizeof capacity, "capacity %u", c.capacity);
    text += string_format(
        "  cluster %u: package %u, cores %u-%u (%u cores, %u threads, cpus %s, %u usable), %s, "
        "%s, %s\n",
        i, c.package, c.first_core, c.first_core + c.cores - 1, c.cores, c.logical_processors,
        c.cpus.to_list().c_str(), c.usable_cores, clock, capacity,
        c.performance ? "performance" : "efficiency");
  }
  text += "caches (" + std::string(caches.source) +
          "): " + cache_text("L1d", caches.l1d_bytes, caches.l1d_count) + ", " +
          cache_text("L2", caches.l2_bytes, caches.l2_count) + ", " +
          cache_text("L3", caches.l3_bytes, caches.l3_count) + "\n";
  if (memory.total_bytes > 0) {
    text += string_format("memory: %.1f GiB total, %.1f GiB available\n",
                        static_cast<double>(memory.total_bytes) / (1 << 30),
                        static_cast<double>(memory.available_bytes) / (1 << 30));
  } else {
    text += "memory: unknown\n";
  }
  text += "isa:";
  for (const char* f : kIsaNames) {
    if (has_isa(f)) {
      text += ' ';
      text += f;
    }
  }
  text += '\n';
  text += "power: ";
  text += power.mains_online == 1   ? "mains online"
          : power.mains_online == 0 ? "mains offline"
                                    : "no mains supply listed";
  if (power.num_batteries == 0) text += "; no battery";
  for (const BatteryInfo& b : power.battery_list()) {
    if (!b.present) {
      text += string_format("; battery %s not present", b.name);
    } else if (b.capacity_percent >= 0) {
      text += string_format("; battery %s %s at %d%%", b.name, battery_status_name(b.status),
                          b.capacity_percent);
    } else {
      text += string_format("; battery %s %s", b.name, battery_status_name(b.status));
    }
  }
  if (power.platform_profile[0] != '\0') {
    text += string_format("; platform profile %s", power.platform_profile);
  }
  if (power.power_saver) text += " (power saving)";
  text += '\n';
  if (thermal.known) {
    text += string_format("thermal: %.1f C (%s)", thermal.max_millicelsius / 1000.0,
                        thermal.zone_type[0] ? thermal.zone_type : "zone");
    if (thermal.passive_trip_millicelsius > 0) {
      text += string_format(", passive trip %.1f C", thermal.passive_trip_millicelsius / 1000.0);
    }
    text += thermal.passive_trip_exceeded ? ", passive trip exceeded\n" : "\n";
  } else {
    text += "thermal: unknown\n";
  }
  if (load.known) {
    text += string_format("load: %u runnable tasks, load average %.2f", load.runnable_tasks,
                        load.load_average_1m);
    if (load.window_ms > 0) {
      text += string_format(", %.2f CPUs busy with other processes (%.0f ms sample)", load.busy_cpus,
                          load.window_ms);
    } else if (load.idle_instant) {
      text += ", no other task runnable (no sample needed)";
    }
    text += '\n';
  } else {
    text += "load: unknown\n";
  }
  if (notes[0] != '\0') text += string_format("sources: %s\n", notes);
  if (with_opencl) {
    const OpenClInfo& cl = opencl();
    if (cl.num_platforms == 0) {
      text += "opencl: none (";
      text += cl.error;
      text += ")\n";
    }
    for (const OpenClPlatform& p : cl.platform_list()) {
      text += string_format("opencl platform: %s (%s, %s)\n", p.name, p.vendor, p.version);
      for (const OpenClDevice& d : p.device_list()) {
        text += string_format("  device: %s [%s], %u compute units, %llu MiB\n", d.name,
                            opencl_device_type_name(d.type), d.compute_units,
                            static_cast<unsigned long long>(d.global_memory_bytes >> 20));
      }
    }
  }
  return text;
}

std::string DeviceInfo::to_json(bool with_opencl) const {
  using nlohmann::json;
  json j;
  j["cpu_name"] = cpu_name;
  j["vendor"] = vendor;
  j["online_cpus"] = online_cpus;
  j["online"] = online.to_list();
  j["affinity"] = affinity.to_list();
  if (cpu_quota > 0) j["cpu_quota"] = cpu_quota;
  j["usable_cpus"] = usable_cpus;
  j["physical_cores"] = physical_cores;
  j["performance_cores"] = performance_cores;
  j["efficiency_cores"] = efficiency_cores;
  j["usable_performance_cores"] = usable_performance_cores;
  j["usable_efficiency_cores"] = usable_efficiency_cores;
  j["recommended_threads"] = recommended_threads();
  json list = json::array();
  for (const CpuCluster& c : cluster_list()) {
    json o;
    o["package"] = c.package;
    o["first_core"] = c.first_core;
    o["cores"] = c.cores;
    o["logical_processors"] = c.logical_processors;
    o["usable_cores"] = c.usable_cores;
    o["cpus"] = c.cpus.to_list();
    if (c.frequency_hz != 0) o["frequency_hz"] = c.frequency_hz;
    if (c.capacity != 0) o["capacity"] = c.capacity;
    o["performance"] = c.performance;
    list.push_back(o);
  }
  j["clusters"] = list;
  json cache;
  cache["source"] = caches.source;
  auto level = [&cache](const char* name, uint32_t bytes, uint32_t count) {
    if (bytes != 0) cache[name] = {{"bytes", bytes}, {"count", count}};
  };
  level("l1d", caches.l1d_bytes, caches.l1d_count);
  level("l2", caches.l2_bytes, caches.l2_count);
  level("l3", caches.l3_bytes, caches.l3_count);
  j["caches"] = cache;
  if (memory.total_bytes != 0) {
    j["memory"] = {{"total_bytes", memory.total_bytes},
                   {"available_bytes", memory.available_bytes}};
  }
  json isa_list = json::array();
  for (const char* f : kIsaNames) {
    if (has_isa(f)) isa_list.push_back(f);
  }
  j["isa"] = isa_list;
  json p;
  json batteries = json::array();
  for (const BatteryInfo& b : power.battery_list()) {
    json o = {{"name", b.name}, {"present", b.present}, {"status", battery_status_name(b.status)}};
    if (b.capacity_percent >= 0) o["capacity_percent"] = b.capacity_percent;
    batteries.push_back(o);
  }
  p["batteries"] = batteries;
  if (power.mains_online >= 0) p["mains_online"] = power.mains_online == 1;
  p["on_battery"] = power.on_battery();
  if (power.platform_profile[0] != '\0') p["platform_profile"] = power.platform_profile;
  p["power_saver"] = power.power_saver;
  j["power"] = p;
  if (thermal.known) {
    json t = {{"max_celsius", thermal.max_millicelsius / 1000.0},
              {"zone", thermal.zone_type},
              {"passive_trip_exceeded", thermal.passive_trip_exceeded}};
    if (thermal.passive_trip_millicelsius > 0) {
      t["passive_trip_celsius"] = thermal.passive_trip_millicelsius / 1000.0;
    }
    j["thermal"] = t;
  }
  if (load.known) {
    json l = {{"runnable_tasks", load.runnable_tasks}, {"load_average_1m", load.load_average_1m}};
    if (load.window_ms > 0) {
      l["busy_cpus"] = load.busy_cpus;
      l["window_ms"] = load.window_ms;
    } else if (load.idle_instant) {
      l["idle_instant"] = true;
    }
    j["load"] = l;
  }
  if (notes[0] != '\0') j["sources"] = notes;
  if (with_opencl) {
    const OpenClInfo& cl = opencl();
    json o;
    o["loader_found"] = cl.loader_found;
    if (cl.num_platforms == 0) o["error"] = cl.error;
    json platforms = json::array();
    for (const OpenClPlatform& pl : cl.platform_list()) {
      json devices = json::array();
      for (const OpenClDevice& d : pl.device_list()) {
        devices.push_back({{"name", d.name},
                           {"vendor", d.vendor},
                           {"version", d.version},
                           {"type", opencl_device_type_name(d.type)},
                           {"compute_units", d.compute_units},
                           {"global_memory_bytes", d.global_memory_bytes},
                           {"max_work_group_size", d.max_work_group_size}});
      }
      platforms.push_back({{"name", pl.name},
                           {"vendor", pl.vendor},
                           {"version", pl.version},
                           {"devices", devices}});
    }
    o["platforms"] = platforms;
    j["opencl"] = o;
  }
  return j.dump(2);
}

}  // namespace tessera
