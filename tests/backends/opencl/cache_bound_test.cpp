// cache_max_mb bounds the program cache: after an entry is written, the least recently used
// entries go until the cache's .clbin files fit, the new entry staying; other files are kept.
#include <fcntl.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "harness.h"
#include "tessera/backends/opencl/options.h"
#include "test_util.h"

namespace tessera::opencl::testing {
namespace {

// A file of `bytes` bytes last modified `age` seconds ago.
void add_file(const std::string& path, size_t bytes, long age) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::vector<char> data(bytes, 'x');
  std::fwrite(data.data(), 1, data.size(), f);
  std::fclose(f);
  timespec now;
  ::clock_gettime(CLOCK_REALTIME, &now);
  timespec times[2] = {now, now};
  times[0].tv_sec -= age;
  times[1].tv_sec -= age;
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

TEST(OpenClCacheBound, LeastRecentlyUsedEntriesGoTheNewOneStays) {
  TempDir dir;
  // Two stale entries of 600 KiB under a 1 MiB bound (already above it), and a file that is
  // not the cache's.
  add_file(dir.file("00000000000000aa.clbin"), 600 << 10, 200);
  add_file(dir.file("00000000000000bb.clbin"), 600 << 10, 100);
  add_file(dir.file("notes.txt"), 2 << 20, 300);
  LoadBackendOptionsMap load;
  ASSERT_TRUE(load.set("opencl", kCacheDir, dir.path()).is_ok());
  ASSERT_TRUE(load.set("opencl", kCacheMaxMb, int64_t{1}).is_ok());
  GraphCase g = small_net();
  RunOptions o;
  o.load = &load;
  {
    Session cold;
    ASSERT_TRUE(cold.init(g, o).is_ok());
    ASSERT_TRUE(cold.summary().program.cache_written);
  }
  std::vector<std::string> files = dir.files();
  auto has = [&](const char* name) {
    return std::find(files.begin(), files.end(), name) != files.end();
  };
  EXPECT_FALSE(has("00000000000000aa.clbin")) << ::testing::PrintToString(files);  // oldest
  EXPECT_TRUE(has("notes.txt"));
  uint64_t total = 0;
  for (const std::string& f : files) {
    struct stat st;
    ASSERT_EQ(::stat(dir.file(f).c_str(), &st), 0);
    if (f.size() > 6 && f.substr(f.size() - 6) == ".clbin") total += st.st_size;
  }
  EXPECT_LE(total, 1u << 20);
  Session warm;  // the entry just written was kept
  ASSERT_TRUE(warm.init(g, o).is_ok());
  EXPECT_TRUE(warm.summary().program.from_cache);
}

}  // namespace
}  // namespace tessera::opencl::testing
