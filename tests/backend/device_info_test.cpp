// DeviceInfo: detection is self-consistent on whatever machine runs the tests.
#include <gtest/gtest.h>

#include <string>

#include "tessera/backend/device_info.h"

namespace tessera {
namespace {

TEST(DeviceInfo, CoresAreConsistent) {
  const DeviceInfo& info = DeviceInfo::get();
  EXPECT_EQ(&info, &DeviceInfo::get());  // cached
  EXPECT_GE(info.logical_processors, info.physical_cores);
  EXPECT_GE(info.physical_cores, 1u);
  EXPECT_EQ(info.performance_cores + info.efficiency_cores,
            info.num_clusters > 0 ? info.physical_cores : info.performance_cores);
  EXPECT_GE(info.recommended_threads(), 1u);
  EXPECT_LE(info.recommended_threads(), info.physical_cores);
  uint32_t cluster_cores = 0;
  for (const CpuCluster& c : info.cluster_list()) cluster_cores += c.cores;
  if (info.num_clusters > 0) {
    EXPECT_EQ(cluster_cores, info.physical_cores);
  }
}

TEST(DeviceInfo, ReportsIsaAndCaches) {
  const DeviceInfo& info = DeviceInfo::get();
  EXPECT_FALSE(info.has_isa("no_such_feature"));
#if defined(__x86_64__)
  EXPECT_TRUE(info.has_isa("sse4_2") || !info.cpuinfo_ok);
  EXPECT_EQ(info.has_isa("avx2"), info.isa.avx2);
#endif
  if (info.cpuinfo_ok) {
    EXPECT_GT(info.caches.l1d_bytes, 0u);
  }
  std::string text = info.describe();
  EXPECT_NE(text.find("cores:"), std::string::npos);
  EXPECT_NE(text.find("isa:"), std::string::npos);
}

TEST(DeviceInfo, RecommendedThreadsIsThePerformanceCores) {
  DeviceInfo fake;
  fake.physical_cores = 8;
  fake.performance_cores = 4;
  fake.efficiency_cores = 4;
  EXPECT_EQ(fake.recommended_threads(), 4u);
  fake.performance_cores = 0;
  EXPECT_EQ(fake.recommended_threads(), 1u);
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
