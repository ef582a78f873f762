// tessera-run as a user sees it: outputs, JSON, .npy in and out, option flags, and errors on
// stderr with a non-zero exit code (never a crash).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "tests/testing/test_programs.h"
#include "tools/common/npy.h"

namespace tessera {
namespace {

struct RunResult {
  int exit_code;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

class TesseraRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // ctest runs each test in its own process, in parallel: one directory per process.
    dir_ = ::testing::TempDir() + "/tessera_run_test_" + std::to_string(::getpid());
    std::system(("mkdir -p " + dir_).c_str());
    ASSERT_TRUE(testing::add_relu_mul_program().write(dir_ + "/kernels.tsr").is_ok());
    ASSERT_TRUE(testing::add_relu_mul_program(true).write(dir_ + "/symbolic.tsr").is_ok());
    ASSERT_TRUE(testing::delegate_chain_program({"portable"}).write(dir_ + "/delegate.tsr").is_ok());
    ASSERT_TRUE(testing::delegate_chain_program({"xnnpack", "onednn"})
                    .write(dir_ + "/cpu_backends.tsr")
                    .is_ok());
    // An input file: x = float32[2, 4].
    tools::NpyArray x;
    x.dtype = ScalarType::Float32;
    x.shape = {2, 4};
    x.data.assign(sizeof(float) * 8, 0);
    ASSERT_TRUE(tools::write_npy(dir_ + "/x.npy", x).is_ok());
  }

  RunResult run(const std::string& args, const std::string& env = "") {
    std::string out = dir_ + "/stdout.txt", err = dir_ + "/stderr.txt";
    std::string cmd = env + " " TESSERA_RUN_PATH " " + args + " > " + out + " 2> " + err;
    int status = std::system(cmd.c_str());
    RunResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }
  static std::string dir_;
};
std::string TesseraRun::dir_;

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE((haystack).find(needle), std::string::npos) << "'" << (haystack) << "' lacks '" << (needle) << "'"

TEST_F(TesseraRun, PrintsOutputsAndLatency) {
  RunResult r = run(dir_ + "/kernels.tsr --iterations 5 --warmup 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "output   y float32 [2, 4]");
  EXPECT_CONTAINS(r.out, "over 5 iteration(s)");
}

TEST_F(TesseraRun, JsonReport) {
  RunResult r = run(dir_ + "/delegate.tsr --json --iterations 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* key : {"\"program\":", "\"method\":\"forward\"", "\"load_ms\":", "\"latency_ms\":{\"min\":",
                          "\"median\":", "\"iterations\":3", "\"outputs\":[{\"name\":\"v0\",\"dtype\":\"float32\",\"shape\":[2,4]",
                          "\"delegates\":[{\"id\":\"portable#0\",\"backend\":\"portable\",\"requested_backend\":\"portable\"",
                          "{\"key\":\"profile\",\"value\":\"false\",\"source\":\"default\"}"}) {
    EXPECT_CONTAINS(r.out, key);
  }
}

TEST_F(TesseraRun, NpyInputAndOutputFiles) {
  tools::NpyArray x;
  x.dtype = ScalarType::Float32;
  x.shape = {2, 4};
  float values[8] = {0.5f, -1, 3, 4, -2, 0, 1, 2};
  x.data.assign(reinterpret_cast<uint8_t*>(values), reinterpret_cast<uint8_t*>(values) + sizeof values);
  ASSERT_TRUE(tools::write_npy(dir_ + "/x.npy", x).is_ok());
  RunResult r = run(dir_ + "/kernels.tsr --input x=" + dir_ + "/x.npy --output-dir " + dir_ + "/out");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto y = tools::read_npy(dir_ + "/out/y.npy");
  ASSERT_TRUE(y.ok()) << y.status().message();
  ASSERT_EQ(y->shape, (std::vector<int64_t>{2, 4}));
  float want[8];
  testing::add_relu_mul_reference(values, want, 2);
  for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(reinterpret_cast<const float*>(y->data.data())[i], want[i]);
}

TEST_F(TesseraRun, DeterministicDefaultInputs) {
  RunResult a = run(dir_ + "/kernels.tsr --output-dir " + dir_ + "/det_a");
  RunResult b = run(dir_ + "/kernels.tsr --output-dir " + dir_ + "/det_b");
  ASSERT_EQ(a.exit_code, 0);
  ASSERT_EQ(b.exit_code, 0);
  EXPECT_EQ(slurp(dir_ + "/det_a/y.npy"), slurp(dir_ + "/det_b/y.npy"));
}

TEST_F(TesseraRun, SymbolicDims) {
  RunResult missing = run(dir_ + "/symbolic.tsr");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_CONTAINS(missing.err, "symbolic dim 'batch' needs a value between 1 and 8");
  RunResult ok = run(dir_ + "/symbolic.tsr --dim batch=3");
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_CONTAINS(ok.out, "output   y float32 [3, 4]");
  RunResult bad = run(dir_ + "/symbolic.tsr --dim batch=x");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_CONTAINS(bad.err, "--dim 'batch=x' is not NAME=INTEGER");
}

TEST_F(TesseraRun, ErrorsAreClearAndNeverCrash) {
  struct Case {
    std::string args, env, expect;
  };
  const Case cases[] = {
      {"/nonexistent.tsr", "", "cannot open program '/nonexistent.tsr'"},
      {dir_ + "/x.npy", "", "not a Tessera program"},
      {dir_ + "/kernels.tsr --method backward", "", "no method 'backward' in the program (it has 'forward')"},
      {dir_ + "/kernels.tsr --input z=" + dir_ + "/x.npy", "", "method 'forward' has no input 'z' (inputs: 'x')"},
      {dir_ + "/kernels.tsr --input x=/nonexistent.npy", "", "cannot open '/nonexistent.npy'"},
      {dir_ + "/kernels.tsr --input x=" + dir_ + "/kernels.tsr", "", "not a .npy file"},
      {dir_ + "/delegate.tsr --execute-option portable.profil=true", "", "did you mean 'profile'?"},
      {dir_ + "/delegate.tsr --option portable.profile=true", "", "profile"},
      {dir_ + "/delegate.tsr --option nosuch.key=1", "", "nosuch"},
      {dir_ + "/delegate.tsr --retarget portable=nosuch", "", "nosuch"},
      {dir_ + "/delegate.tsr --fallback portable,nosuch", "", "nosuch"},
      {dir_ + "/delegate.tsr", "TESSERA_OPTIONS='portable.profile=maybe'", "TESSERA_OPTIONS:1:"},
  };
  for (const Case& c : cases) {
    RunResult r = run(c.args, c.env);
    EXPECT_EQ(r.exit_code, 1) << c.args << "\n" << r.err;
    EXPECT_CONTAINS(r.err, c.expect);
    EXPECT_CONTAINS(r.err, "tessera-run: ");
  }
}

TEST_F(TesseraRun, OptionsFileErrorsNameTheLine) {
  std::ofstream(dir_ + "/bad.toml") << "[execute.portable]\nprofile = 3\n";
  RunResult r = run(dir_ + "/delegate.tsr --options-file " + dir_ + "/bad.toml");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_CONTAINS(r.err, "bad.toml:2:");
  std::ofstream(dir_ + "/good.toml") << "[execute.portable]\nprofile = true\n";
  RunResult ok = run(dir_ + "/delegate.tsr --options-file " + dir_ + "/good.toml");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

TEST_F(TesseraRun, ListAndExplainOptions) {
  RunResult list = run(dir_ + "/kernels.tsr --list-options");
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_CONTAINS(list.out, "portable");
  EXPECT_CONTAINS(list.out, "profile");
  RunResult explain = run(dir_ + "/delegate.tsr --explain-options --execute-option portable.profile=true");
  ASSERT_EQ(explain.exit_code, 0) << explain.err;
  EXPECT_CONTAINS(explain.out, "delegate portable#0: 1 node(s) on 'portable'");
  EXPECT_CONTAINS(explain.out, "profile");
  RunResult retarget = run(dir_ + "/delegate.tsr --explain-options --retarget portable=portable");
  EXPECT_EQ(retarget.exit_code, 0) << retarget.err;
}

TEST_F(TesseraRun, ProfileTurnsOnEachUsedBackendsProfiling) {
  // --profile sets portable.profile=true itself (no --execute-option) and reports every event.
  RunResult text = run(dir_ + "/delegate.tsr --profile --iterations 3");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_CONTAINS(text.out, "profile  1 event(s) per call, mean over 3 call(s)");
  RunResult json = run(dir_ + "/delegate.tsr --profile --iterations 2 --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_CONTAINS(json.out, "\"profile\":[{\"name\":");
  EXPECT_CONTAINS(json.out, "\"calls\":2}");
  EXPECT_CONTAINS(json.out, "\"profile_events_dropped\":0");
  // Without it there is no profile section; an explicit false wins over --profile.
  RunResult plain = run(dir_ + "/delegate.tsr --json");
  EXPECT_EQ(plain.out.find("\"profile\":"), std::string::npos);
  RunResult off = run(dir_ + "/delegate.tsr --profile --execute-option portable.profile=false");
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_CONTAINS(off.out, "profile  0 event(s) per call");
}

TEST_F(TesseraRun, ListOptionsNeedsNoProgramButRunningDoes) {
  RunResult list = run("--list-options");
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_CONTAINS(list.out, "portable");
  RunResult none = run("");
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_CONTAINS(none.err, "tessera-run: a program file is required");
}

// The ICD loader pointed at an empty vendors directory finds no OpenCL platform: opencl is
// listed as unavailable, and a program compiled for it runs only through an explicit fallback.
TEST_F(TesseraRun, NoOpenClDevice) {
  const std::string vendors = dir_ + "/no_icd_vendors";
  std::system(("mkdir -p " + vendors).c_str());
  const std::string env = "OCL_ICD_VENDORS=" + vendors;
  RunResult list = run("--list-options", env);
  ASSERT_EQ(list.exit_code, 0) << list.err;
  if (list.out.find("\nopencl") == std::string::npos) GTEST_SKIP() << "opencl backend not built";
  EXPECT_CONTAINS(list.out, "\nopencl  (not available on this machine: no OpenCL platform (");

  ASSERT_TRUE(testing::delegate_chain_program({"opencl"}).write(dir_ + "/opencl.tsr").is_ok());
  RunResult fails = run(dir_ + "/opencl.tsr", env);
  EXPECT_EQ(fails.exit_code, 1);
  EXPECT_CONTAINS(fails.err,
                  "backend 'opencl' is not available on this machine (no OpenCL platform (");
  EXPECT_CONTAINS(fails.err, "(DelegateUnavailable)");
  RunResult falls_back = run(dir_ + "/opencl.tsr --fallback portable", env);
  ASSERT_EQ(falls_back.exit_code, 0) << falls_back.err;
  EXPECT_CONTAINS(falls_back.out,
                  "delegate opencl#0: 1 node(s) on 'portable' (compiled for 'opencl')");
  EXPECT_CONTAINS(falls_back.out, "why: 'opencl' is not available on this machine");
}

// The scenario the project started from: the same program on a phone on battery at 15 % loads
// with 1 thread and sleeping workers; on mains with its performance cores; and says why. The
// phone is a fixture tree (tests/backend/machines) DeviceInfo reads through TESSERA_SYSFS_ROOT.
std::string machine_env(const char* name) {
  return std::string("TESSERA_SYSFS_ROOT=") + TESSERA_MACHINES_DIR + "/" + name;
}

TEST_F(TesseraRun, PolicyOnAPhoneOnBatteryAndOnMains) {
  RunResult battery = run(dir_ + "/cpu_backends.tsr --explain-options", machine_env("arm_phone_battery"));
  ASSERT_EQ(battery.exit_code, 0) << battery.err;
  EXPECT_CONTAINS(battery.out, "policy   power_saver (auto: on battery at 15% (below 30%)); threads 1");
  EXPECT_CONTAINS(battery.out, "workers sleep between runs, no load-time-expensive transforms");
  EXPECT_CONTAINS(battery.out,
                  "  num_threads              = 1                (auto: 1 thread of 4, policy "
                  "power_saver (auto); requested 0, default)");
  EXPECT_CONTAINS(battery.out, "  yield_workers            = true             (auto: workers sleep");
  EXPECT_CONTAINS(battery.out,
                  "  conv_algorithm           = direct           (auto: policy power_saver avoids");

  RunResult mains = run(dir_ + "/cpu_backends.tsr --explain-options", machine_env("arm_phone_mains"));
  ASSERT_EQ(mains.exit_code, 0) << mains.err;
  EXPECT_CONTAINS(mains.out, "policy   latency (auto: latency (not on battery, below thermal trips)); threads 4");
  EXPECT_CONTAINS(mains.out,
                  "  num_threads              = 4                (auto: 4 usable performance "
                  "cores, policy latency (auto); requested 0, default)");
  EXPECT_CONTAINS(mains.out, "  yield_workers            = false            (auto: workers spin");

  // An explicit policy wins over the battery.
  RunResult forced = run(dir_ + "/cpu_backends.tsr --explain-options --policy latency",
                         machine_env("arm_phone_battery"));
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_CONTAINS(forced.out, "policy   latency (latency (requested)); threads 4");
}

TEST_F(TesseraRun, ResolvedValuesInJson) {
  RunResult r = run(dir_ + "/cpu_backends.tsr --json", machine_env("arm_phone_battery"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "\"policy\":{\"requested\":\"auto\",\"effective\":\"power_saver\"");
  EXPECT_CONTAINS(r.out, "{\"key\":\"num_threads\",\"value\":\"0\",\"source\":\"default\",\"resolved\":\"1\","
                         "\"reason\":\"auto: 1 thread of 4, policy power_saver (auto)\"}");
  // Values the user set carry no resolved entry.
  RunResult set = run(dir_ + "/cpu_backends.tsr --json --option xnnpack.num_threads=3",
                      machine_env("arm_phone_battery"));
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_CONTAINS(set.out, "{\"key\":\"num_threads\",\"value\":\"3\",\"source\":\"load\"}");
}

TEST_F(TesseraRun, PolicyNameIsChecked) {
  RunResult r = run(dir_ + "/cpu_backends.tsr --policy fastest");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_CONTAINS(r.err, "--policy: unknown policy 'fastest' (expected auto, latency, balanced or power_saver)");
}

TEST_F(TesseraRun, DeviceInfoTextAndJson) {
  RunResult text = run("--device-info", machine_env("amd_vm"));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_CONTAINS(text.out, "cpu: AMD EPYC (amd)");
  EXPECT_CONTAINS(text.out, "cpus: 2 online (0-1), 2 usable by this process");
  EXPECT_CONTAINS(text.out, "caches (cpuid): L1d 48 KiB x2, L2 1024 KiB x2");
  RunResult json = run("--device-info --json", machine_env("laptop_battery_low"));
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_CONTAINS(json.out, "\"usable_cpus\": 8");
  EXPECT_CONTAINS(json.out, "\"capacity_percent\": 15");
  EXPECT_CONTAINS(json.out, "\"on_battery\": true");
  // The live machine: whatever it is, a coherent report.
  RunResult live = run("--device-info");
  ASSERT_EQ(live.exit_code, 0) << live.err;
  EXPECT_CONTAINS(live.out, "usable by this process");
  EXPECT_EQ(live.out.find("4294967295"), std::string::npos);
}

}  // namespace
}  // namespace tessera
