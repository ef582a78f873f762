// The ExecuTorch RFC's case through the real runtime: one Program, its Method loaded twice, each
// instance pinned to its own OpenCL device by load options, both executing at the same time
// from two threads. Needs POCL_DEVICES="pthread pthread" (set by ctest).
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "tessera/backend/device_info.h"
#include "tessera/backend/options_map.h"
#include "tessera/backend/resolved_options.h"
#include "tessera/backends/opencl/options.h"
#include "tessera/runtime/data_loader.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program.h"
#include "test_util.h"
#include "tests/testing/test_programs.h"

namespace tessera {
namespace {

constexpr OptionKey<int64_t> kDeviceIndex{"device_index"};

uint32_t opencl_devices() {
  uint32_t n = 0;
  for (const OpenClPlatform& p : DeviceInfo::get().opencl().platform_list()) n += p.num_devices;
  return n;
}

// Both tests load methods from one program with two opencl delegates (each a Relu over
// float32[2, 4]). The fixture skips without two devices and keeps the buffer, loader and program
// alive for the whole test, as the methods borrow them.
class OpenclRuntime : public ::testing::Test {
 protected:
  void SetUp() override {
    if (opencl_devices() < 2) {
      GTEST_SKIP() << "needs two OpenCL devices (POCL_DEVICES=\"pthread pthread\")";
    }
    auto bytes = testing::delegate_chain_program({"opencl", "opencl"}).build();
    ASSERT_TRUE(bytes.ok());
    buffer_ = std::make_unique<testing::AlignedBuffer>(*bytes);
    loader_ = std::make_unique<BufferDataLoader>(buffer_->data(), buffer_->size());
    auto program = Program::load(loader_.get());
    ASSERT_TRUE(program.ok()) << program.status().message();
    program_ = std::make_unique<Program>(std::move(program).value());
  }

  std::unique_ptr<testing::AlignedBuffer> buffer_;
  std::unique_ptr<BufferDataLoader> loader_;
  std::unique_ptr<Program> program_;
};

TEST_F(OpenclRuntime, SameMethodTwiceOnTwoDevicesFromTwoThreads) {
  // Instance 0: every delegate on device 0 (per backend). Instance 1: per delegate, device 1.
  LoadBackendOptionsMap on_first;
  ASSERT_TRUE(on_first.set("opencl", kDeviceIndex, 0).is_ok());
  DelegateOptionsMap on_second;
  ASSERT_TRUE(on_second.set("opencl#0", kDeviceIndex, 1).is_ok());
  ASSERT_TRUE(on_second.set("opencl#1", kDeviceIndex, 1).is_ok());
  LoadOptions o0, o1;
  o0.backend_options = &on_first;
  o1.delegate_options = &on_second;
  auto m0 = program_->load_method("forward", nullptr, o0);
  auto m1 = program_->load_method("forward", nullptr, o1);
  ASSERT_TRUE(m0.ok()) << m0.status().message();
  ASSERT_TRUE(m1.ok()) << m1.status().message();
  for (Method* m : {&*m0, &*m1}) {
    for (size_t d = 0; d < m->num_delegates(); ++d) {
      EXPECT_STREQ(m->delegate_info(d).backend, "opencl");
    }
  }
  EXPECT_EQ(*m0->delegate_info(0).options->get(kDeviceIndex), 0);
  EXPECT_EQ(*m1->delegate_info(0).options->get(kDeviceIndex), 1);
  EXPECT_EQ(*m1->delegate_info(1).options->get(kDeviceIndex), 1);

  auto worker = [](Method* m, float offset, int* failures) {
    float x[8];
    for (int k = 0; k < 8; ++k) x[k] = static_cast<float>(k) - 4.0f + offset;
    int64_t sizes[] = {2, 4};
    for (int r = 0; r < 25; ++r) {
      if (!m->set_input(0, Tensor(ScalarType::Float32, sizes, x)).is_ok() ||
          !m->execute().is_ok()) {
        ++*failures;
        continue;
      }
      const float* y = (*m->get_output(0))->data_as<float>();
      for (int k = 0; k < 8; ++k) {
        if (y[k] != (x[k] > 0 ? x[k] : 0)) ++*failures;
      }
    }
  };
  int f0 = 0, f1 = 0;
  std::thread t0(worker, &*m0, 0.5f, &f0);
  std::thread t1(worker, &*m1, -1.5f, &f1);
  t0.join();
  t1.join();
  EXPECT_EQ(f0, 0);
  EXPECT_EQ(f1, 0);
}

// Both instances also load at the same time, sharing one program cache directory and one
// tuning file: the backend's shared state (device set, contexts, cache and tuning files) is
// touched from two threads at once.
TEST_F(OpenclRuntime, TwoThreadsLoadAndRunOnTwoDevicesWithSharedCacheAndTuning) {
  opencl::testing::TempDir dir;
  const std::string cache = dir.file("cache"), tuning = dir.file("tuning.txt");
  auto worker = [&](int64_t device, float offset, std::string* error) {
    LoadBackendOptionsMap options;
    Status st = options.set("opencl", opencl::kDeviceIndex, device);
    if (st.is_ok()) st = options.set("opencl", opencl::kCacheDir, cache);
    if (st.is_ok()) st = options.set("opencl", opencl::kTuningFile, tuning);
    if (st.is_ok()) st = options.set("opencl", opencl::kTuningLevel, EnumValue{"rapid"});
    if (!st.is_ok()) {
      *error = st.message();
      return;
    }
    LoadOptions load;
    load.backend_options = &options;
    auto m = program_->load_method("forward", nullptr, load);
    if (!m.ok()) {
      *error = m.status().message();
      return;
    }
    float x[8];
    for (int k = 0; k < 8; ++k) x[k] = static_cast<float>(k) - 4.0f + offset;
    int64_t sizes[] = {2, 4};
    for (int r = 0; r < 10; ++r) {
      st = m->set_input(0, Tensor(ScalarType::Float32, sizes, x));
      if (st.is_ok()) st = m->execute();
      if (!st.is_ok()) {
        *error = st.message();
        return;
      }
      const float* y = (*m->get_output(0))->data_as<float>();
      for (int k = 0; k < 8; ++k) {
        if (y[k] != (x[k] > 0 ? x[k] : 0)) *error = "wrong output";
      }
    }
  };
  std::string e0, e1;
  std::thread t0(worker, 0, 0.5f, &e0);
  std::thread t1(worker, 1, -1.5f, &e1);
  t0.join();
  t1.join();
  EXPECT_EQ(e0, "");
  EXPECT_EQ(e1, "");
  EXPECT_FALSE(opencl::testing::read_bytes(tuning).empty());
  size_t cached = 0;
  for (const auto& entry : std::filesystem::directory_iterator(cache)) {
    cached += entry.path().extension() == ".clbin";
  }
  EXPECT_GE(cached, 1u);
}

}  // namespace
}  // namespace tessera
