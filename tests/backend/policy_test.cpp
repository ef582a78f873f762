// Policies: what each policy decides on the fixture machines (tests/backend/machines).
#include <gtest/gtest.h>

#include <string>

#include "tessera/backend/device_info.h"
#include "tessera/backend/policy.h"
#include "tests/testing/machines.h"

namespace tessera {
namespace {

using testing::machine;

TEST(Policy, NamesRoundTrip) {
  for (Policy p : {Policy::Auto, Policy::Latency, Policy::Balanced, Policy::PowerSaver}) {
    EXPECT_EQ(*parse_policy(policy_name(p)), p);
  }
  Result<Policy> bad = parse_policy("fast");
  EXPECT_EQ(bad.error(), Error::InvalidArgument);
  EXPECT_STREQ(bad.status().message(),
               "unknown policy 'fast' (expected auto, latency, balanced or power_saver)");
}

TEST(Policy, DefaultIsAutoAndSettable) {
  EXPECT_EQ(default_policy(), Policy::Auto);
  set_default_policy(Policy::Balanced);
  EXPECT_EQ(default_policy(), Policy::Balanced);
  set_default_policy(Policy::Auto);
}

TEST(Policy, AutoOnTheAmdVmUsesBothCores) {
  const PolicyDecision d = decide_policy(Policy::Auto, machine("amd_vm"));
  EXPECT_EQ(d.effective, Policy::Latency);
  EXPECT_EQ(d.threads, 2u);
  EXPECT_FALSE(d.yield_workers);
  EXPECT_TRUE(d.expensive_load_transforms);
  EXPECT_STREQ(d.threads_reason, "2 usable performance cores, policy latency (auto)");
  EXPECT_STREQ(d.reason, "auto: latency (not on battery)");
}

TEST(Policy, PhoneOnBatteryAtFifteenPercentSavesPower) {
  const PolicyDecision d = decide_policy(Policy::Auto, machine("arm_phone_battery"));
  EXPECT_EQ(d.effective, Policy::PowerSaver);
  EXPECT_STREQ(d.reason, "auto: on battery at 15% (below 30%)");
  EXPECT_EQ(d.threads, 1u);
  EXPECT_TRUE(d.yield_workers);
  EXPECT_FALSE(d.expensive_load_transforms);
  EXPECT_STREQ(d.threads_reason, "1 thread of 4, policy power_saver (auto)");
}

TEST(Policy, PhoneOnMainsUsesItsPerformanceCores) {
  const PolicyDecision d = decide_policy(Policy::Auto, machine("arm_phone_mains"));
  EXPECT_EQ(d.effective, Policy::Latency);
  EXPECT_EQ(d.threads, 4u);  // prime + 3 big; the LITTLE cores are left out
  EXPECT_FALSE(d.yield_workers);
  EXPECT_STREQ(d.threads_reason, "4 usable performance cores, policy latency (auto)");
}

TEST(Policy, AnExplicitPolicyWinsOverTheMachineState) {
  const DeviceInfo phone = machine("arm_phone_battery");
  const PolicyDecision latency = decide_policy(Policy::Latency, phone);
  EXPECT_EQ(latency.effective, Policy::Latency);
  EXPECT_EQ(latency.threads, 4u);
  EXPECT_STREQ(latency.reason, "latency (requested)");
  const PolicyDecision balanced = decide_policy(Policy::Balanced, phone);
  EXPECT_EQ(balanced.threads, 4u);
  EXPECT_TRUE(balanced.yield_workers);
  EXPECT_TRUE(balanced.expensive_load_transforms);
  const PolicyDecision saver = decide_policy(Policy::PowerSaver, machine("amd_vm"));
  EXPECT_EQ(saver.threads, 1u);
  EXPECT_STREQ(saver.threads_reason, "1 thread of 2, policy power_saver");
}

TEST(Policy, AutoSavesPowerInAPowerSavingProfileAndWhenHot) {
  const PolicyDecision laptop = decide_policy(Policy::Auto, machine("laptop_battery_low"));
  EXPECT_EQ(laptop.effective, Policy::PowerSaver);
  EXPECT_STREQ(laptop.reason, "auto: on battery at 15% (below 30%)");
  DeviceInfo profile_only = machine("laptop_battery_low");
  profile_only.power.num_batteries = 0;  // on mains, profile still low-power
  EXPECT_STREQ(decide_policy(Policy::Auto, profile_only).reason,
               "auto: platform profile 'low-power' saves power");
  const PolicyDecision hot = decide_policy(Policy::Auto, machine("hot_device"));
  EXPECT_EQ(hot.effective, Policy::PowerSaver);
  EXPECT_STREQ(hot.reason, "auto: x86_pkg_temp at 98.0 C, past a passive trip point");
}

TEST(Policy, AffinityAndQuotaBoundTheThreads) {
  const PolicyDecision one = decide_policy(Policy::Latency, machine("affinity_one_cpu"));
  EXPECT_EQ(one.threads, 1u);
  EXPECT_STREQ(one.threads_reason,
               "1 usable performance core, affinity 2 of 4 CPUs, policy latency");
  const PolicyDecision quota = decide_policy(Policy::Latency, machine("cgroup_quota"));
  EXPECT_EQ(quota.threads, 1u);
  EXPECT_STREQ(quota.threads_reason, "1 usable performance core, cpu quota 1.50, policy latency");
}

TEST(Policy, SmallMethodsRunOnOneThread) {
  PolicyDecision d = decide_policy(Policy::Latency, machine("amd_vm"));
  limit_threads_for_small_methods(kSmallMethodBytes, &d);  // not small
  EXPECT_EQ(d.threads, 2u);
  EXPECT_EQ(d.unloaded_threads, 2u);
  limit_threads_for_small_methods(200 * 1024, &d);
  EXPECT_EQ(d.threads, 1u);
  EXPECT_EQ(d.unloaded_threads, 1u);  // small whatever the load
  EXPECT_STREQ(d.threads_reason,
               "2 usable performance cores, policy latency; 1 for a small method (200 KiB of "
               "activations and weights)");
}

TEST(Policy, AutoLeavesCpusThatOthersKeepBusy) {
  const DeviceInfo busy = machine("busy_neighbour", /*sample_load=*/true);
  const PolicyDecision d = decide_policy(Policy::Auto, busy);
  EXPECT_EQ(d.effective, Policy::Latency);
  EXPECT_EQ(d.threads, 1u);  // one of the two CPUs is free
  EXPECT_TRUE(d.yield_workers);
  EXPECT_STREQ(d.reason, "auto: latency, 1.0 CPUs busy with other processes");
  // What it left to the neighbour, and what it gives an unloaded machine (the selection
  // cache's key).
  EXPECT_DOUBLE_EQ(d.others_busy_cpus, 1.0);
  EXPECT_EQ(d.unloaded_threads, 2u);
  EXPECT_FALSE(d.unloaded_yield_workers);
  // An explicit latency policy takes both regardless.
  const PolicyDecision latency = decide_policy(Policy::Latency, busy);
  EXPECT_EQ(latency.threads, 2u);
  EXPECT_EQ(latency.others_busy_cpus, 0.0);
  // Without a sample (no window), nothing is known to be busy.
  EXPECT_EQ(decide_policy(Policy::Auto, machine("busy_neighbour")).threads, 2u);
}

TEST(Policy, AutoTakesEveryCoreWhenNothingElseIsRunnable) {
  // The same /proc/stat samples as busy_neighbour, but nothing else runnable at the load.
  const PolicyDecision d = decide_policy(Policy::Auto, machine("idle_now", /*sample_load=*/true));
  EXPECT_EQ(d.effective, Policy::Latency);
  EXPECT_EQ(d.threads, 2u);
  EXPECT_FALSE(d.yield_workers);
  EXPECT_STREQ(d.reason, "auto: latency (not on battery)");
  EXPECT_EQ(d.others_busy_cpus, 0.0);
  EXPECT_EQ(d.unloaded_threads, 2u);
}

TEST(Policy, PowerSaverAndBalancedAreTheSameUnloaded) {
  const PolicyDecision saver = decide_policy(Policy::PowerSaver, machine("amd_vm"));
  EXPECT_EQ(saver.unloaded_threads, 1u);
  EXPECT_TRUE(saver.unloaded_yield_workers);
  const PolicyDecision balanced = decide_policy(Policy::Balanced, machine("amd_vm"));
  EXPECT_EQ(balanced.unloaded_threads, balanced.threads);
  EXPECT_TRUE(balanced.unloaded_yield_workers);
}

}  // namespace
}  // namespace tessera
