// The load's policy, end to end through Program::load_method: decided once per load on the
// machine the caller names (here fixture trees), read by the backends, and reported back.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "tessera/backend/derived_values.h"
#include "tessera/backend/device_info.h"
#include "tessera/backend/options_map.h"
#include "tessera/backend/policy.h"
#include "tessera/runtime/data_loader.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program.h"
#include "tests/testing/machines.h"
#include "tests/testing/test_programs.h"

namespace tessera {
namespace {

using testing::machine;

class PolicyLoad : public ::testing::Test {
 protected:
  void SetUp() override {
    // 2 MiB of activations: above kSmallMethodBytes, so the policy's thread count stands.
    auto loaded = testing::load_built_program(
        testing::delegate_chain_program({"xnnpack", "portable"}, {}, {512, 1024}));
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    loaded_ = std::move(*loaded);
    program_ = loaded_.program.get();
  }
  testing::LoadedProgram loaded_;
  Program* program_ = nullptr;
};

const DerivedValue& derived(const Method& m, const char* key) {
  static const DerivedValue none{};
  const DelegateInfo& d = m.delegate_info(0);
  if (d.derived == nullptr || d.derived->find(key) == nullptr) return none;
  return *d.derived->find(key);
}

// The seed's scenario: a phone on battery at 15 % loads with 1 thread and sleeping workers; on
// mains with all its performance cores; the delegate report says why.
TEST_F(PolicyLoad, PhoneOnBatteryThenOnMains) {
  const DeviceInfo battery = machine("arm_phone_battery");
  LoadOptions on_battery;
  on_battery.device_info = &battery;
  auto a = program_->load_method("forward", nullptr, on_battery);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->policy().effective, Policy::PowerSaver);
  EXPECT_STREQ(a->policy().reason, "auto: on battery at 15% (below 30%)");
  EXPECT_STREQ(derived(*a, "num_threads").value, "1");
  EXPECT_STREQ(derived(*a, "num_threads").reason, "auto: 1 thread of 4, policy power_saver (auto)");
  EXPECT_STREQ(derived(*a, "yield_workers").value, "true");
  ASSERT_TRUE(a->execute().is_ok());

  const DeviceInfo mains = machine("arm_phone_mains");
  LoadOptions on_mains;
  on_mains.device_info = &mains;
  auto b = program_->load_method("forward", nullptr, on_mains);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->policy().effective, Policy::Latency);
  EXPECT_STREQ(derived(*b, "num_threads").value, "4");
  EXPECT_STREQ(derived(*b, "yield_workers").value, "false");

  // The application's explicit policy wins over the battery.
  LoadOptions forced = on_battery;
  forced.set_policy(Policy::Latency);
  auto c = program_->load_method("forward", nullptr, forced);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->policy().effective, Policy::Latency);
  EXPECT_STREQ(derived(*c, "num_threads").value, "4");
}

TEST_F(PolicyLoad, ProcessDefaultPolicyAppliesToLoadsThatSetNone) {
  const DeviceInfo mains = machine("arm_phone_mains");
  set_default_policy(Policy::PowerSaver);
  LoadOptions o;
  o.device_info = &mains;
  auto m = program_->load_method("forward", nullptr, o);
  set_default_policy(Policy::Auto);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->policy().requested, Policy::PowerSaver);
  EXPECT_STREQ(derived(*m, "num_threads").value, "1");
}

// Threads set for the load: the method's xnnpack delegates around a portable one share one pool
// (XNNPACK's workers spin after each run: one pool per delegate starved the next delegate's),
// and each delegate's report says so.
TEST(PolicyLoadPools, LoadScopeThreadsRunOnOnePoolPerMethod) {
  auto loaded = testing::load_built_program(
      testing::delegate_chain_program({"xnnpack", "portable", "xnnpack"}, {}, {512, 1024}));
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const DeviceInfo mains = machine("arm_phone_mains");
  LoadBackendOptionsMap load;
  ASSERT_TRUE(load.set("xnnpack", OptionKey<int64_t>{"num_threads"}, 2).is_ok());
  LoadOptions o;
  o.device_info = &mains;
  o.backend_options = &load;
  auto m = loaded->program->load_method("forward", nullptr, o);
  ASSERT_TRUE(m.ok()) << m.status().message();
  for (size_t i : {size_t{0}, size_t{2}}) {
    const DelegateInfo& d = m->delegate_info(i);
    ASSERT_NE(d.derived, nullptr);
    const DerivedValue* pool = d.derived->find("thread_pool");
    ASSERT_NE(pool, nullptr) << d.id;
    EXPECT_STREQ(pool->value, "method");
    EXPECT_STREQ(pool->reason,
                 "num_threads set (load): the method's pool of 2 threads, shared by its xnnpack "
                 "delegates of that size");
  }
  ASSERT_TRUE(m->execute().is_ok());
}

TEST(PolicyLoadSmall, SmallMethodsRunOnOneThread) {
  auto bytes = testing::delegate_chain_program({"xnnpack"}).build();  // [2, 4]: 32 bytes
  ASSERT_TRUE(bytes.ok());
  testing::AlignedBuffer buffer(*bytes);
  BufferDataLoader loader(buffer.data(), buffer.size());
  auto program = Program::load(&loader);
  ASSERT_TRUE(program.ok());
  const DeviceInfo mains = machine("arm_phone_mains");
  LoadOptions o;
  o.device_info = &mains;
  auto m = program->load_method("forward", nullptr, o);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->policy().threads, 1u);
  EXPECT_STREQ(m->policy().threads_reason,
               "4 usable performance cores, policy latency (auto); 1 for a small method (0 KiB of "
               "activations and weights)");
  EXPECT_STREQ(derived(*m, "num_threads").value, "1");
}

TEST_F(PolicyLoad, ThisMachineByDefault) {
  auto m = program_->load_method("forward", nullptr, LoadOptions{});
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_GE(m->policy().threads, 1u);
  EXPECT_LE(m->policy().threads, DeviceInfo::get().usable_cpus);
  EXPECT_NE(m->policy().threads_reason[0], '\0');
  // The portable delegate derives nothing, and says so by an empty list.
  ASSERT_NE(m->delegate_info(1).derived, nullptr);
  EXPECT_EQ(m->delegate_info(1).derived->size(), 0u);
}

}  // namespace
}  // namespace tessera
