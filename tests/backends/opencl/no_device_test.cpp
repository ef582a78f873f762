// A machine without an OpenCL device, through the public runtime API: the backend says it is
// unavailable, DeviceInfo lists nothing, a Method whose delegates are for opencl fails to load
// with DelegateUnavailable unless LoadOptions names a fallback (which then runs and is
// reported), and opencl options are still validated and stored. ctest runs this binary with
// OCL_ICD_VENDORS pointing at an empty directory, so the ICD loader finds no platform; without
// that variable every test skips.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "tessera/backend/device_info.h"
#include "tessera/backend/global_options.h"
#include "tessera/backend/options.h"
#include "tessera/backend/options_map.h"
#include "tessera/backend/registry.h"
#include "tessera/backend/resolved_options.h"
#include "tessera/backends/opencl/options.h"
#include "tessera/runtime/data_loader.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program.h"
#include "tests/testing/test_programs.h"

namespace tessera {
namespace {

#define EXPECT_CONTAINS(haystack, needle)                          \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) \
      << "'" << (haystack) << "' lacks '" << (needle) << "'"

class OpenClNoDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* vendors = std::getenv("OCL_ICD_VENDORS");
    if (vendors == nullptr || *vendors == '\0') {
      GTEST_SKIP() << "set OCL_ICD_VENDORS to an empty directory to run the no-device tests "
                      "(ctest does)";
    }
    auto backend = get_backend("opencl");
    ASSERT_TRUE(backend.ok()) << backend.status().message();
    opencl_ = *backend;
    ASSERT_FALSE(opencl_->is_available())
        << "OCL_ICD_VENDORS='" << vendors << "' still yields an OpenCL device; it must name an "
        << "empty directory";
  }
  void TearDown() override {
    if (opencl_ != nullptr) {
      EXPECT_TRUE(reset_backend_options("opencl").is_ok());
    }
  }

  // Loads `program_` (two opencl delegates, each a Relu over float32[2, 4]).
  Result<Method> load(const LoadOptions& options) {
    if (!program_) {
      auto bytes = testing::delegate_chain_program({"opencl", "opencl"}).build();
      if (!bytes.ok()) return bytes.status();
      buffer_ = std::make_unique<testing::AlignedBuffer>(*bytes);
      loader_ = std::make_unique<BufferDataLoader>(buffer_->data(), buffer_->size());
      auto program = Program::load(loader_.get());
      if (!program.ok()) return program.status();
      program_ = std::make_unique<Program>(std::move(program).value());
    }
    return program_->load_method("forward", nullptr, options);
  }

  BackendInterface* opencl_ = nullptr;
  std::unique_ptr<testing::AlignedBuffer> buffer_;
  std::unique_ptr<BufferDataLoader> loader_;
  std::unique_ptr<Program> program_;
};

// Runs `method` on a fixed input and checks relu(x) comes out.
void expect_relu(Method& method) {
  float x[8] = {-4.0f, -1.5f, 0.0f, 0.25f, 1.0f, -0.5f, 3.0f, 7.5f};
  int64_t sizes[] = {2, 4};
  ASSERT_TRUE(method.set_input(0, Tensor(ScalarType::Float32, sizes, x)).is_ok());
  Status st = method.execute();
  ASSERT_TRUE(st.is_ok()) << st.message();
  auto out = method.get_output(0);
  ASSERT_TRUE(out.ok()) << out.status().message();
  const float* y = (*out)->data_as<float>();
  for (int k = 0; k < 8; ++k) EXPECT_EQ(y[k], x[k] > 0 ? x[k] : 0.0f) << "element " << k;
}

TEST_F(OpenClNoDevice, DeviceInfoReportsNoDevice) {
  const OpenClInfo& cl = DeviceInfo::get().opencl();
  EXPECT_TRUE(cl.loader_found);
  EXPECT_EQ(cl.num_platforms, 0u);
  for (OpenClDeviceType t : {OpenClDeviceType::Cpu, OpenClDeviceType::Gpu,
                             OpenClDeviceType::Accelerator, OpenClDeviceType::Other}) {
    EXPECT_EQ(cl.count_devices(t), 0u);
  }
  EXPECT_CONTAINS(cl.error, "no OpenCL platform");
  EXPECT_CONTAINS(DeviceInfo::get().describe(true), "opencl: none (no OpenCL platform");
}

TEST_F(OpenClNoDevice, LoadWithoutFallbackIsDelegateUnavailable) {
  auto method = load(LoadOptions{});
  ASSERT_FALSE(method.ok());
  EXPECT_EQ(method.status().code(), Error::DelegateUnavailable) << method.status().message();
  EXPECT_CONTAINS(method.status().message(), "'opencl#0'");
  EXPECT_CONTAINS(method.status().message(), "backend 'opencl' is not available on this machine");
  // The reason the backend gives (DeviceInfo's probe).
  EXPECT_CONTAINS(method.status().message(), "(no OpenCL platform (clGetPlatformIDs: ");
  // Nothing was initialised: init-only options stay open.
  EXPECT_EQ(*backend_lifecycle("opencl"), BackendLifecycle::Registered);
}

TEST_F(OpenClNoDevice, FallbackRunsAndIsReported) {
  LoadOptions options;
  ASSERT_TRUE(options.set_fallback("portable").is_ok());
  auto method = load(options);
  ASSERT_TRUE(method.ok()) << method.status().message();
  ASSERT_EQ(method->num_delegates(), 2u);
  for (size_t d = 0; d < method->num_delegates(); ++d) {
    const DelegateInfo& info = method->delegate_info(d);
    EXPECT_STREQ(info.requested_backend, "opencl");
    EXPECT_STREQ(info.backend, "portable");
    EXPECT_CONTAINS(info.reason, "'opencl' is not available on this machine (no OpenCL platform");
    ASSERT_NE(info.options, nullptr);
    EXPECT_EQ(info.options->backend(), "portable");
  }
  expect_relu(*method);
  expect_relu(*method);  // a second call on the same instance
  EXPECT_EQ(*backend_lifecycle("opencl"), BackendLifecycle::Registered);
}

TEST_F(OpenClNoDevice, FallbackChainSkipsEveryUnavailableBackend) {
  LoadOptions options;
  ASSERT_TRUE(options.set_fallback("opencl,xnnpack,portable").is_ok());
  auto method = load(options);
  ASSERT_TRUE(method.ok()) << method.status().message();
  const bool have_xnnpack =
      get_backend("xnnpack").ok() && (*get_backend("xnnpack"))->is_available();
  for (size_t d = 0; d < method->num_delegates(); ++d) {
    const DelegateInfo& info = method->delegate_info(d);
    EXPECT_STREQ(info.requested_backend, "opencl");
    EXPECT_STREQ(info.backend, have_xnnpack ? "xnnpack" : "portable");
    EXPECT_CONTAINS(info.reason, "'opencl' is not available on this machine");
  }
  expect_relu(*method);
}

TEST_F(OpenClNoDevice, GlobalOptionsAreValidatedAndKept) {
  // A configuration written for machines with a GPU is still checked and stored here, so one
  // options file serves every machine; it takes effect only where the backend can run.
  BackendOptions<4> good;
  ASSERT_TRUE(good.set(opencl::kPlatform, "NVIDIA").is_ok());
  ASSERT_TRUE(good.set(opencl::kDeviceType, EnumValue{"gpu"}).is_ok());
  ASSERT_TRUE(good.set(opencl::kDeviceIndex, 1).is_ok());
  Status st = set_option("opencl", good.view());
  ASSERT_TRUE(st.is_ok()) << st.message();
  BackendOptions<1> query;
  ASSERT_TRUE(query.set(opencl::kDeviceIndex, 0).is_ok());
  ASSERT_TRUE(get_option("opencl", query.mutable_view()).is_ok());
  EXPECT_EQ(*query.get(opencl::kDeviceIndex), 1);

  BackendOptions<1> typo;
  ASSERT_TRUE(typo.set_int("device_indx", 1).is_ok());
  st = set_option("opencl", typo.view());
  EXPECT_EQ(st.code(), Error::OptionUnknownKey);
  EXPECT_CONTAINS(st.message(), "did you mean 'device_index'");
  BackendOptions<1> range;
  ASSERT_TRUE(range.set(opencl::kDeviceIndex, 64).is_ok());
  EXPECT_EQ(set_option("opencl", range.view()).code(), Error::OptionOutOfRange);
  BackendOptions<1> choice;
  ASSERT_TRUE(choice.set_enum("device_type", "npu").is_ok());
  EXPECT_NE(set_option("opencl", choice.view()).code(), Error::Ok);

  // The stored values travel with the fallback: the load still works and is reported.
  LoadOptions options;
  ASSERT_TRUE(options.set_fallback("portable").is_ok());
  auto method = load(options);
  ASSERT_TRUE(method.ok()) << method.status().message();
  EXPECT_STREQ(method->delegate_info(0).backend, "portable");
  expect_relu(*method);
  // Init-only options were not locked by a backend that never initialised.
  BackendOptions<1> other;
  ASSERT_TRUE(other.set(opencl::kPlatform, "Portable Computing Language").is_ok());
  st = set_option("opencl", other.view());
  EXPECT_TRUE(st.is_ok()) << st.message();
}

TEST_F(OpenClNoDevice, LoadOptionErrorsAreNotHiddenByTheFallback) {
  // Option mistakes are the application's: they fail the load even when opencl would be
  // skipped, instead of passing on some machines and failing on others.
  LoadBackendOptionsMap bad;
  ASSERT_TRUE(bad.set("opencl", opencl::kDeviceIndex, 99).is_ok());
  LoadOptions options;
  options.backend_options = &bad;
  ASSERT_TRUE(options.set_fallback("portable").is_ok());
  auto method = load(options);
  ASSERT_FALSE(method.ok());
  EXPECT_EQ(method.status().code(), Error::OptionOutOfRange) << method.status().message();
  EXPECT_CONTAINS(method.status().message(), "device_index");

  LoadBackendOptionsMap good;
  ASSERT_TRUE(good.set("opencl", opencl::kDeviceIndex, 1).is_ok());
  options.backend_options = &good;
  method = load(options);
  ASSERT_TRUE(method.ok()) << method.status().message();
  EXPECT_STREQ(method->delegate_info(1).backend, "portable");
}

}  // namespace
}  // namespace tessera
