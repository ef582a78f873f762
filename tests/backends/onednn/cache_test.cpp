// cache_dir: Winograd-transformed weights written on a cold load and read on a warm one, with
// the same results; cache modes; and broken entries (flipped byte, truncated, unwritable
// directory), each recomputed with a warning, never a wrong result.
#include <gtest/gtest.h>

#include "harness.h"
#include "tessera/backends/onednn/options.h"
#include "tests/backends/common/conv_cases.h"
#include "tests/backends/common/test_files.h"

namespace tessera::onednn::testing {
namespace {

using backend_testing::LogCapture;
using backend_testing::read_bytes;
using backend_testing::TempDir;
using backend_testing::write_bytes;

/// Two Winograd-eligible convolutions in a row: two cache entries.
GraphCase two_convs() {
  backend_testing::ConvCfg c{1, 32, 16, 16, 32, 3, 3};
  c.pt = c.pl = c.pb = c.pr = 1;
  c.act = fb::Activation::Relu;
  GraphCase g;
  g.seed = 90;
  int y = backend_testing::add_conv(g, g.input({1, 32, 16, 16}), c);
  g.output(backend_testing::add_conv(g, y, c));
  return g;
}

LoadBackendOptionsMap cache_options(const std::string& dir, const char* mode = "readwrite") {
  LoadBackendOptionsMap load;
  EXPECT_TRUE(load.set("onednn", kConvAlgorithm, EnumValue{"winograd"}).is_ok());
  EXPECT_TRUE(load.set("onednn", kCacheDir, dir).is_ok());
  EXPECT_TRUE(load.set("onednn", kCacheMode, EnumValue{mode}).is_ok());
  return load;
}

/// Initialises `s` with `load`, runs `g` on fixed inputs; the outputs, or an empty vector.
std::vector<Floats> init_and_run(Session& s, const GraphCase& g,
                                 const LoadBackendOptionsMap& load) {
  RunOptions o;
  o.load = &load;
  const Status init = s.init(g, o);
  EXPECT_TRUE(init.is_ok()) << init.message();
  std::vector<Floats> out;
  if (!init.is_ok()) return out;
  const Status run = s.run(random_inputs(g, 3), &out);
  EXPECT_TRUE(run.is_ok()) << run.message();
  return out;
}

class OnednnCache : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!winograd_kernels_available()) GTEST_SKIP() << "no Winograd kernels on this CPU";
    auto want = run_portable(g_, random_inputs(g_, 3));
    ASSERT_TRUE(want.ok()) << want.status().message();
    want_ = *want;
  }
  GraphCase g_ = two_convs();
  std::vector<Floats> want_;
};

TEST_F(OnednnCache, ColdThenWarm) {
  TempDir dir;
  const LoadBackendOptionsMap load = cache_options(dir.path());
  std::vector<Floats> cold_out, warm_out;
  {
    Session cold;
    cold_out = init_and_run(cold, g_, load);
    EXPECT_EQ(cold.summary().winograd_convs, 2u);
    EXPECT_EQ(cold.summary().weights_cached, 2u);
    EXPECT_EQ(cold.summary().weights_from_cache, 0u);
  }
  ASSERT_EQ(dir.files().size(), 2u);
  for (const std::string& f : dir.files()) EXPECT_NE(f.find(".dnnlw"), std::string::npos) << f;
  Session warm;
  warm_out = init_and_run(warm, g_, load);
  EXPECT_EQ(warm.summary().weights_from_cache, 2u);
  EXPECT_EQ(warm.summary().weights_cached, 0u);
  EXPECT_TRUE(close(warm_out, want_));
  EXPECT_EQ(warm_out, cold_out);  // the same bytes, so the same results
}

TEST_F(OnednnCache, ModesOffAndRead) {
  TempDir dir;
  {
    Session off;
    init_and_run(off, g_, cache_options(dir.path(), "off"));
    EXPECT_EQ(off.summary().weights_cached, 0u);
  }
  {
    Session read;
    EXPECT_TRUE(close(init_and_run(read, g_, cache_options(dir.path(), "read")), want_));
    EXPECT_EQ(read.summary().weights_cached, 0u);
    EXPECT_EQ(read.summary().weights_from_cache, 0u);
  }
  EXPECT_TRUE(dir.files().empty());
  {
    Session write;
    init_and_run(write, g_, cache_options(dir.path()));
  }
  Session read;
  EXPECT_TRUE(close(init_and_run(read, g_, cache_options(dir.path(), "read")), want_));
  EXPECT_EQ(read.summary().weights_from_cache, 2u);
}

TEST_F(OnednnCache, BrokenEntriesAreRecomputed) {
  TempDir dir;
  const LoadBackendOptionsMap load = cache_options(dir.path());
  {
    Session cold;
    init_and_run(cold, g_, load);
  }
  ASSERT_EQ(dir.files().size(), 2u);
  // One entry with a flipped payload byte, the other cut short.
  const std::string flipped = dir.file(dir.files()[0]);
  const std::string truncated = dir.file(dir.files()[1]);
  std::vector<char> bytes = read_bytes(flipped);
  bytes[bytes.size() / 2] ^= 0x5a;
  write_bytes(flipped, bytes);
  bytes = read_bytes(truncated);
  bytes.resize(bytes.size() / 3);
  write_bytes(truncated, bytes);
  LogCapture log;
  {
    Session broken;
    EXPECT_TRUE(close(init_and_run(broken, g_, load), want_));
    EXPECT_EQ(broken.summary().weights_from_cache, 0u);
    EXPECT_EQ(broken.summary().weights_cached, 2u);  // rewritten
  }
  EXPECT_EQ(log.warnings().size(), 2u);
  for (const std::string& w : log.warnings()) {
    EXPECT_NE(w.find("recomputing"), std::string::npos) << w;
  }
  Session warm;
  EXPECT_TRUE(close(init_and_run(warm, g_, load), want_));
  EXPECT_EQ(warm.summary().weights_from_cache, 2u);
}

TEST_F(OnednnCache, UnwritableDirectoryIsAWarning) {
  TempDir dir;
  write_bytes(dir.file("plain"), {'x'});
  LogCapture log;
  Session s;  // cache_dir under a regular file: it cannot be created
  EXPECT_TRUE(close(init_and_run(s, g_, cache_options(dir.file("plain") + "/cache")), want_));
  EXPECT_EQ(s.summary().weights_cached, 0u);
  bool named = false;  // reading says the path is no directory; writing names cache_dir
  for (const std::string& w : log.warnings())
    named |=
        w.find("cannot create cache_dir") == 0 || w.find("onednn: cannot create cache_dir") == 0;
  EXPECT_TRUE(named) << ::testing::PrintToString(log.warnings());
}

}  // namespace
}  // namespace tessera::onednn::testing
