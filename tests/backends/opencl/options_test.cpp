// Options: schema, device selection errors, init-only locking, shape specialisation with a
// symbolic dim, build options, kernel profiling at execute scope.
#include <gtest/gtest.h>

#include "harness.h"
#include "tessera/backend/global_options.h"
#include "tessera/backend/options.h"
#include "tessera/backend/registry.h"
#include "tessera/backends/opencl/devices.h"
#include "tessera/backends/opencl/options.h"
#include "test_util.h"

namespace tessera::opencl::testing {
namespace {

TEST(OpenClOptions, SchemaDeclaresEveryOption) {
  Result<BackendInterface*> b = get_backend("opencl");
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE((*b)->is_available());
  Span<const OptionSpec> schema = (*b)->option_schema();
  for (const char* key : {"platform", "device_type", "device_index", "build_options", "cache_dir",
                          "cache_mode", "tuning_level", "tuning_file", "specialize_shapes",
                          "kernel_profiling"}) {
    EXPECT_GE(find_option_spec(schema, key), 0) << key;
  }
  EXPECT_TRUE(schema[static_cast<size_t>(find_option_spec(schema, "platform"))].is_init_only);
  EXPECT_TRUE(schema[static_cast<size_t>(find_option_spec(schema, "device_type"))].is_init_only);
  EXPECT_FALSE(schema[static_cast<size_t>(find_option_spec(schema, "device_index"))].is_init_only);
  EXPECT_TRUE(schema[static_cast<size_t>(find_option_spec(schema, "kernel_profiling"))].allows(
      OptionLevel::Execute));
  EXPECT_FALSE(
      schema[static_cast<size_t>(find_option_spec(schema, "platform"))].allows(OptionLevel::Load));
}

// The selection cache's key names every OpenCL device and its driver through build_id: a
// choice measured for one GPU or driver version is not reused for another.
TEST(OpenClOptions, BuildIdNamesEveryDeviceAndDriver) {
  Result<BackendInterface*> b = get_backend("opencl");
  ASSERT_TRUE(b.ok());
  const std::string id = (*b)->build_id();
  Result<std::shared_ptr<DeviceSet>> all = DeviceSet::discover("", "any");
  if (!all.ok()) {
    EXPECT_EQ(id, "OpenCL: no device");
    return;
  }
  ASSERT_GT((*all)->size(), 0u);
  for (size_t i = 0; i < (*all)->size(); ++i) {
    const Device& d = (*all)->device(i);
    EXPECT_NE(id.find(d.fingerprint), std::string::npos) << d.fingerprint << " not in " << id;
    EXPECT_NE(d.fingerprint.find(d.name), std::string::npos);
  }
  EXPECT_STREQ((*b)->build_id(), id.c_str());  // one text for the process
}

TEST(OpenClOptions, DeviceIndexOutOfRangeIsClear) {
  LoadBackendOptionsMap load;
  ASSERT_TRUE(load.set("opencl", kDeviceIndex, 63).is_ok());
  Session s;
  Status st = s.init(small_net(), with(load));
  EXPECT_EQ(st.code(), Error::InvalidArgument);
  EXPECT_NE(std::string(st.message()).find("device_index 63 is out of range"), std::string::npos)
      << st.message();
}

TEST(OpenClOptions, InitOnlyPlatformLocksAfterFirstInit) {
  ASSERT_TRUE(reset_backend_options("opencl").is_ok());
  // Before any init: an unknown platform is accepted, and the load fails clearly.
  BackendOptions<1> bad;
  ASSERT_TRUE(bad.set(kPlatform, "no-such-platform").is_ok());
  ASSERT_TRUE(set_option("opencl", bad.view()).is_ok());
  {
    Session s;
    Status st = s.init(small_net());
    EXPECT_EQ(st.code(), Error::DelegateUnavailable);
    EXPECT_NE(std::string(st.message()).find("no-such-platform"), std::string::npos) << st.message();
  }
  ASSERT_TRUE(reset_backend_options("opencl").is_ok());
  BackendOptions<1> pocl;
  ASSERT_TRUE(pocl.set(kPlatform, "Portable").is_ok());
  ASSERT_TRUE(set_option("opencl", pocl.view()).is_ok());
  {
    Session s;
    ASSERT_TRUE(s.init(small_net()).is_ok());
  }
  EXPECT_EQ(*backend_lifecycle("opencl"), BackendLifecycle::Initialized);
  BackendOptions<1> other;
  ASSERT_TRUE(other.set(kPlatform, "NVIDIA").is_ok());
  EXPECT_EQ(set_option("opencl", other.view()).code(), Error::InvalidState);
  // A non-init-only global option may still change.
  BackendOptions<1> idx;
  ASSERT_TRUE(idx.set(kDeviceIndex, 0).is_ok());
  EXPECT_TRUE(set_option("opencl", idx.view()).is_ok());
  ASSERT_TRUE(reset_backend_options("opencl").is_ok());
}

TEST(OpenClOptions, SpecializedShapesWithSymbolicBatch) {
  for (bool specialize : {false, true}) {
    SCOPED_TRACE(specialize);
    GraphCase g;
    int batch = g.symbol("batch", 4, 3);
    ir::Dim n = ir::Dim::symbol(batch, 4);
    int x = g.input({n, 3, 6, 6});
    int w = g.constant({5, 3, 3, 3});
    int y = g.tensor({n, 5, 4, 4});
    ir::Node& conv = g.node(fb::OpType::Conv, {x, w}, y);
    conv.attrs.push_back(ir::Attr::make_ints("kernel_shape", {3, 3}));
    g.output(y);
    LoadBackendOptionsMap load;
    ASSERT_TRUE(load.set("opencl", kSpecializeShapes, specialize).is_ok());
    std::vector<Floats> in = random_inputs(g, 3);
    Result<std::vector<Floats>> got = run_opencl(g, in, with(load));
    ASSERT_TRUE(got.ok()) << got.status().message();
    Result<std::vector<Floats>> want = run_portable(g, in);
    ASSERT_TRUE(want.ok()) << want.status().message();
    EXPECT_TRUE(close(*got, *want));
  }
}

TEST(OpenClOptions, BuildOptionsReachTheCompiler) {
  LoadBackendOptionsMap fast;
  ASSERT_TRUE(fast.set("opencl", kBuildOptions, "-cl-fast-relaxed-math").is_ok());
  GraphCase g = small_net();
  std::vector<Floats> in = random_inputs(g, 5);
  Result<std::vector<Floats>> got = run_opencl(g, in, with(fast));
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_TRUE(close(*got, *run_portable(g, in), 1e-3));
  // A macro definition reaches the compiler (PoCL aborts on some malformed options, so only
  // well-formed ones are tried here).
  LoadBackendOptionsMap define;
  ASSERT_TRUE(define.set("opencl", kBuildOptions, "-DTESSERA_UNUSED=1 -cl-mad-enable").is_ok());
  Session s;
  EXPECT_TRUE(s.init(g, with(define)).is_ok());
}

TEST(OpenClOptions, KernelProfilingAtExecuteScope) {
  GraphCase g = small_net();
  Session s;
  ASSERT_TRUE(s.init(g).is_ok());
  std::vector<Floats> in = random_inputs(g, 1), out;
  ProfileEvent storage[16];
  ProfileBuffer profile(Span<ProfileEvent>(storage, 16));
  ASSERT_TRUE(s.run(in, &out, nullptr, &profile).is_ok());
  EXPECT_EQ(profile.events().size(), 0u);
  ExecuteOptions exec;
  ASSERT_TRUE(exec.set("opencl", kKernelProfiling, true).is_ok());
  ASSERT_TRUE(s.run(in, &out, &exec, &profile).is_ok());
  ASSERT_EQ(profile.events().size(), s.summary().kernels);
  EXPECT_NE(std::string(profile.events()[0].name).find("Conv"), std::string::npos);
  for (const ProfileEvent& e : profile.events()) EXPECT_GE(e.ms, 0.0);
}

}  // namespace
}  // namespace tessera::opencl::testing
