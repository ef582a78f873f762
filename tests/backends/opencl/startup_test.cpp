// LoadOptions::startup_backend with the real OpenCL backend on PoCL: a cold program cache starts
// the delegate on the portable backend and moves it to OpenCL once its kernels are built, with
// executes running meanwhile on another thread; a warm cache starts on OpenCL; a kernel build
// that fails in the background leaves the delegate on the startup backend. Also run under
// ThreadSanitizer by scripts/test.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "tessera/backend/options_map.h"
#include "tessera/backends/opencl/options.h"
#include "tessera/ir/graph.h"
#include "tessera/ir/program_builder.h"
#include "tessera/runtime/data_loader.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program.h"
#include "test_util.h"
#include "tests/testing/test_programs.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

class OpenclStartup : public ::testing::Test {
 protected:
  void SetUp() override {
    auto loaded = testing::load_built_program(testing::delegate_chain_program({"opencl"}));
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    program_ = std::move(*loaded);
    dir_ = fs::temp_directory_path() /
           ("tessera_opencl_startup_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    ASSERT_TRUE(options_.set("opencl", opencl::kCacheDir, dir_.string()).is_ok());
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  Result<Method> load(const char* startup) {
    LoadOptions load;
    TESSERA_RETURN_IF_ERROR(load.set_startup_backend(startup));
    load.backend_options = &options_;
    return program_.program->load_method("forward", nullptr, load);
  }

  // One execute on x = [-2 .. 5]; true when the output is relu(x).
  static bool execute_and_check(Method& m) {
    float x[8] = {-2, -1, 0, 1, 2, 3, 4, 5};
    int64_t sizes[] = {2, 4};
    if (!m.set_input(0, Tensor(ScalarType::Float32, sizes, x)).is_ok()) return false;
    if (!m.execute().is_ok()) return false;
    const float* y = (*m.get_output(0))->data_as<float>();
    for (int i = 0; i < 8; ++i) {
      if (y[i] != (x[i] > 0 ? x[i] : 0)) return false;
    }
    return true;
  }

  testing::LoadedProgram program_;
  fs::path dir_;
  LoadBackendOptionsMap options_;
};

TEST_F(OpenclStartup, ColdCacheServesOnPortableThenMovesToOpenclWhileAnotherThreadExecutes) {
  auto m = load("portable");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const DelegateInfo& info = m->delegate_info(0);
  EXPECT_STREQ(info.startup.backend, "portable");
  EXPECT_STREQ(info.startup.target, "opencl");

  std::atomic<int> wrong{0};
  std::thread runner([&] {
    Method& method = *m;
    for (int i = 0; i < 20; ++i) wrong += execute_and_check(method) ? 0 : 1;
    // Then until the kernels are built and the delegate has moved.
    EXPECT_TRUE(method.wait_for_startup());
    for (int i = 0; i < 3; ++i) wrong += execute_and_check(method) ? 0 : 1;
  });
  runner.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_STREQ(info.startup.state, "switched") << info.startup.failure;
  EXPECT_STREQ(info.backend, "opencl");
  EXPECT_EQ(info.startup.startup_executes + info.startup.target_executes, 23u);
  EXPECT_GE(info.startup.target_executes, 3u);
  EXPECT_GT(info.startup.build_ms, 0.0);
  // The build filled the cache: the next load starts on OpenCL.
  bool has_entry = false;
  for (const auto& e : fs::directory_iterator(dir_)) has_entry |= e.path().extension() == ".clbin";
  EXPECT_TRUE(has_entry);

  auto warm = load("portable");
  ASSERT_TRUE(warm.ok()) << warm.status().message();
  EXPECT_STREQ(warm->delegate_info(0).backend, "opencl");
  EXPECT_STREQ(warm->delegate_info(0).startup.backend, "");
  EXPECT_NE(std::string(warm->delegate_info(0).startup.reason).find("nothing to build"),
            std::string::npos)
      << warm->delegate_info(0).startup.reason;
  EXPECT_TRUE(execute_and_check(*warm));
}

TEST_F(OpenclStartup, WithoutACacheDirEveryInitIsCold) {
  LoadBackendOptionsMap no_cache;
  ASSERT_TRUE(no_cache.set("opencl", opencl::kCacheDir, "").is_ok());
  LoadOptions load;
  ASSERT_TRUE(load.set_startup_backend("portable").is_ok());
  load.backend_options = &no_cache;
  auto m = program_.program->load_method("forward", nullptr, load);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_STREQ(m->delegate_info(0).startup.backend, "portable");
  EXPECT_TRUE(m->wait_for_startup());
  EXPECT_STREQ(m->delegate_info(0).backend, "opencl");
}

// forward(x: float32[2, 4]) = x + bias on one opencl delegate, bias a program constant, as in
// every compiled model. The question whether the init would be cold reads the constants' shapes
// as init does; a query without the program's constants could not tell ("the runtime provided
// no constant data"), so a compiled model never started on the startup backend.
ir::ProgramBuilder opencl_add_bias_program() {
  ir::ProgramBuilder pb;
  const float bias[4] = {1.0f, -2.0f, 0.5f, 3.0f};
  const int cb = pb.add_constant(bias, sizeof bias);
  ir::MethodBuilder& m = pb.add_method("forward");
  const int x = m.add_input("x", ScalarType::Float32, {2, 4});
  const int y = m.add_tensor("y", ScalarType::Float32, {2, 4});
  ir::Graph g;
  ir::Value in, b, out;
  in.dims = {2, 4};
  b.dims = {4};
  b.constant = cb;
  out.dims = {2, 4};
  g.values = {in, b, out};
  ir::Node add;
  add.op = fb::OpType::Add;
  add.name = "add";
  add.inputs = {0, 1};
  add.outputs = {2};
  g.nodes = {add};
  g.inputs = {0};
  g.outputs = {2};
  ir::DelegateDesc d;
  d.id = "opencl#0";
  d.backend = "opencl";
  d.payload = ir::encode_graph(g);
  d.inputs = {x};
  d.outputs = {y};
  m.add_delegate(std::move(d));
  m.add_output(y);
  if (!m.plan_memory().is_ok()) std::abort();
  return pb;
}

TEST_F(OpenclStartup, ADelegateWithProgramConstantsStartsOnTheStartupBackend) {
  auto loaded = testing::load_built_program(opencl_add_bias_program());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  LoadOptions load;
  ASSERT_TRUE(load.set_startup_backend("portable").is_ok());
  load.backend_options = &options_;
  for (const bool cold : {true, false}) {
    SCOPED_TRACE(cold ? "cold cache" : "warm cache");
    auto m = loaded->program->load_method("forward", nullptr, load);
    ASSERT_TRUE(m.ok()) << m.status().message();
    const DelegateInfo& info = m->delegate_info(0);
    EXPECT_STREQ(info.startup.backend, cold ? "portable" : "") << info.startup.reason;
    if (!cold) {
      EXPECT_NE(std::string(info.startup.reason).find("nothing to build"), std::string::npos)
          << info.startup.reason;
    }
    float x[8] = {-2, -1, 0, 1, 2, 3, 4, 5};
    const float want[8] = {-1, -3, 0.5f, 4, 3, 1, 4.5f, 8};
    const int64_t sizes[] = {2, 4};
    ASSERT_TRUE(m->set_input(0, Tensor(ScalarType::Float32, sizes, x)).is_ok());
    ASSERT_TRUE(m->execute().is_ok());
    EXPECT_EQ(std::memcmp((*m->get_output(0))->data(), want, sizeof want), 0);
    EXPECT_TRUE(m->wait_for_startup());
    EXPECT_STREQ(info.backend, "opencl");
  }
}

TEST_F(OpenclStartup, AKernelBuildFailingInTheBackgroundStaysOnTheStartupBackend) {
  ASSERT_TRUE(options_.set("opencl", opencl::kBuildOptions, "-Dfloat=(").is_ok());
  auto m = load("portable");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_TRUE(execute_and_check(*m));
  EXPECT_TRUE(m->wait_for_startup());
  const DelegateInfo& info = m->delegate_info(0);
  EXPECT_STREQ(info.startup.state, "failed");
  EXPECT_STREQ(info.backend, "portable");
  EXPECT_NE(std::string(info.startup.failure).find("clBuildProgram"), std::string::npos)
      << info.startup.failure;
  EXPECT_TRUE(execute_and_check(*m));
  EXPECT_EQ(info.startup.startup_executes, 2u);
}

TEST_F(OpenclStartup, DestroyingTheMethodWhileTheKernelsBuildIsSafe) {
  for (int i = 0; i < 3; ++i) {
    fs::remove_all(dir_);
    auto m = load("portable");
    ASSERT_TRUE(m.ok()) << m.status().message();
    EXPECT_TRUE(execute_and_check(*m));
  }  // each Method goes while (or just after) its build runs
}

}  // namespace
}  // namespace tessera
