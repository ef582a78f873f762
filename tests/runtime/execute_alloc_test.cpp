// Method::execute allocates nothing on the heap: kernels, the portable backend, delegates and
// execute options included. This binary interposes malloc/calloc/realloc (which operator new
// uses too) to count every heap allocation.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "tessera/backend/execute_options.h"
#include "tessera/backend/options.h"
#include "tessera/backend/registry.h"
#include "tessera/backend/testing/stub_backend.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program.h"
#include "tests/testing/test_programs.h"

extern "C" void* __libc_malloc(size_t);
extern "C" void* __libc_calloc(size_t, size_t);
extern "C" void* __libc_realloc(void*, size_t);

namespace {
std::atomic<long> g_heap_calls{0};
}

extern "C" void* malloc(size_t n) {
  g_heap_calls.fetch_add(1, std::memory_order_relaxed);
  return __libc_malloc(n);
}
extern "C" void* calloc(size_t n, size_t m) {
  g_heap_calls.fetch_add(1, std::memory_order_relaxed);
  return __libc_calloc(n, m);
}
extern "C" void* realloc(void* p, size_t n) {
  g_heap_calls.fetch_add(1, std::memory_order_relaxed);
  return __libc_realloc(p, n);
}

namespace tessera {
namespace {

template <typename F>
long heap_calls_in(F&& fn) {
  long before = g_heap_calls.load();
  fn();
  return g_heap_calls.load() - before;
}

constexpr OptionSpec kSchema[] = {
    OptionSpec::boolean(OptionKey<bool>{"profile"}, false, OptionLevel::Execute,
                        "per-call profile"),
};
constexpr OptionKey<bool> kProfile{"profile"};

TEST(ExecuteAllocations, CountingWorks) {
  EXPECT_GE(heap_calls_in([] {
              void* p = std::malloc(16);
              std::free(p);
            }),
            1);
}

// Registered once for the binary: a backend must outlive the Methods that use it.
const bool kRegistered =
    register_backend("stub_alloc", std::make_unique<testing::StubBackend>(kSchema)).is_ok();

TEST(ExecuteAllocations, KernelsAndDelegatesWithAndWithoutExecuteOptions) {
  ASSERT_TRUE(kRegistered);
  // Kernels only.
  auto kernels = testing::add_relu_mul_program().build();
  testing::AlignedBuffer kbuf(*kernels);
  BufferDataLoader kloader(kbuf.data(), kbuf.size());
  auto kprogram = Program::load(&kloader);
  ASSERT_TRUE(kprogram.ok());
  auto km = kprogram->load_method("forward");
  ASSERT_TRUE(km.ok());
  // A stub delegate, then a delegate retargeted to the portable backend.
  auto delegates = testing::delegate_chain_program({"stub_alloc", "other"}).build();
  testing::AlignedBuffer dbuf(*delegates);
  BufferDataLoader dloader(dbuf.data(), dbuf.size());
  auto dprogram = Program::load(&dloader);
  ASSERT_TRUE(dprogram.ok());
  LoadOptions load;
  ASSERT_TRUE(load.add_retarget("other", "portable").is_ok());
  auto dm = dprogram->load_method("forward", nullptr, load);
  ASSERT_TRUE(dm.ok()) << dm.status().message();

  ExecuteOptions exec;
  ASSERT_TRUE(exec.set("stub_alloc", kProfile, true).is_ok());
  ExecuteOptions portable_profile;
  ASSERT_TRUE(portable_profile.set("portable", kProfile, true).is_ok());
  ProfileEvent storage[4];
  ProfileBuffer profile({storage, 4});
  // Warm once (first calls may touch lazily initialised state outside Tessera).
  ASSERT_TRUE(km->execute().is_ok());
  ASSERT_TRUE(dm->execute(exec, &profile).is_ok());

  EXPECT_EQ(heap_calls_in([&] {
              for (int i = 0; i < 100; ++i) ASSERT_TRUE(km->execute().is_ok());
            }),
            0);
  EXPECT_EQ(heap_calls_in([&] {
              for (int i = 0; i < 100; ++i) ASSERT_TRUE(dm->execute().is_ok());
            }),
            0);
  EXPECT_EQ(heap_calls_in([&] {
              for (int i = 0; i < 100; ++i) {
                profile.clear();
                ASSERT_TRUE(dm->execute(exec, &profile).is_ok());
                ASSERT_TRUE(dm->execute(portable_profile, &profile).is_ok());
              }
            }),
            0);
  EXPECT_EQ(heap_calls_in([&] { ASSERT_TRUE(dm->execute(ExecuteOptions::none()).is_ok()); }), 0);
}

// Loaded with on_execute_failure = fallback, a Method whose delegates do not fail allocates
// nothing either: recovery is prepared at load.
TEST(ExecuteAllocations, WithRecoveryPreparedForExecuteFailures) {
  ASSERT_TRUE(kRegistered);
  auto bytes = testing::delegate_chain_program({"stub_alloc", "stub_alloc"}).build();
  testing::AlignedBuffer buf(*bytes);
  BufferDataLoader loader(buf.data(), buf.size());
  auto program = Program::load(&loader);
  ASSERT_TRUE(program.ok());
  LoadOptions load;
  ASSERT_TRUE(load.set_fallback("portable").is_ok());
  load.on_execute_failure = OnExecuteFailure::Fallback;
  auto m = program->load_method("forward", nullptr, load);
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_TRUE(m->execute().is_ok());
  EXPECT_EQ(heap_calls_in([&] {
              for (int i = 0; i < 100; ++i) ASSERT_TRUE(m->execute().is_ok());
            }),
            0);
}

// With a startup backend: executes on it while the delegate's own backend initialises in the
// background, the execute that switches to it, and those after allocate nothing.
TEST(ExecuteAllocations, AcrossAStartupBackendSwitch) {
  static std::atomic<bool> release{false};
  static std::atomic<bool> init_done{false};
  static int handle_target = 0;
  auto device = std::make_unique<testing::StubBackend>(kSchema);
  device->on_init_would_be_cold = [](const BackendInitContext&) -> Result<bool> { return true; };
  device->on_init = [](BackendInitContext&, FreeableBuffer*,
                       Span<const CompileSpec>) -> Result<DelegateHandle*> {
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    init_done = true;
    return to_handle(&handle_target);
  };
  ASSERT_TRUE(register_backend("alloc_device", std::move(device)).is_ok());
  ASSERT_TRUE(
      register_backend("alloc_cpu", std::make_unique<testing::StubBackend>(kSchema)).is_ok());
  {
    auto bytes = testing::delegate_chain_program({"alloc_device"}).build();
    testing::AlignedBuffer buf(*bytes);
    BufferDataLoader loader(buf.data(), buf.size());
    auto program = Program::load(&loader);
    ASSERT_TRUE(program.ok());
    LoadOptions load;
    ASSERT_TRUE(load.set_startup_backend("alloc_cpu").is_ok());
    auto m = program->load_method("forward", nullptr, load);
    ASSERT_TRUE(m.ok()) << m.status().message();
    ASSERT_TRUE(m->execute().is_ok());
    EXPECT_EQ(heap_calls_in([&] {
                for (int i = 0; i < 50; ++i) ASSERT_TRUE(m->execute().is_ok());
              }),
              0);
    EXPECT_STREQ(m->delegate_info(0).backend, "alloc_cpu");
    release = true;
    while (!init_done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    // Let the background thread finish what follows the init (it allocates on its own time).
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(heap_calls_in([&] {
                for (int i = 0; i < 50; ++i) ASSERT_TRUE(m->execute().is_ok());
              }),
              0);
    EXPECT_STREQ(m->delegate_info(0).backend, "alloc_device");
    EXPECT_EQ(m->delegate_info(0).startup.target_executes, 50u);
  }
  (void)unregister_backend("alloc_device");
  (void)unregister_backend("alloc_cpu");
}

// Program::load verifies the file in place: no heap allocation at all, so there is no
// allocation to fail (the Method's are injected in tests/runtime/fault_injection_test.cpp).
TEST(ExecuteAllocations, ProgramLoadAllocatesNothing) {
  auto bytes = testing::add_relu_mul_program(/*symbolic=*/true).build();
  testing::AlignedBuffer buf(*bytes);
  BufferDataLoader loader(buf.data(), buf.size());
  ASSERT_TRUE(Program::load(&loader).ok());  // warm (lazily initialised state outside Tessera)
  EXPECT_EQ(heap_calls_in([&] {
              for (int i = 0; i < 10; ++i) ASSERT_TRUE(Program::load(&loader).ok());
            }),
            0);
}

}  // namespace
}  // namespace tessera
