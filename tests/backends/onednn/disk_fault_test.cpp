// Disk faults under oneDNN's weight cache (cache_dir), injected through integrity_file.h's seam
// so that no test needs a full or read-only file system: a full disk, a read-only directory, an
// entry replaced or rewritten while it is read. Results stay right and a warning says what was
// skipped. Then two processes building the same entries at once.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "tessera/backend/integrity_file.h"
#include "tessera/backends/onednn/options.h"
#include "tests/backends/common/conv_cases.h"
#include "tests/backends/common/test_files.h"

extern char** environ;

namespace tessera::onednn::testing {
namespace {

using backend_testing::LogCapture;
using backend_testing::read_bytes;
using backend_testing::TempDir;
using backend_testing::write_bytes;

GraphCase two_convs() {
  backend_testing::ConvCfg c{1, 32, 16, 16, 32, 3, 3};
  c.pt = c.pl = c.pb = c.pr = 1;
  c.act = fb::Activation::Relu;
  GraphCase g;
  g.seed = 91;
  int y = backend_testing::add_conv(g, g.input({1, 32, 16, 16}), c);
  g.output(backend_testing::add_conv(g, y, c));
  return g;
}

LoadBackendOptionsMap cache_options(const std::string& dir) {
  LoadBackendOptionsMap load;
  EXPECT_TRUE(load.set("onednn", kConvAlgorithm, EnumValue{"winograd"}).is_ok());
  EXPECT_TRUE(load.set("onednn", kCacheDir, dir).is_ok());
  EXPECT_TRUE(load.set("onednn", kCacheMode, EnumValue{"readwrite"}).is_ok());
  return load;
}

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

bool any_contains(const std::vector<std::string>& lines, const std::string& what) {
  for (const std::string& l : lines) {
    if (l.find(what) != std::string::npos) return true;
  }
  return false;
}

// Clears an injected write fault even when an assertion returns early.
struct WriteFault {
  WriteFault(int error, uint64_t after) { set_integrity_write_fault(error, after); }
  ~WriteFault() { set_integrity_write_fault(0); }
};

class OnednnDiskFault : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!winograd_kernels_available()) GTEST_SKIP() << "no Winograd kernels on this CPU";
    auto want = run_portable(g_, random_inputs(g_, 3));
    ASSERT_TRUE(want.ok()) << want.status().message();
    want_ = *want;
  }
  // A load that must compute everything, write nothing, and warn with `error_text`.
  void expect_skipped_write(const TempDir& dir, const char* error_text) {
    LogCapture log;
    {
      Session s;
      EXPECT_TRUE(close(init_and_run(s, g_, cache_options(dir.path())), want_));
      EXPECT_EQ(s.summary().weights_cached, 0u);
      EXPECT_EQ(s.summary().weights_from_cache, 0u);
    }
    EXPECT_EQ(log.warnings().size(), 2u) << ::testing::PrintToString(log.warnings());
    EXPECT_TRUE(any_contains(log.warnings(), "onednn: cache not written"));
    EXPECT_TRUE(any_contains(log.warnings(), error_text))
        << ::testing::PrintToString(log.warnings());
    EXPECT_TRUE(dir.files().empty()) << ::testing::PrintToString(dir.files());  // no temp left
  }
  // Once the fault is gone, the entries are written and then read back.
  void expect_cache_works_again(const TempDir& dir) {
    {
      Session cold;
      EXPECT_TRUE(close(init_and_run(cold, g_, cache_options(dir.path())), want_));
      EXPECT_EQ(cold.summary().weights_cached, 2u);
    }
    Session warm;
    EXPECT_TRUE(close(init_and_run(warm, g_, cache_options(dir.path())), want_));
    EXPECT_EQ(warm.summary().weights_from_cache, 2u);
  }

  GraphCase g_ = two_convs();
  std::vector<Floats> want_;
};

TEST_F(OnednnDiskFault, FullDiskMidFileIsAWarningAndLeavesNoFile) {
  TempDir dir;
  {
    WriteFault full(ENOSPC, 4096);  // the header and part of the weights reach the disk
    expect_skipped_write(dir, "No space left on device");
  }
  expect_cache_works_again(dir);
}

TEST_F(OnednnDiskFault, ReadOnlyDirectoryIsAWarning) {
  TempDir dir;
  {
    WriteFault read_only(EROFS, 0);
    expect_skipped_write(dir, "Read-only file system");
  }
  if (::geteuid() != 0) {  // root writes into a 0555 directory anyway
    ASSERT_EQ(::chmod(dir.path().c_str(), 0555), 0);
    expect_skipped_write(dir, "Permission denied");
    ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
  }
  expect_cache_works_again(dir);
}

// The read hook's context: what to do to the file while it is being read.
struct MidRead {
  enum Action { Replace, Rewrite } action;
  std::string other;  // Replace: a valid entry of the other convolution, renamed over it
  int calls = 0;
};

void act_mid_read(const char* path, void* context) {
  auto* m = static_cast<MidRead*>(context);
  ++m->calls;
  if (m->action == MidRead::Replace) {
    if (!m->other.empty() && m->other != path) {
      std::rename(m->other.c_str(), path);  // as a concurrent writer's atomic replace does
      m->other.clear();
    }
  } else {
    std::vector<char> bytes = read_bytes(path);  // a foreign writer rewriting in place
    bytes.resize(bytes.size() / 2);
    write_bytes(path, bytes);
  }
}

struct ReadHook {
  explicit ReadHook(MidRead* m) { set_integrity_read_hook(act_mid_read, m); }
  ~ReadHook() { set_integrity_read_hook(nullptr, nullptr); }
};

TEST_F(OnednnDiskFault, EntryReplacedWhileReadIsReadWhole) {
  TempDir dir;
  {
    Session cold;
    init_and_run(cold, g_, cache_options(dir.path()));
  }
  ASSERT_EQ(dir.files().size(), 2u);
  // While the first entry is read, the second is renamed over it: the reader keeps the file it
  // opened, whole and checked, so the result is right. (Afterwards the name holds the other
  // convolution's entry, whose key differs: it is rejected and recomputed on the next load.)
  MidRead m{MidRead::Replace, dir.file(dir.files()[1])};
  std::vector<Floats> out;
  {
    ReadHook hook(&m);
    Session s;
    out = init_and_run(s, g_, cache_options(dir.path()));
    EXPECT_GE(s.summary().weights_from_cache, 1u);
  }
  EXPECT_GE(m.calls, 1);
  EXPECT_TRUE(close(out, want_));
  LogCapture log;
  Session again;
  EXPECT_TRUE(close(init_and_run(again, g_, cache_options(dir.path())), want_));
  EXPECT_TRUE(any_contains(log.warnings(), "recomputing"))
      << ::testing::PrintToString(log.warnings());
}

TEST_F(OnednnDiskFault, EntryRewrittenInPlaceWhileReadIsRecomputed) {
  TempDir dir;
  {
    Session cold;
    init_and_run(cold, g_, cache_options(dir.path()));
  }
  MidRead m{MidRead::Rewrite, ""};
  LogCapture log;
  {
    ReadHook hook(&m);
    Session s;
    EXPECT_TRUE(close(init_and_run(s, g_, cache_options(dir.path())), want_));
    EXPECT_EQ(s.summary().weights_from_cache, 0u);
  }
  EXPECT_EQ(m.calls, 2);
  EXPECT_EQ(log.warnings().size(), 2u) << ::testing::PrintToString(log.warnings());
  for (const std::string& w : log.warnings()) {
    EXPECT_NE(w.find("cache entry unusable"), std::string::npos) << w;
  }
}

// cache_max_mb: least recently used entries are removed after a write, until the entries fit.
// Three single convolutions A, B, C whose entries are each between 1 and 2 MiB, under a 4 MiB
// bound: after A and B are written and A is read again, writing C removes B.
TEST_F(OnednnDiskFault, CacheMaxMbRemovesTheLeastRecentlyUsed) {
  auto conv = [](int64_t channels, int seed) {
    backend_testing::ConvCfg c{1, channels, 8, 8, channels, 3, 3};
    c.pt = c.pl = c.pb = c.pr = 1;
    GraphCase g;
    g.seed = seed;
    g.output(backend_testing::add_conv(g, g.input({1, channels, 8, 8}), c));
    return g;
  };
  const GraphCase a = conv(160, 1), b = conv(160, 2), c = conv(160, 3);
  TempDir dir;
  LoadBackendOptionsMap load = cache_options(dir.path());
  ASSERT_TRUE(load.set("onednn", kCacheMaxMb, int64_t{4}).is_ok());
  // Runs `g`; how many weights came from the cache, and the entry files it added.
  std::vector<std::string> seen;
  auto load_and_run = [&](const GraphCase& g, size_t* from_cache) {
    Session s;
    RunOptions o;
    o.load = &load;
    ASSERT_TRUE(s.init(g, o).is_ok());
    std::vector<Floats> out;
    ASSERT_TRUE(s.run(random_inputs(g, 3), &out).is_ok());
    auto want = run_portable(g, random_inputs(g, 3));
    ASSERT_TRUE(want.ok());
    EXPECT_TRUE(close(out, *want));
    *from_cache = s.summary().weights_from_cache;
  };
  // Entries get distinct, increasing modification times whatever the clock's granularity.
  auto age_all = [&](long seconds) {
    for (const std::string& f : dir.files()) {
      struct stat st;
      ASSERT_EQ(::stat(dir.file(f).c_str(), &st), 0);
      timespec times[2] = {st.st_atim, st.st_mtim};
      times[0].tv_sec -= seconds;
      times[1].tv_sec -= seconds;
      ASSERT_EQ(::utimensat(AT_FDCWD, dir.file(f).c_str(), times, 0), 0);
    }
  };
  size_t hits = 0;
  load_and_run(a, &hits);
  ASSERT_EQ(dir.files().size(), 1u);
  const std::string entry_a = dir.files()[0];
  struct stat st;
  ASSERT_EQ(::stat(dir.file(entry_a).c_str(), &st), 0);
  ASSERT_GT(st.st_size, 1 << 20);
  ASSERT_LT(st.st_size, 2 << 20);
  age_all(100);
  load_and_run(b, &hits);
  ASSERT_EQ(dir.files().size(), 2u);
  std::string entry_b = dir.files()[0] == entry_a ? dir.files()[1] : dir.files()[0];
  age_all(100);
  load_and_run(a, &hits);  // A is used again: now the most recent
  EXPECT_EQ(hits, 1u);
  load_and_run(c, &hits);  // 3 entries do not fit in 4 MiB: B, the least recently used, goes
  EXPECT_EQ(hits, 0u);
  std::vector<std::string> files = dir.files();
  EXPECT_EQ(files.size(), 2u) << ::testing::PrintToString(files);
  EXPECT_NE(std::find(files.begin(), files.end(), entry_a), files.end());
  EXPECT_EQ(std::find(files.begin(), files.end(), entry_b), files.end());
  load_and_run(a, &hits);
  EXPECT_EQ(hits, 1u);
  load_and_run(b, &hits);
  EXPECT_EQ(hits, 0u);  // recomputed (and written again)
}

// Two processes building the same entries at once: this binary again, running the child test
// below, both released at the same moment.
TEST_F(OnednnDiskFault, TwoProcessesBuildingTheSameEntries) {
  TempDir dir;
  const std::string go = dir.path() + ".go";
  std::string exe(4096, '\0');
  const ssize_t n = ::readlink("/proc/self/exe", exe.data(), exe.size() - 1);
  ASSERT_GT(n, 0);
  exe.resize(static_cast<size_t>(n));
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  env_strings.push_back("TESSERA_TEST_CACHE_DIR=" + dir.path());
  env_strings.push_back("TESSERA_TEST_GO_FILE=" + go);
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string filter = "--gtest_filter=OnednnDiskFault.DISABLED_ChildBuildsTheEntries";
  std::string disabled = "--gtest_also_run_disabled_tests";
  char* argv[] = {exe.data(), filter.data(), disabled.data(), nullptr};
  pid_t pids[2];
  for (pid_t& pid : pids) {
    ASSERT_EQ(::posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv, envp.data()), 0);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // both past their start-up
  write_bytes(go, {'1'});
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  std::remove(go.c_str());
  // Exactly the two entries, no temporary file left, and both valid.
  std::vector<std::string> files = dir.files();
  EXPECT_EQ(files.size(), 2u) << ::testing::PrintToString(files);
  for (const std::string& f : files) EXPECT_NE(f.find(".dnnlw"), std::string::npos) << f;
  LogCapture log;
  Session warm;
  EXPECT_TRUE(close(init_and_run(warm, g_, cache_options(dir.path())), want_));
  EXPECT_EQ(warm.summary().weights_from_cache, 2u);
  EXPECT_TRUE(log.warnings().empty()) << ::testing::PrintToString(log.warnings());
}

// Run only by the test above, in a child process.
TEST_F(OnednnDiskFault, DISABLED_ChildBuildsTheEntries) {
  const char* dir = std::getenv("TESSERA_TEST_CACHE_DIR");
  const char* go = std::getenv("TESSERA_TEST_GO_FILE");
  ASSERT_TRUE(dir != nullptr && go != nullptr);
  for (int i = 0; i < 1000 && ::access(go, F_OK) != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (int round = 0; round < 3; ++round) {
    Session s;
    EXPECT_TRUE(close(init_and_run(s, g_, cache_options(dir)), want_));
  }
}

}  // namespace
}  // namespace tessera::onednn::testing
