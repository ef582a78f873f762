// DeviceInfo: each fixture machine tree (tests/backend/machines, written by make_machines.py)
// gives the DeviceInfo written out here; the live machine gives a coherent one, whatever it is.
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <string>

#include <nlohmann/json.hpp>

#include "tessera/backend/device_info.h"
#include "tessera/backend/device_probe.h"
#include "tests/testing/machines.h"

namespace tessera {
namespace {

using testing::machine;

void expect_no_zero_core_cluster(const DeviceInfo& info) {
  uint32_t cores = 0;
  for (const CpuCluster& c : info.cluster_list()) {
    EXPECT_GT(c.cores, 0u);
    EXPECT_GE(c.logical_processors, c.cores);
    cores += c.cores;
  }
  EXPECT_EQ(cores, info.physical_cores);
  EXPECT_EQ(info.describe().find("4294967295"), std::string::npos);
  EXPECT_EQ(info.describe().find(" 0 KiB"), std::string::npos);
}

TEST(DeviceInfoMachines, AmdVmWithoutCacheDirectories) {
  const DeviceInfo info = machine("amd_vm");
  EXPECT_STREQ(info.cpu_name, "AMD EPYC");
  EXPECT_STREQ(info.vendor, "amd");
  EXPECT_EQ(info.online_cpus, 2u);
  EXPECT_EQ(info.usable_cpus, 2u);
  EXPECT_EQ(info.physical_cores, 2u);
  EXPECT_EQ(info.performance_cores, 2u);
  EXPECT_EQ(info.efficiency_cores, 0u);
  EXPECT_EQ(info.num_clusters, 1u);
  EXPECT_EQ(info.cpu_quota, 0.0);  // cfs_quota_us = -1: no quota
  EXPECT_EQ(info.recommended_threads(), 2u);
  // No /sys/.../cache: the caches come from CPUID (leaf 0x8000001D is empty on this VM, so
  // from the older AMD leaves).
  EXPECT_STREQ(info.caches.source, "cpuid");
  EXPECT_EQ(info.caches.l1d_bytes, 48u * 1024);
  EXPECT_EQ(info.caches.l1d_count, 2u);
  EXPECT_EQ(info.caches.l2_bytes, 1024u * 1024);
  EXPECT_EQ(info.caches.l2_count, 2u);
  EXPECT_EQ(info.caches.l3_bytes, 1016u * 512 * 1024);
  EXPECT_EQ(info.caches.l3_count, 1u);
  EXPECT_TRUE(info.has_isa("avx512_bf16"));
  EXPECT_FALSE(info.has_isa("amx_bf16"));
  EXPECT_EQ(info.power.num_batteries, 0u);
  EXPECT_FALSE(info.power.on_battery());
  EXPECT_FALSE(info.thermal.known);
  EXPECT_EQ(info.memory.total_bytes, 16ull << 30);
  expect_no_zero_core_cluster(info);
}

TEST(DeviceInfoMachines, UnreadableCachesAreUnknownNotZero) {
  // The phone has no cache directories and no CPUID: every level is unknown.
  const DeviceInfo info = machine("arm_phone_battery");
  EXPECT_STREQ(info.caches.source, "none");
  EXPECT_EQ(info.caches.l1d_bytes, 0u);
  const std::string text = info.describe();
  EXPECT_NE(text.find("L1d unknown, L2 unknown, L3 unknown"), std::string::npos) << text;
  const auto json = nlohmann::json::parse(info.to_json());
  EXPECT_EQ(json["caches"], nlohmann::json({{"source", "none"}}));
}

TEST(DeviceInfoMachines, IntelHybridLaptop) {
  const DeviceInfo info = machine("intel_hybrid_laptop");
  EXPECT_STREQ(info.vendor, "intel");
  EXPECT_EQ(info.online_cpus, 16u);
  EXPECT_EQ(info.physical_cores, 12u);
  EXPECT_EQ(info.performance_cores, 4u);
  EXPECT_EQ(info.efficiency_cores, 8u);
  EXPECT_EQ(info.usable_performance_cores, 4u);
  EXPECT_EQ(info.usable_efficiency_cores, 8u);
  EXPECT_EQ(info.recommended_threads(), 4u);
  ASSERT_EQ(info.num_clusters, 2u);
  EXPECT_TRUE(info.clusters[0].performance);
  EXPECT_EQ(info.clusters[0].cores, 4u);
  EXPECT_EQ(info.clusters[0].logical_processors, 8u);
  EXPECT_EQ(info.clusters[0].frequency_hz, 4700000000ull);
  EXPECT_FALSE(info.clusters[1].performance);
  EXPECT_EQ(info.clusters[1].cores, 8u);
  EXPECT_EQ(info.clusters[1].first_core, 4u);
  EXPECT_STREQ(info.caches.source, "sysfs");
  EXPECT_EQ(info.caches.l1d_bytes, 48u * 1024);
  EXPECT_EQ(info.caches.l1d_count, 8u);  // 16 CPUs, each L1d shared by 2 threads
  EXPECT_EQ(info.caches.l2_bytes, 1280u * 1024);
  EXPECT_EQ(info.caches.l3_bytes, 18u * 1024 * 1024);
  EXPECT_EQ(info.caches.l3_count, 1u);
  EXPECT_EQ(info.power.mains_online, 1);
  ASSERT_EQ(info.power.num_batteries, 1u);
  EXPECT_EQ(info.power.batteries[0].status, BatteryStatus::Charging);
  EXPECT_EQ(info.power.battery_percent(), 80);
  EXPECT_FALSE(info.power.on_battery());
  EXPECT_STREQ(info.power.platform_profile, "balanced");
  EXPECT_FALSE(info.power.power_saver);
  EXPECT_TRUE(info.thermal.known);
  EXPECT_EQ(info.thermal.max_millicelsius, 55000);
  EXPECT_EQ(info.thermal.passive_trip_millicelsius, 95000);
  EXPECT_FALSE(info.thermal.passive_trip_exceeded);
  expect_no_zero_core_cluster(info);
}

TEST(DeviceInfoMachines, ArmBigLittlePhoneOnBattery) {
  const DeviceInfo info = machine("arm_phone_battery");
  EXPECT_STREQ(info.vendor, "arm");
  EXPECT_EQ(info.online_cpus, 8u);
  EXPECT_EQ(info.physical_cores, 8u);
  // prime (1024) and big (870) are performance, LITTLE (400) efficiency.
  EXPECT_EQ(info.performance_cores, 4u);
  EXPECT_EQ(info.efficiency_cores, 4u);
  EXPECT_EQ(info.recommended_threads(), 4u);
  ASSERT_EQ(info.num_clusters, 3u);
  EXPECT_EQ(info.clusters[0].capacity, 1024u);
  EXPECT_EQ(info.clusters[0].cores, 1u);
  EXPECT_EQ(info.clusters[1].capacity, 870u);
  EXPECT_EQ(info.clusters[1].cores, 3u);
  EXPECT_EQ(info.clusters[2].capacity, 400u);
  EXPECT_FALSE(info.clusters[2].performance);
  EXPECT_TRUE(info.has_isa("neon"));
  EXPECT_TRUE(info.has_isa("neon_dot"));
  EXPECT_TRUE(info.has_isa("arm_bf16"));
  EXPECT_FALSE(info.has_isa("avx2"));
  // A supply named "battery" (not BATn) is found.
  ASSERT_EQ(info.power.num_batteries, 1u);
  EXPECT_STREQ(info.power.batteries[0].name, "battery");
  EXPECT_EQ(info.power.batteries[0].status, BatteryStatus::Discharging);
  EXPECT_EQ(info.power.battery_percent(), 15);
  EXPECT_EQ(info.power.mains_online, 0);
  EXPECT_TRUE(info.power.on_battery());
  expect_no_zero_core_cluster(info);
}

TEST(DeviceInfoMachines, OneCpuAffinityMask) {
  const DeviceInfo info = machine("affinity_one_cpu");
  EXPECT_EQ(info.online_cpus, 4u);
  EXPECT_EQ(info.affinity.to_list(), "2");
  EXPECT_EQ(info.usable_cpus, 1u);
  EXPECT_EQ(info.usable_performance_cores, 1u);
  EXPECT_EQ(info.recommended_threads(), 1u);
  EXPECT_EQ(info.clusters[0].usable_cores, 1u);
  EXPECT_EQ(info.physical_cores, 4u);
  EXPECT_EQ(info.caches.l3_bytes, 16u * 1024 * 1024);
}

TEST(DeviceInfoMachines, CgroupQuotaOfOneAndAHalfCpus) {
  const DeviceInfo info = machine("cgroup_quota");
  EXPECT_DOUBLE_EQ(info.cpu_quota, 1.5);  // the parent's limit, the smallest on the path
  EXPECT_EQ(info.affinity.count(), 4u);
  EXPECT_EQ(info.usable_cpus, 1u);
  EXPECT_EQ(info.recommended_threads(), 1u);
  EXPECT_NE(info.describe().find("cpu quota 1.50"), std::string::npos);
  const auto json = nlohmann::json::parse(info.to_json());
  EXPECT_DOUBLE_EQ(json["cpu_quota"].get<double>(), 1.5);
  EXPECT_EQ(json["usable_cpus"], 1);
}

TEST(DeviceInfoMachines, LaptopOnBatteryAtFifteenPercent) {
  const DeviceInfo info = machine("laptop_battery_low");
  EXPECT_EQ(info.online_cpus, 8u);
  EXPECT_EQ(info.physical_cores, 4u);  // 2 threads a core
  EXPECT_EQ(info.recommended_threads(), 4u);
  EXPECT_TRUE(info.power.on_battery());
  EXPECT_EQ(info.power.battery_percent(), 15);
  EXPECT_EQ(info.power.mains_online, 0);
  EXPECT_TRUE(info.power.power_saver);  // platform_profile low-power
  const auto json = nlohmann::json::parse(info.to_json());
  EXPECT_EQ(json["power"]["batteries"][0]["status"], "discharging");
  EXPECT_EQ(json["power"]["batteries"][0]["capacity_percent"], 15);
  EXPECT_EQ(json["power"]["on_battery"], true);
}

TEST(DeviceInfoMachines, HotDevicePastItsPassiveTrip) {
  const DeviceInfo info = machine("hot_device");
  EXPECT_TRUE(info.thermal.known);
  EXPECT_EQ(info.thermal.max_millicelsius, 98000);
  EXPECT_STREQ(info.thermal.zone_type, "x86_pkg_temp");
  EXPECT_TRUE(info.thermal.passive_trip_exceeded);
  EXPECT_NE(info.describe().find("passive trip exceeded"), std::string::npos);
}

TEST(DeviceInfoMachines, BusyNeighbourFromTwoStatSamples) {
  const DeviceInfo info = machine("busy_neighbour");
  EXPECT_TRUE(info.load.known);
  EXPECT_EQ(info.load.runnable_tasks, 2u);
  // detect() takes no window; refresh_state with one compares proc/stat and proc/stat.later.
  DeviceInfo refreshed = info;
  refreshed.refresh_state(testing::machine_probe("busy_neighbour"));
  EXPECT_NEAR(refreshed.load.busy_cpus, 1.0, 1e-9);
  EXPECT_GT(refreshed.load.window_ms, 0.0);
}

TEST(DeviceInfoMachines, NoWindowWhenNothingElseIsRunnable) {
  // idle_now has busy_neighbour's two /proc/stat samples, but /proc/loadavg counts only the
  // reader: the load does not sample (and would otherwise have read one CPU busy).
  DeviceInfo refreshed = machine("idle_now");
  EXPECT_FALSE(refreshed.load.idle_instant);  // detect() asks for no window: nothing skipped
  refreshed.refresh_state(testing::machine_probe("idle_now"));
  EXPECT_TRUE(refreshed.load.known);
  EXPECT_EQ(refreshed.load.runnable_tasks, 1u);
  EXPECT_TRUE(refreshed.load.idle_instant);
  EXPECT_EQ(refreshed.load.window_ms, 0.0);
  EXPECT_EQ(refreshed.load.busy_cpus, 0.0);
  EXPECT_NE(refreshed.describe().find("no other task runnable (no sample needed)"),
            std::string::npos);
  const auto json = nlohmann::json::parse(refreshed.to_json());
  EXPECT_EQ(json["load"]["idle_instant"], true);
  EXPECT_FALSE(json["load"].contains("busy_cpus"));
  // busy_neighbour counts a second runnable task: it samples, as before.
  DeviceInfo busy = machine("busy_neighbour");
  busy.refresh_state(testing::machine_probe("busy_neighbour"));
  EXPECT_FALSE(busy.load.idle_instant);
  EXPECT_FALSE(nlohmann::json::parse(busy.to_json())["load"].contains("idle_instant"));
}

TEST(DeviceInfoMachines, ATaskRunnableAtOneReadOnlyTakesNoWindow) {
  // passing_task: /proc/loadavg counts a second runnable task at the first read and only the
  // reader at the next (a live probe reads up to five times, 1 ms apart): no process keeps a
  // CPU busy, so the load takes no window, although the /proc/stat samples would read one busy.
  DeviceInfo refreshed = machine("passing_task");
  EXPECT_EQ(refreshed.load.runnable_tasks, 2u);  // detect(): one read, no window asked for
  refreshed.refresh_state(testing::machine_probe("passing_task"));
  EXPECT_TRUE(refreshed.load.idle_instant);
  EXPECT_EQ(refreshed.load.runnable_tasks, 1u);  // the fewest of the reads
  EXPECT_EQ(refreshed.load.window_ms, 0.0);
  EXPECT_EQ(refreshed.load.busy_cpus, 0.0);
}

TEST(DeviceInfoMachines, TopologyFromCpuinfoWhereSysfsHidesIt) {
  // No sysfs topology directories: without /proc/cpuinfo's ids every CPU would count as a core.
  const DeviceInfo info = machine("container_smt");
  EXPECT_EQ(info.online_cpus, 4u);
  EXPECT_EQ(info.physical_cores, 2u);
  EXPECT_EQ(info.usable_performance_cores, 2u);
  EXPECT_EQ(info.recommended_threads(), 2u);
  EXPECT_NE(std::string(info.notes).find("topology from /proc/cpuinfo"), std::string::npos)
      << info.notes;
  expect_no_zero_core_cluster(info);
}

TEST(DeviceInfoMachines, CpuinfoThatDisagreesWithSysfsIsNotedNotUsed) {
  const DeviceInfo info = machine("cpuinfo_disagrees");
  EXPECT_EQ(info.physical_cores, 4u);
  EXPECT_NE(std::string(info.notes).find("/proc/cpuinfo disagrees: 2 cores (sysfs 4, used)"),
            std::string::npos)
      << info.notes;
  // The fixtures whose /proc/cpuinfo agrees carry no such note.
  for (const char* name : {"amd_vm", "intel_hybrid_laptop", "laptop_battery_low"}) {
    EXPECT_EQ(std::string(machine(name).notes).find("disagrees"), std::string::npos) << name;
  }
}

TEST(DeviceInfoParsers, CpuLists) {
  CpuSet set;
  ASSERT_TRUE(CpuSet::parse_list("0-3,8,10-11\n", &set));
  EXPECT_EQ(set.count(), 7u);
  EXPECT_EQ(set.to_list(), "0-3,8,10-11");
  EXPECT_FALSE(CpuSet::parse_list("3-1", &set));
  EXPECT_FALSE(CpuSet::parse_list("a", &set));
  EXPECT_FALSE(CpuSet::parse_list("1,,2", &set));
  EXPECT_FALSE(CpuSet::parse_list("99999", &set));  // past kMaxCpus
  ASSERT_TRUE(CpuSet::parse_list("", &set));
  EXPECT_EQ(set.count(), 0u);
}

TEST(DeviceInfoParsers, CacheSizesAndStat) {
  EXPECT_EQ(internal::parse_cache_size("32K\n"), 32u * 1024);
  EXPECT_EQ(internal::parse_cache_size("8M"), 8u << 20);
  EXPECT_EQ(internal::parse_cache_size("512"), 512u);
  EXPECT_EQ(internal::parse_cache_size("K"), 0u);
  EXPECT_EQ(internal::parse_cache_size("12x"), 0u);
  const internal::CpuTimes a = internal::parse_proc_stat(
      "cpu  1 2 3 4\ncpu0 10 0 10 80 0 0 0 0\n"
      "cpu1 0 0 0 100 0 0 0 0\nintr 5\n");
  const internal::CpuTimes b = internal::parse_proc_stat(
      "cpu0 20 0 20 140 0 0 0 0\n"
      "cpu1 50 0 0 150 0 0 0 0\n");
  ASSERT_EQ(a.busy.size(), 2u);
  CpuSet both;
  both.add(0);
  both.add(1);
  // cpu0: 20 busy of 80, cpu1: 50 of 100; this process used 20 of those ticks.
  EXPECT_NEAR(internal::busy_cpus_between(a, b, 100, 120, both), 50.0 / 90.0, 1e-9);
  EXPECT_EQ(internal::parse_self_ticks("1 (a b) S 1 1 1 0 -1 0 0 0 0 0 7 3 0"), 10u);
  EXPECT_EQ(internal::parse_self_ticks("garbage"), 0u);
}

TEST(DeviceInfoLive, CoherentOnThisMachine) {
  const DeviceInfo& info = DeviceInfo::get();
  EXPECT_EQ(&info, &DeviceInfo::get());  // cached
  EXPECT_GE(info.usable_cpus, 1u);
  EXPECT_LE(info.usable_cpus, info.online_cpus);
  EXPECT_GE(info.online_cpus, info.physical_cores);
  EXPECT_GE(info.recommended_threads(), 1u);
  EXPECT_LE(info.recommended_threads(), info.usable_cpus);
  expect_no_zero_core_cluster(info);
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (std::getenv("TESSERA_SYSFS_ROOT") == nullptr &&
      sched_getaffinity(0, sizeof mask, &mask) == 0 && info.cpu_quota == 0) {
    // Unconfined by a quota: every CPU of the affinity mask (what nproc prints) is usable.
    EXPECT_EQ(info.usable_cpus, static_cast<uint32_t>(CPU_COUNT(&mask)));
  }
  // A cache is known (non-zero) or left out; never "0 KiB".
  const auto json = nlohmann::json::parse(info.to_json());
  for (const char* level : {"l1d", "l2", "l3"}) {
    if (json["caches"].contains(level)) {
      EXPECT_GT(json["caches"][level]["bytes"].get<int64_t>(), 0);
    }
  }
  EXPECT_FALSE(info.has_isa("no_such_feature"));
#if defined(__x86_64__)
  EXPECT_EQ(info.has_isa("avx2"), info.isa.avx2);
#endif
}

TEST(DeviceInfoLive, EnvironmentRootRedirectsDetection) {
  ::setenv("TESSERA_SYSFS_ROOT", (std::string(TESSERA_MACHINES_DIR) + "/amd_vm").c_str(), 1);
  const DeviceInfo info = DeviceInfo::detect();
  ::unsetenv("TESSERA_SYSFS_ROOT");
  EXPECT_STREQ(info.cpu_name, "AMD EPYC");
  EXPECT_STREQ(info.caches.source, "cpuid");
}

TEST(DeviceInfo, OpenClProbeIsSafeWithOrWithoutAnIcd) {
  const OpenClInfo& cl = DeviceInfo::get().opencl();
  EXPECT_LE(cl.num_platforms, OpenClInfo::kMaxPlatforms);
  if (cl.num_platforms == 0) {
    EXPECT_NE(cl.error[0], '\0');
  }
  for (const OpenClPlatform& p : cl.platform_list()) {
    EXPECT_NE(p.name[0], '\0');
    EXPECT_LE(p.num_devices, OpenClPlatform::kMaxDevices);
  }
  EXPECT_NE(DeviceInfo::get().describe(true).find("opencl"), std::string::npos);
  EXPECT_TRUE(nlohmann::json::parse(DeviceInfo::get().to_json(true)).contains("opencl"));
}

TEST(DeviceInfo, FakeOpenClForTests) {
  OpenClInfo cl;
  cl.loader_found = true;
  cl.num_platforms = 1;
  cl.platforms[0].num_devices = 2;
  cl.platforms[0].devices[0].type = OpenClDeviceType::Gpu;
  cl.platforms[0].devices[1].type = OpenClDeviceType::Cpu;
  DeviceInfo fake;
  fake.opencl_override = &cl;
  EXPECT_EQ(fake.opencl().count_devices(OpenClDeviceType::Gpu), 1u);
  EXPECT_STREQ(opencl_device_type_name(OpenClDeviceType::Accelerator), "accelerator");
}

}  // namespace
}  // namespace tessera
