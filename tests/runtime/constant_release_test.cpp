// Releasing program constants (DataLoader::release, Program::release_constant,
// BackendInitContext::release_constant): a mapped program drops the pages of the constants a
// backend copied, and their bytes stay readable and unchanged; a caller's buffer is never touched.
// And the other way (DataLoader::will_read, Program::constant_to_read): a backend's init gets
// its constants mapped at once.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tessera/backend/registry.h"
#include "tessera/backend/testing/stub_backend.h"
#include "tessera/runtime/data_loader.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program.h"
#include "tests/testing/test_programs.h"

namespace tessera {
namespace {

constexpr size_t kConstantBytes = size_t{1} << 20;

// Resident KiB of the mapping that contains `p`, from /proc/self/smaps (-1: not found).
long resident_kib(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
      inside = at >= lo && at < hi;
      continue;
    }
    long kib = 0;
    if (inside && std::sscanf(line.c_str(), "Rss: %ld kB", &kib) == 1) return kib;
  }
  return -1;
}

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>((i * 131u) ^ (i >> 9));
  return v;
}

// A one-delegate program ("stub_release#0") with a 1 MiB constant, index 0.
ir::ProgramBuilder program_with_constant(const std::vector<uint8_t>& bytes) {
  ir::ProgramBuilder pb = testing::delegate_chain_program({"stub_release"});
  EXPECT_EQ(pb.add_constant(bytes.data(), bytes.size()), 0);
  return pb;
}

// Writes `bytes` to a file `name` in the test's temporary directory; returns its path.
std::string write_temp_file(const char* name, const std::vector<uint8_t>& bytes) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return path;
}

// Reads a byte of every page, so that the whole range is mapped in.
void touch(Span<const uint8_t> bytes) {
  volatile uint8_t sink = 0;
  for (size_t i = 0; i < bytes.size(); i += 512) sink = static_cast<uint8_t>(sink + bytes[i]);
}

class ConstantRelease : public ::testing::Test {
 protected:
  void SetUp() override {
    stub_ = new testing::StubBackend();
    stub_->on_init = [this](BackendInitContext& ctx, FreeableBuffer*,
                            Span<const CompileSpec>) -> Result<DelegateHandle*> {
      Result<Span<const uint8_t>> c = ctx.constant(0);
      if (!c.ok()) return c.status();
      copy_.assign(c->begin(), c->end());  // "packed": the delegate has its own copy now
      ctx.release_constant(0);
      ctx.release_constant(7);  // out of range: ignored
      return to_handle(&handle_target_);
    };
    stub_->on_execute = [](BackendExecutionContext&, DelegateHandle*, Span<EValue*> args) {
      std::memcpy(args[1]->to_tensor().data(), args[0]->to_tensor().data(),
                  args[0]->to_tensor().nbytes());
      return Status::ok();
    };
    ASSERT_TRUE(register_backend("stub_release", std::unique_ptr<BackendInterface>(stub_)).is_ok());
  }
  void TearDown() override {
    program_.reset();  // before its loader
    loader_.reset();
    if (!path_.empty()) std::remove(path_.c_str());
    (void)unregister_backend("stub_release");
  }

  // Writes program_with_constant(bytes) to the file `name` in the test's temporary directory
  // and loads it from a mapping (loader_, program_; the file goes in TearDown).
  void load_mapped(const char* name, const std::vector<uint8_t>& bytes) {
    path_ = ::testing::TempDir() + "/" + name;
    ASSERT_TRUE(program_with_constant(bytes).write(path_).is_ok());
    auto loader = MmapDataLoader::from(path_.c_str());
    ASSERT_TRUE(loader.ok()) << loader.status().message();
    loader_ = std::make_unique<MmapDataLoader>(std::move(*loader));
    auto program = Program::load(loader_.get());
    ASSERT_TRUE(program.ok()) << program.status().message();
    program_ = std::make_unique<Program>(std::move(*program));
  }

  std::string path_;
  std::unique_ptr<MmapDataLoader> loader_;
  std::unique_ptr<Program> program_;
  testing::StubBackend* stub_ = nullptr;
  std::vector<uint8_t> copy_;
  int handle_target_ = 0;
};

TEST_F(ConstantRelease, AMappedProgramDropsTheReleasedConstantsPagesAndKeepsItsBytes) {
  const std::vector<uint8_t> want = pattern(kConstantBytes);
  ASSERT_NO_FATAL_FAILURE(load_mapped("tessera_constant_release.tsr", want));
  const Span<const uint8_t> c = program_->constant(0);
  ASSERT_EQ(c.size(), kConstantBytes);
  touch(c);
  const long before = resident_kib(c.data());
  ASSERT_GE(before, static_cast<long>(kConstantBytes >> 10));

  auto method = program_->load_method("forward");
  ASSERT_TRUE(method.ok()) << method.status().message();
  EXPECT_EQ(copy_, want);
  const long after = resident_kib(c.data());
  // Every whole page of the constant went; the mapping's other pages (the FlatBuffer, at most
  // one partial page at each end of the constant) may stay.
  const long page_kib = ::sysconf(_SC_PAGESIZE) / 1024;
  EXPECT_LE(after, before - static_cast<long>(kConstantBytes >> 10) + 2 * page_kib)
      << "resident before " << before << " KiB, after " << after << " KiB";
  // Still readable, unchanged: read again from the file.
  EXPECT_EQ(std::memcmp(c.data(), want.data(), want.size()), 0);
}

TEST_F(ConstantRelease, ACallersBufferIsNeverTouched) {
  const std::vector<uint8_t> want = pattern(kConstantBytes);
  auto bytes = program_with_constant(want).build();
  ASSERT_TRUE(bytes.ok());
  testing::AlignedBuffer buffer(*bytes);
  BufferDataLoader loader(buffer.data(), buffer.size());
  auto program = Program::load(&loader);
  ASSERT_TRUE(program.ok()) << program.status().message();
  auto method = program->load_method("forward");
  ASSERT_TRUE(method.ok()) << method.status().message();
  EXPECT_EQ(copy_, want);
  // madvise(MADV_DONTNEED) on anonymous memory would have zeroed it.
  const Span<const uint8_t> c = program->constant(0);
  EXPECT_EQ(std::memcmp(c.data(), want.data(), want.size()), 0);
}

TEST(MmapDataLoaderRelease, OnlyWholePagesInsideTheMappingGo) {
  const long page = ::sysconf(_SC_PAGESIZE);
  const std::vector<uint8_t> want = pattern(static_cast<size_t>(8 * page));
  const std::string path = write_temp_file("tessera_loader_release.bin", want);
  auto loader = MmapDataLoader::from(path.c_str());
  ASSERT_TRUE(loader.ok()) << loader.status().message();
  const Span<const uint8_t> all = loader->data();
  touch(all);
  for (size_t i = 0; i < all.size(); i += 64) ASSERT_EQ(all[i], want[i]);
  const long full = resident_kib(all.data());
  ASSERT_EQ(full, 8 * page / 1024);
  // Half a page to 2.5 pages: only page 1 is whole inside it.
  loader->release(all.subspan(static_cast<size_t>(page / 2), static_cast<size_t>(2 * page)));
  EXPECT_EQ(resident_kib(all.data()), 7 * page / 1024);
  // Ranges not inside the mapping, or empty, change nothing.
  uint8_t elsewhere[64] = {};
  loader->release(Span<const uint8_t>(elsewhere, sizeof elsewhere));
  loader->release(all.subspan(0, 0));
  loader->release(Span<const uint8_t>(all.data() + page, all.size()));  // runs past the end
  EXPECT_EQ(resident_kib(all.data()), 7 * page / 1024);
  loader->release(all);
  EXPECT_EQ(resident_kib(all.data()), 0);
  EXPECT_EQ(std::memcmp(all.data(), want.data(), want.size()), 0);
  std::remove(path.c_str());
}

// Whether this kernel maps a file's pages on madvise(MADV_POPULATE_READ) (Linux 5.14 on).
bool kernel_populates(Span<const uint8_t> mapped) {
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto at = reinterpret_cast<uintptr_t>(mapped.data()) / page * page;
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
  return ::madvise(reinterpret_cast<void*>(at), page, MADV_POPULATE_READ) == 0;
}

// will_read() maps a range of 64 KiB or more at once; shorter ranges, ranges outside the mapping
// and a caller's buffer are left alone.
TEST(MmapDataLoaderWillRead, MapsALongRangeAtOnceAndLeavesTheRest) {
  const long page = ::sysconf(_SC_PAGESIZE);
  const std::vector<uint8_t> want = pattern(kConstantBytes + 100);
  const std::string path = write_temp_file("tessera_loader_will_read.bin", want);
  auto loader = MmapDataLoader::from(path.c_str());
  ASSERT_TRUE(loader.ok()) << loader.status().message();
  const Span<const uint8_t> all = loader->data();
  ASSERT_EQ(resident_kib(all.data()), 0);
  loader->will_read(all.subspan(100, MmapDataLoader::kWillReadMinBytes - 1));  // too short
  uint8_t elsewhere[128 << 10] = {};
  loader->will_read(Span<const uint8_t>(elsewhere, sizeof elsewhere));    // not the mapping's
  loader->will_read(Span<const uint8_t>(all.data() + page, all.size()));  // runs past the end
  EXPECT_EQ(resident_kib(all.data()), 0);
  if (!kernel_populates(all.subspan(static_cast<size_t>(2 * page)))) {
    GTEST_SKIP() << "this kernel has no MADV_POPULATE_READ (Linux 5.14): a read-ahead hint only";
  }
  loader->release(all);
  ASSERT_EQ(resident_kib(all.data()), 0);
  // 100 bytes into the first page to 100 bytes into the last: every page of it, none read yet.
  loader->will_read(all.subspan(100, kConstantBytes));
  EXPECT_EQ(resident_kib(all.data()), static_cast<long>((kConstantBytes + page) >> 10));
  EXPECT_EQ(std::memcmp(all.data(), want.data(), want.size()), 0);
  std::remove(path.c_str());
}

// A backend's init gets its constants mapped at once (Program::constant_to_read): the 1 MiB
// constant is resident when the init sees it, before the init reads a byte of it.
TEST_F(ConstantRelease, AnInitGetsItsConstantsMappedAtOnce) {
  const std::vector<uint8_t> want = pattern(kConstantBytes);
  ASSERT_NO_FATAL_FAILURE(load_mapped("tessera_constant_will_read.tsr", want));
  const Span<const uint8_t> c = program_->constant(0);
  if (!kernel_populates(c)) GTEST_SKIP() << "this kernel has no MADV_POPULATE_READ (Linux 5.14)";
  program_->release_constant(0);
  long resident_at_init = -1;
  stub_->on_init = [&](BackendInitContext& ctx, FreeableBuffer*,
                       Span<const CompileSpec>) -> Result<DelegateHandle*> {
    Result<Span<const uint8_t>> got = ctx.constant(0);
    if (!got.ok()) return got.status();
    resident_at_init = resident_kib(got->data());
    copy_.assign(got->begin(), got->end());
    return to_handle(&handle_target_);
  };
  ASSERT_LT(resident_kib(c.data()), static_cast<long>(kConstantBytes >> 10));
  auto method = program_->load_method("forward");
  ASSERT_TRUE(method.ok()) << method.status().message();
  EXPECT_GE(resident_at_init, static_cast<long>(kConstantBytes >> 10));
  EXPECT_EQ(copy_, want);
}

// read() copies from the file without mapping a page in; past the end it answers false.
TEST(MmapDataLoaderRead, CopiesWithoutMappingAndRefusesRangesPastTheEnd) {
  const long page = ::sysconf(_SC_PAGESIZE);
  const std::vector<uint8_t> want = pattern(static_cast<size_t>(8 * page) + 100);
  const std::string path = write_temp_file("tessera_loader_read.bin", want);
  auto loader = MmapDataLoader::from(path.c_str());
  ASSERT_TRUE(loader.ok()) << loader.status().message();
  const Span<const uint8_t> all = loader->data();
  ASSERT_EQ(all.size(), want.size());
  std::vector<uint8_t> got(want.size(), 0);
  ASSERT_TRUE(loader->read(0, Span<uint8_t>(got)));
  EXPECT_EQ(got, want);
  EXPECT_EQ(resident_kib(all.data()), 0);  // nothing of the mapping was touched
  std::vector<uint8_t> tail(150, 0);       // 50 bytes into the last page's 100, then past the end
  EXPECT_TRUE(loader->read(want.size() - 50, Span<uint8_t>(tail.data(), 50)));
  EXPECT_EQ(std::memcmp(tail.data(), want.data() + want.size() - 50, 50), 0);
  EXPECT_FALSE(loader->read(want.size() - 50, Span<uint8_t>(tail)));
  EXPECT_FALSE(loader->read(want.size() + 1, Span<uint8_t>(tail.data(), 0)));
  EXPECT_TRUE(loader->read(want.size(), Span<uint8_t>(tail.data(), 0)));
  // A loader moved from keeps nothing to read; the one moved to reads the file.
  MmapDataLoader moved = std::move(*loader);
  EXPECT_FALSE(loader->read(0, Span<uint8_t>(tail.data(), 1)));  // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(moved.read(0, Span<uint8_t>(tail.data(), 1)));
  EXPECT_EQ(tail[0], want[0]);
  // A caller's buffer has no file behind it: read() declines, and the caller reads data().
  BufferDataLoader buffer(want.data(), want.size());
  EXPECT_FALSE(buffer.read(0, Span<uint8_t>(tail.data(), 1)));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tessera
