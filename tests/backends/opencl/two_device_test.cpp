// The ExecuTorch RFC case: the same delegate graph loaded twice, each instance pinned to another
// device (device_index 0 and 1, once through LoadBackendOptionsMap, once through
// DelegateOptionsMap), both executing at the same time from two threads. Needs two devices:
// ctest runs it with POCL_DEVICES="pthread pthread".
#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "harness.h"
#include "tessera/backends/opencl/options.h"
#include "test_util.h"

namespace tessera::opencl::testing {
namespace {

TEST(OpenClTwoDevices, PinnedInstancesRunConcurrently) {
  GraphCase g = small_net(11);
  LoadBackendOptionsMap load0;
  ASSERT_TRUE(load0.set("opencl", kDeviceIndex, 0).is_ok());
  DelegateOptionsMap pin1;
  ASSERT_TRUE(pin1.set("opencl#0", kDeviceIndex, 1).is_ok());
  RunOptions o0, o1;
  o0.load = &load0;
  o1.load = &load0;  // the delegate scope wins over the load scope
  o1.delegates = &pin1;
  Session a, b;
  ASSERT_TRUE(a.init(g, o0).is_ok());
  Status st = b.init(g, o1);
  if (st.code() == Error::InvalidArgument) GTEST_SKIP() << "one OpenCL device only: " << st.message();
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_NE(a.summary().context, b.summary().context) << "both instances on one device";
  std::printf("[ devices  ] instance A: %s, instance B: %s\n", a.summary().device.c_str(),
              b.summary().device.c_str());

  std::vector<Floats> in_a = random_inputs(g, 1), in_b = random_inputs(g, 2);
  std::vector<Floats> want_a = *run_portable(g, in_a), want_b = *run_portable(g, in_b);
  std::atomic<int> failures{0};
  auto worker = [&](Session* s, const std::vector<Floats>* in, const std::vector<Floats>* want) {
    std::vector<Floats> out;
    for (int i = 0; i < 25; ++i) {
      if (!s->run(*in, &out).is_ok() || !close(out, *want)) ++failures;
    }
  };
  std::thread ta(worker, &a, &in_a, &want_a);
  std::thread tb(worker, &b, &in_b, &want_b);
  ta.join();
  tb.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace tessera::opencl::testing
