// An OpenCL delegate whose kernel enqueue fails (injected through cl_util.h's seam, as a lost
// or exhausted device returns CL_OUT_OF_RESOURCES): the error reaches the caller naming the
// delegate and the OpenCL call, the Method stays usable, and under on_execute_failure=fallback
// the delegate moves to the next backend of the chain within the same call.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>

#include "tessera/backend/device_info.h"
#include "tessera/backends/opencl/cl_util.h"
#include "tessera/runtime/data_loader.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program.h"
#include "tests/testing/test_programs.h"

namespace tessera {
namespace {

constexpr int64_t kShape[2] = {2, 4};  // the chain programs' tensors

struct EnqueueFault {
  EnqueueFault(cl_int error, int count) { opencl::set_enqueue_fault(error, count); }
  ~EnqueueFault() { opencl::set_enqueue_fault(CL_SUCCESS, 0); }
};

class OpenclExecuteFault : public ::testing::Test {
 protected:
  void SetUp() override {
    if (DeviceInfo::get().opencl().platform_list().empty()) GTEST_SKIP() << "no OpenCL platform";
    auto loaded =
        testing::load_built_program(testing::delegate_chain_program({"opencl", "opencl"}));
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    loaded_ = std::move(*loaded);
  }
  Result<Method> load(OnExecuteFailure mode) {
    LoadOptions options;
    EXPECT_TRUE(options.set_fallback("portable").is_ok());
    options.on_execute_failure = mode;
    return loaded_.program->load_method("forward", nullptr, options);
  }
  void run_and_check(Method& m) {
    ASSERT_TRUE(m.set_input(0, Tensor(ScalarType::Float32, {kShape, 2}, x_)).is_ok());
    Status st = m.execute();
    ASSERT_TRUE(st.is_ok()) << st.message();
    const float* y = static_cast<const float*>((*m.get_output(0))->data());
    for (int i = 0; i < 8; ++i) EXPECT_EQ(y[i], x_[i] > 0 ? x_[i] : 0.0f) << i;
  }
  float x_[8] = {1, -2, 3, -4, 5, -6, 7, -8};
  testing::LoadedProgram loaded_;
};

TEST_F(OpenclExecuteFault, EnqueueFailureReachesTheCallerAndTheMethodStaysUsable) {
  Result<Method> m = load(OnExecuteFailure::Fail);
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_STREQ(m->delegate_info(1).backend, "opencl");
  run_and_check(*m);
  ASSERT_TRUE(m->set_input(0, Tensor(ScalarType::Float32, {kShape, 2}, x_)).is_ok());
  {
    EnqueueFault fault(CL_OUT_OF_RESOURCES, 1);
    Status st = m->execute();
    ASSERT_FALSE(st.is_ok());
    EXPECT_EQ(st.code(), Error::DelegateExecutionFailed);
    EXPECT_STREQ(st.message(),
                 "instruction 0 (delegate 'opencl#0' on 'opencl'): opencl: delegate 'opencl#0': "
                 "enqueue failed: CL_OUT_OF_RESOURCES");
  }
  run_and_check(*m);
  EXPECT_STREQ(m->delegate_info(0).backend, "opencl");
}

TEST_F(OpenclExecuteFault, FallbackMovesTheDelegateToTheNextBackend) {
  Result<Method> m = load(OnExecuteFailure::Fallback);
  ASSERT_TRUE(m.ok()) << m.status().message();
  run_and_check(*m);
  {
    EnqueueFault fault(CL_OUT_OF_RESOURCES, 1);  // delegate opencl#0's first kernel
    run_and_check(*m);
  }
  EXPECT_STREQ(m->delegate_info(0).backend, "portable");
  EXPECT_EQ(m->delegate_info(0).execute_fallbacks, 1);
  EXPECT_STREQ(m->delegate_info(0).execute_fallback_reason,
               "'opencl' execute failed: opencl: delegate 'opencl#0': enqueue failed: "
               "CL_OUT_OF_RESOURCES; moved to 'portable' and retried");
  EXPECT_STREQ(m->delegate_info(1).backend, "opencl");
  run_and_check(*m);
}

}  // namespace
}  // namespace tessera
