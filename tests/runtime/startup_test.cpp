// LoadOptions::startup_backend with stub backends: a delegate whose backend reports a cold init
// runs on the startup backend while that init runs in the background, and moves over between
// two executes; failures, destruction during the init, warm inits and option errors. Run under
// ThreadSanitizer by scripts/test (executes on another thread than the load).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tessera/backend/context.h"
#include "tessera/backend/execute_options.h"
#include "tessera/backend/options.h"
#include "tessera/backend/options_map.h"
#include "tessera/backend/registry.h"
#include "tessera/backend/testing/stub_backend.h"
#include "tessera/core/log.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program.h"
#include "tests/testing/test_programs.h"

namespace tessera {
namespace {

constexpr OptionSpec kCpuSchema[] = {
    OptionSpec::integer("num_threads", 0, 0, 64, kInitScopes, "threads"),
    OptionSpec::boolean("profile", false, OptionScope::Execute, "per-call profile"),
};
constexpr OptionSpec kDeviceSchema[] = {
    OptionSpec::integer("device_index", 0, 0, 3, kRuntimeScopes, "device"),
    OptionSpec::boolean("kernel_profiling", false, OptionScope::Execute, "per-call profile"),
};

// A gate the background init waits at until the test opens it.
class Gate {
 public:
  void open() {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = true;
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [this] { return open_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
};

std::mutex g_log_mutex;
std::vector<std::string> g_warnings;
void capture(LogLevel level, const char* message, void*) {
  if (level < LogLevel::Warning) return;
  std::lock_guard<std::mutex> lock(g_log_mutex);
  g_warnings.emplace_back(message);
}

// Both backends compute the delegate's Relu; each counts the executes it served.
Status relu(Span<EValue*> args, std::atomic<int>* served) {
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[1]->to_tensor();
  for (int64_t i = 0; i < in.numel(); ++i) {
    const float v = in.data_as<float>()[i];
    out.data_as<float>()[i] = v > 0 ? v : 0;
  }
  served->fetch_add(1);
  return Status::ok();
}

class StartupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cpu_ = new testing::StubBackend(kCpuSchema);
    cpu_->on_execute = [this](BackendExecutionContext&, DelegateHandle*, Span<EValue*> args) {
      return relu(args, &cpu_served_);
    };
    device_ = new testing::StubBackend(kDeviceSchema);
    device_->on_init_would_be_cold = [this](const BackendInitContext&) -> Result<bool> {
      ++cold_queries_;
      return cold_.load();
    };
    device_->on_init = [this](BackendInitContext&, FreeableBuffer*,
                              Span<const CompileSpec>) -> Result<DelegateHandle*> {
      if (gated_) gate_.wait();
      if (init_sleep_ms_ > 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(init_sleep_ms_));
      if (fail_init_) {
        return Status(Error::DelegateInvalidCompatibility, "st_device: kernel build failed: boom");
      }
      return to_handle(&handle_target_);
    };
    device_->on_execute = [this](BackendExecutionContext&, DelegateHandle*, Span<EValue*> args) {
      if (fail_execute_) return Status(Error::DelegateExecutionFailed, "st_device: device lost");
      return relu(args, &device_served_);
    };
    ASSERT_TRUE(register_backend("st_cpu", std::unique_ptr<BackendInterface>(cpu_)).is_ok());
    ASSERT_TRUE(register_backend("st_device", std::unique_ptr<BackendInterface>(device_)).is_ok());
    auto loaded = testing::load_built_program(testing::delegate_chain_program({"st_device"}));
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    program_ = std::move(*loaded);
    {
      std::lock_guard<std::mutex> lock(g_log_mutex);
      g_warnings.clear();
    }
    set_log_sink(capture);
  }
  void TearDown() override {
    set_log_sink(nullptr);
    (void)unregister_backend("st_cpu");
    (void)unregister_backend("st_device");
  }

  Result<Method> load(const char* startup) {
    LoadOptions options;
    TESSERA_RETURN_IF_ERROR(options.set_startup_backend(startup));
    return program_.program->load_method("forward", nullptr, options);
  }

  // Runs once on x = [-2, -1, ..., 5] and checks relu(x).
  static void execute_and_check(Method& m, const ExecuteOptions* options = nullptr) {
    float x[8] = {-2, -1, 0, 1, 2, 3, 4, 5};
    int64_t sizes[] = {2, 4};
    ASSERT_TRUE(m.set_input(0, Tensor(ScalarType::Float32, sizes, x)).is_ok());
    Status st = options != nullptr ? m.execute(*options) : m.execute();
    ASSERT_TRUE(st.is_ok()) << st.message();
    const float* y = (*m.get_output(0))->data_as<float>();
    for (int i = 0; i < 8; ++i) ASSERT_EQ(y[i], x[i] > 0 ? x[i] : 0) << i;
  }

  static std::string warnings() {
    std::lock_guard<std::mutex> lock(g_log_mutex);
    std::string all;
    for (const std::string& w : g_warnings) all += w + "\n";
    return all;
  }

  testing::StubBackend* cpu_ = nullptr;
  testing::StubBackend* device_ = nullptr;
  testing::LoadedProgram program_;
  Gate gate_;
  bool gated_ = false;  // set before the load: read by the background thread after
  int init_sleep_ms_ = 0;
  bool fail_init_ = false;
  bool fail_execute_ = false;
  std::atomic<bool> cold_{true};
  std::atomic<int> cold_queries_{0};
  std::atomic<int> cpu_served_{0};
  std::atomic<int> device_served_{0};
  int handle_target_ = 0;
};

TEST_F(StartupTest, ServesOnTheStartupBackendThenSwitchesBetweenExecutesOnAnotherThread) {
  gated_ = true;
  auto m = load("st_cpu");
  ASSERT_TRUE(m.ok()) << m.status().message();
  // load_method returned while the device's init waits at the gate.
  const DelegateInfo& info = m->delegate_info(0);
  EXPECT_STREQ(info.backend, "st_cpu");
  EXPECT_STREQ(info.requested_backend, "st_device");
  EXPECT_STREQ(info.startup.backend, "st_cpu");
  EXPECT_STREQ(info.startup.target, "st_device");
  EXPECT_STREQ(info.startup.state, "building");
  EXPECT_NE(std::string(info.reason).find("startup backend 'st_cpu'"), std::string::npos)
      << info.reason;

  // Executes run on another thread than the load's, while the init finishes on a third.
  std::atomic<bool> done{false};
  std::atomic<int> executes{0};
  std::thread runner([&] {
    Method& method = *m;
    for (int i = 0; i < 100000 && !done.load(); ++i) {
      execute_and_check(method);
      ++executes;
      if (executes == 5) gate_.open();
      if (std::strcmp(method.delegate_info(0).startup.state, "switched") == 0 &&
          method.delegate_info(0).startup.target_executes >= 3) {
        done = true;
      }
    }
  });
  runner.join();
  ASSERT_TRUE(done.load()) << "never switched";

  EXPECT_STREQ(info.backend, "st_device");
  EXPECT_STREQ(info.startup.state, "switched");
  EXPECT_GE(info.startup.startup_executes, 5u);
  EXPECT_EQ(info.startup.target_executes, 3u);
  EXPECT_EQ(info.startup.startup_executes + info.startup.target_executes,
            static_cast<uint64_t>(executes.load()));
  EXPECT_EQ(info.startup.switched_at_execute, static_cast<int64_t>(info.startup.startup_executes));
  EXPECT_GT(info.startup.switched_after_ms, 0.0);
  EXPECT_EQ(cpu_served_.load(), static_cast<int>(info.startup.startup_executes));
  EXPECT_EQ(device_served_.load(), 1 + 3);  // the background warm-up run, then three executes
  // The startup backend's handle went at the switch; the device's stays until the Method goes.
  EXPECT_EQ(cpu_->destroy_count(), 1);
  EXPECT_EQ(device_->destroy_count(), 0);
  EXPECT_EQ(info.options->backend(), "st_device");
  EXPECT_NE(std::string(info.reason).find("moved to 'st_device' after"), std::string::npos)
      << info.reason;
  EXPECT_EQ(warnings(), "");
  m = Status(Error::Internal, "released");  // destroys the Method
  EXPECT_EQ(device_->destroy_count(), 1);
}

TEST_F(StartupTest, WaitForStartupSwitchesWithoutAnExecute) {
  init_sleep_ms_ = 20;
  auto m = load("st_cpu");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_STREQ(m->delegate_info(0).backend, "st_cpu");
  EXPECT_TRUE(m->wait_for_startup());
  EXPECT_STREQ(m->delegate_info(0).backend, "st_device");
  EXPECT_EQ(m->delegate_info(0).startup.switched_at_execute, 0);
  EXPECT_GE(m->delegate_info(0).startup.build_ms, 20.0);
  EXPECT_TRUE(m->wait_for_startup(0));  // nothing pending: returns at once
  execute_and_check(*m);
  EXPECT_EQ(device_served_.load(), 2);  // the warm-up run and this execute
  EXPECT_EQ(cpu_served_.load(), 0);
}

TEST_F(StartupTest, WaitForStartupTimesOutWhileTheInitRuns) {
  gated_ = true;
  auto m = load("st_cpu");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_FALSE(m->wait_for_startup(5));
  EXPECT_STREQ(m->delegate_info(0).startup.state, "building");
  execute_and_check(*m);
  EXPECT_EQ(cpu_served_.load(), 1);
  gate_.open();
  EXPECT_TRUE(m->wait_for_startup());
  EXPECT_STREQ(m->delegate_info(0).startup.state, "switched");
}

TEST_F(StartupTest, AFailedBackgroundInitStaysOnTheStartupBackendWithAWarning) {
  fail_init_ = true;
  auto m = load("st_cpu");
  ASSERT_TRUE(m.ok()) << m.status().message();
  execute_and_check(*m);
  EXPECT_TRUE(m->wait_for_startup());
  const DelegateInfo& info = m->delegate_info(0);
  EXPECT_STREQ(info.backend, "st_cpu");
  EXPECT_STREQ(info.startup.state, "failed");
  EXPECT_NE(std::string(info.startup.failure).find("kernel build failed: boom"), std::string::npos)
      << info.startup.failure;
  EXPECT_NE(std::string(info.reason)
                .find("background init on 'st_device' failed, stays on "
                      "'st_cpu'"),
            std::string::npos)
      << info.reason;
  EXPECT_NE(warnings().find("kernel build failed: boom"), std::string::npos) << warnings();
  execute_and_check(*m);
  execute_and_check(*m);
  EXPECT_EQ(info.startup.startup_executes, 3u);
  EXPECT_EQ(info.startup.target_executes, 0u);
  EXPECT_EQ(info.startup.switched_at_execute, -1);
  EXPECT_EQ(device_served_.load(), 0);
}

TEST_F(StartupTest, AFailingWarmUpRunKeepsTheDelegateOnTheStartupBackend) {
  fail_execute_ = true;
  auto m = load("st_cpu");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_TRUE(m->wait_for_startup());
  const DelegateInfo& info = m->delegate_info(0);
  EXPECT_STREQ(info.startup.state, "failed");
  EXPECT_STREQ(info.backend, "st_cpu");
  EXPECT_NE(std::string(info.startup.failure).find("warm-up run: st_device: device lost"),
            std::string::npos)
      << info.startup.failure;
  EXPECT_EQ(device_->destroy_count(), 1);  // the handle that failed its run
  execute_and_check(*m);
}

TEST_F(StartupTest, DestroyingTheMethodDuringTheInitWaitsForItAndFreesItsHandle) {
  init_sleep_ms_ = 50;
  {
    auto m = load("st_cpu");
    ASSERT_TRUE(m.ok()) << m.status().message();
    execute_and_check(*m);
  }
  // The init finished inside the destructor; its handle, never switched to, was destroyed.
  EXPECT_EQ(device_->init_count(), 1);
  EXPECT_EQ(device_->destroy_count(), 1);
  EXPECT_EQ(cpu_->destroy_count(), 1);
}

TEST_F(StartupTest, AMovedMethodKeepsItsBackgroundInit) {
  init_sleep_ms_ = 10;
  auto m = load("st_cpu");
  ASSERT_TRUE(m.ok()) << m.status().message();
  Method moved = std::move(*m);
  EXPECT_TRUE(moved.wait_for_startup());
  execute_and_check(moved);
  EXPECT_EQ(device_served_.load(), 2);
}

TEST_F(StartupTest, AWarmInitUsesNoStartupBackend) {
  cold_ = false;
  auto m = load("st_cpu");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const DelegateInfo& info = m->delegate_info(0);
  EXPECT_STREQ(info.backend, "st_device");
  EXPECT_STREQ(info.startup.backend, "");
  EXPECT_NE(std::string(info.startup.reason).find("nothing to build at init"), std::string::npos)
      << info.startup.reason;
  EXPECT_EQ(cpu_->init_count(), 0);
  EXPECT_EQ(cold_queries_.load(), 1);
  execute_and_check(*m);
  EXPECT_EQ(device_served_.load(), 1);
}

TEST_F(StartupTest, WithoutTheOptionNothingIsAsked) {
  auto m = load("");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_STREQ(m->delegate_info(0).backend, "st_device");
  EXPECT_EQ(cold_queries_.load(), 0);
  EXPECT_STREQ(m->delegate_info(0).startup.reason, "");
}

TEST_F(StartupTest, ExecuteOptionsForTheDelegatesOwnBackendAreAcceptedBeforeTheSwitch) {
  gated_ = true;
  auto m = load("st_cpu");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ExecuteOptions options;
  BackendOption profiling;
  ASSERT_TRUE(profiling.set_key("kernel_profiling").is_ok());
  ASSERT_TRUE(profiling.set_value<bool>(true).is_ok());
  ASSERT_TRUE(options.set_options("st_device", Span<const BackendOption>(&profiling, 1)).is_ok());
  execute_and_check(*m, &options);
  gate_.open();
  EXPECT_TRUE(m->wait_for_startup());
  execute_and_check(*m, &options);
  EXPECT_EQ(device_->last_execute_options().size(), 1u);
}

// Execute options for both backends (as `tessera-run --profile` sets them): valid on the
// startup backend, after the switch, and after a failed build alike.
ExecuteOptions profile_both() {
  ExecuteOptions options;
  BackendOption on;
  EXPECT_TRUE(on.set_key("profile").is_ok());
  EXPECT_TRUE(on.set_value<bool>(true).is_ok());
  EXPECT_TRUE(options.set_options("st_cpu", Span<const BackendOption>(&on, 1)).is_ok());
  EXPECT_TRUE(on.set_key("kernel_profiling").is_ok());
  EXPECT_TRUE(options.set_options("st_device", Span<const BackendOption>(&on, 1)).is_ok());
  return options;
}

TEST_F(StartupTest, ExecuteOptionsForBothBackendsStayValidAcrossTheSwitch) {
  gated_ = true;
  auto m = load("st_cpu");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const ExecuteOptions options = profile_both();
  execute_and_check(*m, &options);
  EXPECT_EQ(cpu_->last_execute_options().size(), 1u);
  gate_.open();
  EXPECT_TRUE(m->wait_for_startup());
  EXPECT_STREQ(m->delegate_info(0).backend, "st_device");
  execute_and_check(*m, &options);
  EXPECT_EQ(device_->last_execute_options().size(), 1u);
}

TEST_F(StartupTest, ExecuteOptionsForBothBackendsStayValidAfterAFailedBuild) {
  fail_init_ = true;
  auto m = load("st_cpu");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const ExecuteOptions options = profile_both();
  EXPECT_TRUE(m->wait_for_startup());
  EXPECT_STREQ(m->delegate_info(0).startup.state, "failed");
  execute_and_check(*m, &options);
  // An unrelated backend is still an error.
  ExecuteOptions other;
  BackendOption on;
  ASSERT_TRUE(on.set_key("profile").is_ok());
  ASSERT_TRUE(on.set_value<bool>(true).is_ok());
  ASSERT_TRUE(other.set_options("portable", Span<const BackendOption>(&on, 1)).is_ok());
  Status st = m->execute(other);
  EXPECT_EQ(st.code(), Error::OptionUnknownBackend) << st.message();
}

TEST_F(StartupTest, AStartupBackendThatCannotRunTheDelegateIsAWarningAndTheInitRunsNow) {
  cpu_->on_supports_op = [](const OpView&) { return false; };
  auto m = load("st_cpu");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const DelegateInfo& info = m->delegate_info(0);
  EXPECT_STREQ(info.backend, "st_device");
  EXPECT_NE(std::string(info.startup.reason).find("'st_cpu' does not support op 'Relu'"),
            std::string::npos)
      << info.startup.reason;
  EXPECT_NE(warnings().find("startup backend st_cpu cannot run it"), std::string::npos)
      << warnings();
}

TEST_F(StartupTest, TheDelegatesOwnBackendAsStartupBackendIsNotUsed) {
  auto m = load("st_device");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_STREQ(m->delegate_info(0).backend, "st_device");
  EXPECT_NE(std::string(m->delegate_info(0).startup.reason).find("own backend"), std::string::npos);
}

TEST_F(StartupTest, AutoPicksACpuBackendThatCanRunTheDelegate) {
  init_sleep_ms_ = 5;
  auto m = load("auto");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const DelegateInfo& info = m->delegate_info(0);
  const std::string chosen = info.startup.backend;
  EXPECT_TRUE(chosen == "onednn" || chosen == "xnnpack" || chosen == "portable") << chosen;
  EXPECT_EQ(std::string(info.startup.reason).rfind("auto: the first of onednn", 0), 0u)
      << info.startup.reason;
  execute_and_check(*m);  // the real CPU backend computes the Relu
  EXPECT_TRUE(m->wait_for_startup());
  EXPECT_STREQ(info.backend, "st_device");
}

TEST_F(StartupTest, BadValuesAreClearErrors) {
  LoadOptions options;
  Status st = options.set_startup_backend(std::string(40, 'x'));
  EXPECT_EQ(st.code(), Error::InvalidArgument);
  EXPECT_NE(std::string(st.message()).find("startup backend name"), std::string::npos)
      << st.message();
  EXPECT_EQ(options.startup_backend(), "");  // unchanged

  auto m = load("st_cpx");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Error::OptionUnknownBackend);
  EXPECT_NE(std::string(m.status().message()).find("startup backend"), std::string::npos)
      << m.status().message();
  EXPECT_NE(std::string(m.status().message()).find("st_cpu"), std::string::npos)
      << m.status().message();

  // The startup backend's load options are checked too, used or not.
  cold_ = false;
  LoadBackendOptionsMap load_map;
  BackendOption bad;
  ASSERT_TRUE(bad.set_key("num_thread").is_ok());
  ASSERT_TRUE(bad.set_value<int64_t>(2).is_ok());
  ASSERT_TRUE(load_map.set_options("st_cpu", Span<const BackendOption>(&bad, 1)).is_ok());
  LoadOptions with_map;
  ASSERT_TRUE(with_map.set_startup_backend("st_cpu").is_ok());
  with_map.backend_options = &load_map;
  auto m2 = program_.program->load_method("forward", nullptr, with_map);
  ASSERT_FALSE(m2.ok());
  EXPECT_EQ(m2.status().code(), Error::OptionUnknownKey);
  EXPECT_NE(std::string(m2.status().message()).find("num_threads"), std::string::npos)
      << m2.status().message();
}

}  // namespace
}  // namespace tessera
