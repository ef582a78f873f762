// Disk faults under the integrity-checked files every on-disk cache uses (integrity_file.h),
// injected through its seam: a full disk mid-file, a directory that refuses the new file, a file
// replaced or rewritten while it is read; and two processes writing and reading the same
// entries at once. A failed write leaves the previous entry (or none) and no temporary file; a
// read returns a whole, checked file or an error, never a mix.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tessera/backend/integrity_file.h"

namespace tessera {
namespace {

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') out.emplace_back(e->d_name);
    }
    ::closedir(d);
  }
  return out;
}

struct WriteFault {
  WriteFault(int error, uint64_t after) { set_integrity_write_fault(error, after); }
  ~WriteFault() { set_integrity_write_fault(0); }
};

class IntegrityFault : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "integrity_fault_" + std::to_string(::getpid());
    ASSERT_EQ(::mkdir(dir_.c_str(), 0755), 0) << std::strerror(errno);
    path_ = dir_ + "/entry.bin";
    std::memcpy(key_.magic, "TSTEST01", 8);
    key_.device = 7;
    key_.content = 9;
  }
  void TearDown() override {
    for (const std::string& f : list_dir(dir_)) std::remove((dir_ + "/" + f).c_str());
    ::rmdir(dir_.c_str());
  }
  std::string dir_, path_;
  IntegrityKey key_{};
};

TEST_F(IntegrityFault, FullDiskMidFileKeepsThePreviousEntryAndNoTemporaryFile) {
  const std::vector<uint8_t> old_payload(1000, 1), new_payload(100000, 2);
  ASSERT_TRUE(write_integrity_file(path_, key_, old_payload).is_ok());
  for (uint64_t after : {1, 47, 48, 4096, 99999}) {
    WriteFault full(ENOSPC, after);
    Status st = write_integrity_file(path_, key_, new_payload);
    ASSERT_FALSE(st.is_ok()) << after;
    EXPECT_EQ(st.code(), Error::AccessFailed);
    EXPECT_EQ(std::string(st.message()), "cannot write '" + path_ + "': No space left on device");
    EXPECT_EQ(list_dir(dir_), std::vector<std::string>{"entry.bin"});
    auto read = read_integrity_file(path_, key_);
    ASSERT_TRUE(read.ok()) << read.status().message();
    EXPECT_EQ(*read, old_payload);
  }
  ASSERT_TRUE(write_integrity_file(path_, key_, new_payload).is_ok());
  EXPECT_EQ(*read_integrity_file(path_, key_), new_payload);
}

TEST_F(IntegrityFault, DirectoryRefusingTheFileIsAnAccessError) {
  {
    WriteFault read_only(EROFS, 0);
    Status st = write_integrity_file(path_, key_, {1, 2, 3});
    ASSERT_FALSE(st.is_ok());
    EXPECT_EQ(st.code(), Error::AccessFailed);
    EXPECT_NE(std::string(st.message()).find("Read-only file system"), std::string::npos)
        << st.message();
  }
  EXPECT_TRUE(list_dir(dir_).empty());
  EXPECT_EQ(read_integrity_file(path_, key_).status().code(), Error::NotFound);
}

struct MidRead {
  std::string replacement;  // renamed over the file being read, when set
  bool rewrite_in_place = false;
  int calls = 0;
};

void act_mid_read(const char* path, void* context) {
  auto* m = static_cast<MidRead*>(context);
  ++m->calls;
  if (!m->replacement.empty()) std::rename(m->replacement.c_str(), path);
  if (m->rewrite_in_place) {
    std::FILE* f = std::fopen(path, "r+b");
    if (f == nullptr) return;
    // A payload byte past the first 4 KiB (which the reader's stdio buffer may already hold)
    // changes under the reader: it reads a mix of the old and new file.
    std::fseek(f, 4900, SEEK_SET);
    std::fputc(0x55, f);
    std::fclose(f);
  }
}

struct ReadHook {
  explicit ReadHook(MidRead* m) { set_integrity_read_hook(act_mid_read, m); }
  ~ReadHook() { set_integrity_read_hook(nullptr, nullptr); }
};

TEST_F(IntegrityFault, FileReplacedWhileReadIsReadWholeFromTheFileOpened) {
  const std::vector<uint8_t> first(5000, 1), second(7000, 2);
  ASSERT_TRUE(write_integrity_file(path_, key_, first).is_ok());
  const std::string other = dir_ + "/other.bin";
  ASSERT_TRUE(write_integrity_file(other, key_, second).is_ok());
  MidRead m{other};
  Result<std::vector<uint8_t>> read = Status(Error::Internal, "not read");
  {
    ReadHook hook(&m);
    read = read_integrity_file(path_, key_);
  }
  EXPECT_EQ(m.calls, 1);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(*read, first);                               // the file it opened, not a mix
  EXPECT_EQ(*read_integrity_file(path_, key_), second);  // the name now holds the replacement
}

TEST_F(IntegrityFault, FileRewrittenInPlaceWhileReadIsRejected) {
  ASSERT_TRUE(write_integrity_file(path_, key_, std::vector<uint8_t>(5000, 1)).is_ok());
  MidRead m;
  m.rewrite_in_place = true;
  Result<std::vector<uint8_t>> read = Status(Error::Internal, "not read");
  {
    ReadHook hook(&m);
    read = read_integrity_file(path_, key_);
  }
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), Error::InvalidProgram);
  EXPECT_NE(std::string(read.status().message()).find("checksum mismatch"), std::string::npos);
}

// Two processes (fork) each write the same three entries 100 times, with different payloads per
// process and round, and read them back in between: every read is NotFound before the first
// write or a whole payload one of them wrote; in the end each entry is valid and no temporary
// file is left.
TEST_F(IntegrityFault, TwoProcessesWritingAndReadingTheSameEntries) {
  constexpr int kRounds = 100;
  const std::string go = dir_ + "/go";
  pid_t pids[2];
  for (int p = 0; p < 2; ++p) {
    pids[p] = ::fork();
    ASSERT_GE(pids[p], 0);
    if (pids[p] == 0) {
      while (::access(go.c_str(), F_OK) != 0) ::usleep(1000);
      int bad = 0;
      for (int round = 0; round < kRounds; ++round) {
        for (int e = 0; e < 3; ++e) {
          const std::string path = dir_ + "/e" + std::to_string(e);
          // Payload: 3000 + 100 * e bytes of one value that says who wrote it (1..2*kRounds).
          const uint8_t mark = static_cast<uint8_t>(1 + (p * kRounds + round) % 250);
          if (!write_integrity_file(path, key_, std::vector<uint8_t>(3000 + 100 * e, mark))
                   .is_ok()) {
            ++bad;
          }
          auto read = read_integrity_file(path, key_);
          if (!read.ok() || read->size() != static_cast<size_t>(3000 + 100 * e) ||
              std::count(read->begin(), read->end(), (*read)[0]) !=
                  static_cast<long>(read->size())) {
            ++bad;
          }
        }
      }
      ::_exit(bad == 0 ? 0 : 1);
    }
  }
  std::FILE* f = std::fopen(go.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  std::remove(go.c_str());
  std::vector<std::string> files = list_dir(dir_);
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"e0", "e1", "e2"}));
  for (int e = 0; e < 3; ++e) {
    auto read = read_integrity_file(dir_ + "/e" + std::to_string(e), key_);
    ASSERT_TRUE(read.ok()) << read.status().message();
    EXPECT_EQ(read->size(), static_cast<size_t>(3000 + 100 * e));
  }
}

}  // namespace
}  // namespace tessera
