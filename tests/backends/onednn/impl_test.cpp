// The convolution implementations oneDNN picks for ResNet-18, read from ONEDNN_VERBOSE output:
// never `ref:` or a gemm fallback (a slow path must not creep back), and, when max_cpu_isa=avx2
// is set before the first load, avx2 kernels instead of avx512 ones. Built twice (default ISA,
// avx2) because oneDNN fixes its ISA once per process.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "model_util.h"
#include "tessera/backend/global_options.h"
#include "tessera/backend/options.h"
#include "tessera/backend/options_map.h"
#include "tessera/backends/onednn/onednn_backend.h"
#include "tessera/backends/onednn/options.h"

namespace tessera::onednn::testing {
namespace {

/// Runs `fn` with stdout (where oneDNN's verbose lines go) redirected to a file; returns it.
template <typename Fn>
std::string capture_stdout(Fn fn) {
  const std::string path = std::filesystem::temp_directory_path() /
                           ("onednn_verbose_" + std::to_string(getpid()) + ".txt");
  std::fflush(stdout);
  const int saved = dup(1);
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  dup2(fd, 1);
  close(fd);
  fn();
  std::fflush(stdout);
  dup2(saved, 1);
  close(saved);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::filesystem::remove(path);
  return text.str();
}

/// Implementation names of the convolutions executed ("brgconv:avx512_core", ...).
std::multiset<std::string> conv_impls(const std::string& verbose) {
  std::multiset<std::string> out;
  std::istringstream lines(verbose);
  std::string line;
  while (std::getline(lines, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    std::string field;
    while (std::getline(ss, field, ',')) f.push_back(field);
    if (f.size() > 4 && f[1] == "exec" && f[3] == "convolution") out.insert(f[4]);
  }
  return out;
}

/// Load options with conv_algorithm=`algorithm` for onednn (kept alive by the caller).
LoadOptions with_algorithm(LoadBackendOptionsMap& map, const char* algorithm) {
  BackendOptions<1> opts;
  EXPECT_TRUE(opts.set(kConvAlgorithm, EnumValue{algorithm}).is_ok());
  EXPECT_TRUE(map.set_options("onednn", opts.view()).is_ok());
  LoadOptions load;
  load.backend_options = &map;
  return load;
}

size_t winograd_count(const std::multiset<std::string>& impls) {
  size_t n = 0;
  for (const std::string& i : impls) n += i.find("wino") != std::string::npos ? 1 : 0;
  return n;
}

std::multiset<std::string> run_resnet18(LoadOptions load = {}) {
  std::multiset<std::string> impls;
  Result<FixtureRun> run = Status(Error::Internal, "not run");
  const std::string verbose =
      capture_stdout([&] { run = compile_and_run_fixture("resnet18", "", load); });
  EXPECT_TRUE(run.ok()) << run.status().message();
  if (run.ok()) {
    EXPECT_LE(run->max_diff, 1e-4 * run->max_ref);
  }
  impls = conv_impls(verbose);
  std::set<std::string> unique(impls.begin(), impls.end());
  for (const std::string& i : unique)
    std::printf("  convolution: %s x%zu\n", i.c_str(), impls.count(i));
  return impls;
}

class OnednnImplementations : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(fixture_dir() + "/resnet18/model.onnx")) {
      GTEST_SKIP() << "fixture missing (run tests/models/make_fixtures.py)";
    }
    // Read by oneDNN at its first verbose check: before any primitive exists.
    setenv("ONEDNN_VERBOSE", "1", 1);
  }
};

Status set_isa(const char* isa) {
  BackendOptions<1> opts;
  TESSERA_RETURN_IF_ERROR(opts.set(kMaxCpuIsa, EnumValue{isa}));
  return set_option("onednn", opts.view());
}

std::string get_isa() {
  BackendOptions<1> opts;
  if (!opts.set(kMaxCpuIsa, EnumValue{"all"}).is_ok()) return {};
  if (!get_option("onednn", opts.mutable_view()).is_ok()) return {};
  return std::string(opts.view()[0].as_string());
}

#if defined(TESSERA_IMPL_MODE_default)

TEST_F(OnednnImplementations, ResNet18ConvolutionsUseFastKernels) {
  const std::multiset<std::string> impls = run_resnet18();
  ASSERT_EQ(impls.size(), 20u);  // ResNet-18: 20 convolutions (downsample 1x1 included)
  // Initialised: max_cpu_isa reads as the effective ISA (the CPU's, or less where
  // ONEDNN_MAX_CPU_ISA caps it) and can no longer change.
  const std::string effective = get_isa();
  EXPECT_NE(effective, "all");
  for (const std::string& i : impls) {
    EXPECT_NE(i.rfind("ref", 0), 0u) << i;
    EXPECT_EQ(i.find("gemm:"), std::string::npos) << i;
    EXPECT_TRUE(i.find("brg") != std::string::npos || i.find("jit") != std::string::npos) << i;
    if (effective.rfind("avx512", 0) == 0) {
      EXPECT_NE(i.find("avx512"), std::string::npos) << i;
    }
  }
  // conv_algorithm=auto: 10 of the 13 3x3 stride-1 convolutions use Winograd where oneDNN has
  // it; layer 4's three (7x7 outputs) stay direct.
  EXPECT_EQ(winograd_count(impls), winograd_kernels_available() ? 10u : 0u);
  std::printf("  effective ISA: %s\n", effective.c_str());
  EXPECT_EQ(set_isa("avx2").code(), Error::InvalidState);
}

TEST_F(OnednnImplementations, ConvAlgorithmDirectAndWinograd) {
  LoadBackendOptionsMap direct_map, winograd_map;
  const std::multiset<std::string> direct = run_resnet18(with_algorithm(direct_map, "direct"));
  ASSERT_EQ(direct.size(), 20u);
  EXPECT_EQ(winograd_count(direct), 0u);
  if (!winograd_kernels_available()) return;  // the avx2 build checks the error
  const std::multiset<std::string> all = run_resnet18(with_algorithm(winograd_map, "winograd"));
  ASSERT_EQ(all.size(), 20u);
  EXPECT_EQ(winograd_count(all), 13u);  // every 3x3 stride-1 convolution, layer 4's included
}

#else

TEST_F(OnednnImplementations, MaxCpuIsaAvx2ChangesTheKernels) {
  ASSERT_TRUE(set_isa("avx2").is_ok());
  ASSERT_TRUE(set_isa("sse41").is_ok());  // may change its mind before the first load
  ASSERT_TRUE(set_isa("avx2").is_ok());
  EXPECT_EQ(get_isa(), "avx2");
  const std::multiset<std::string> impls = run_resnet18();
  ASSERT_EQ(impls.size(), 20u);
  for (const std::string& i : impls) {
    EXPECT_NE(i.find("avx2"), std::string::npos) << i;
    EXPECT_EQ(i.find("avx512"), std::string::npos) << i;
    EXPECT_NE(i.rfind("ref", 0), 0u) << i;
  }
  EXPECT_EQ(winograd_count(impls), 0u);  // auto: oneDNN has no avx2 Winograd kernels
  EXPECT_EQ(get_isa(), "avx2");
  // Asked for explicitly, Winograd without its kernels is an init error naming the ISA.
  LoadBackendOptionsMap map;
  Result<FixtureRun> wino =
      compile_and_run_fixture("resnet18", "", with_algorithm(map, "winograd"));
  ASSERT_FALSE(wino.ok());
  EXPECT_EQ(wino.status().code(), Error::NotSupported) << wino.status().message();
  EXPECT_NE(std::string(wino.status().message()).find("conv_algorithm=winograd"), std::string::npos)
      << wino.status().message();
  EXPECT_NE(std::string(wino.status().message()).find("avx2"), std::string::npos)
      << wino.status().message();
  std::printf("  %s\n", wino.status().message());
  const Status late = set_isa("all");
  EXPECT_EQ(late.code(), Error::InvalidState) << late.message();
  std::printf("  %s\n", late.message());
}

#endif

}  // namespace
}  // namespace tessera::onednn::testing
