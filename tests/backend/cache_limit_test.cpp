// The size bound of cache directories (tessera/backend/cache_limit.h): least recently used
// entries (oldest modification time; reading one touches it) are removed first, only files
// with the cache's suffix count, and nothing happens under the bound.
#include "tessera/backend/cache_limit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tessera {
namespace {

class CacheLimit : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "cache_limit_" + std::to_string(::getpid());
    ASSERT_EQ(::mkdir(dir_.c_str(), 0755), 0);
  }
  void TearDown() override {
    for (const std::string& f : files()) std::remove((dir_ + "/" + f).c_str());
    ::rmdir(dir_.c_str());
  }
  // A file of `bytes` bytes last used `age` seconds ago.
  void add(const std::string& name, size_t bytes, long age) {
    const std::string path = dir_ + "/" + name;
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
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    if (DIR* d = ::opendir(dir_.c_str())) {
      while (dirent* e = ::readdir(d)) {
        if (e->d_name[0] != '.') out.emplace_back(e->d_name);
      }
      ::closedir(d);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  std::string dir_;
};

TEST_F(CacheLimit, LeastRecentlyUsedGoFirstUntilTheEntriesFit) {
  add("a.entry", 1000, 400);
  add("b.entry", 1000, 300);
  add("c.entry", 1000, 200);
  add("d.entry", 1000, 100);
  CacheTrim trim = trim_cache_dir(dir_, ".entry", 2500);
  EXPECT_EQ(trim.bytes_before, 4000u);
  EXPECT_EQ(trim.bytes_after, 2000u);
  EXPECT_EQ(trim.removed, 2u);
  EXPECT_EQ(trim.failed, 0u);
  EXPECT_EQ(files(), (std::vector<std::string>{"c.entry", "d.entry"}));
}

TEST_F(CacheLimit, ATouchedEntryIsKept) {
  add("a.entry", 1000, 400);
  add("b.entry", 1000, 300);
  touch_cache_entry(dir_ + "/a.entry");  // read just now
  trim_cache_dir(dir_, ".entry", 1500);
  EXPECT_EQ(files(), std::vector<std::string>{"a.entry"});
}

TEST_F(CacheLimit, OnlyTheCachesEntriesCountAndNothingHappensUnderTheBound) {
  add("a.entry", 1000, 400);
  add("a.entry.tmp.123.0", 5000, 500);  // a writer in progress
  add("notes.txt", 5000, 500);
  CacheTrim trim = trim_cache_dir(dir_, ".entry", 1000);
  EXPECT_EQ(trim.bytes_before, 1000u);
  EXPECT_EQ(trim.removed, 0u);
  EXPECT_EQ(files().size(), 3u);
  trim = trim_cache_dir(dir_, ".entry", 0);  // everything of the cache goes, nothing else
  EXPECT_EQ(trim.removed, 1u);
  EXPECT_EQ(files(), (std::vector<std::string>{"a.entry.tmp.123.0", "notes.txt"}));
  EXPECT_EQ(trim_cache_dir(dir_ + "/missing", ".entry", 0).removed, 0u);
}

TEST_F(CacheLimit, SeveralSuffixesCountAndWhatTheRemoverKeepsStaysCounted) {
  add("a.one", 1000, 400);
  add("b.two", 1000, 300);
  add("c.one", 1000, 200);
  add("d.other", 1000, 500);
  std::vector<std::string> asked;
  const CacheTrim trim = trim_cache_dir(dir_, {".one", ".two"}, 1000, [&](const std::string& p) {
    asked.push_back(p.substr(p.rfind('/') + 1));
    if (asked.back() == "a.one") return false;  // in use
    return std::remove(p.c_str()) == 0;
  });
  EXPECT_EQ(asked, (std::vector<std::string>{"a.one", "b.two", "c.one"}));  // oldest first
  EXPECT_EQ(trim.bytes_before, 3000u);
  EXPECT_EQ(trim.bytes_after, 1000u);  // a.one's, kept
  EXPECT_EQ(trim.removed, 2u);
  EXPECT_EQ(trim.failed, 1u);
  EXPECT_EQ(files(), (std::vector<std::string>{"a.one", "d.other"}));
}

}  // namespace
}  // namespace tessera
