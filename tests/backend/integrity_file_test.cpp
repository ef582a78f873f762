// The integrity-checked file layout backends persist (tessera/backend/integrity_file.h): round
// trip, and what a damaged file gets, including the input the cache_files fuzz target found
// (fuzz/corpus/cache_files/regression-*).
#include "tessera/backend/integrity_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tests/testing/fuzz_inputs.h"

namespace tessera {
namespace {

class IntegrityFile : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "integrity_test_" + std::to_string(::getpid()) + ".bin";
    std::memcpy(key_.magic, "TSCLBIN1", 8);
    key_.device = 1;
    key_.content = 2;
  }
  void TearDown() override { std::remove(path_.c_str()); }
  void write_raw(const std::vector<uint8_t>& bytes) {
    std::FILE* f = std::fopen(path_.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
    std::fclose(f);
  }
  std::string path_;
  IntegrityKey key_{};
};

TEST_F(IntegrityFile, RoundTrip) {
  const std::vector<uint8_t> payload = {1, 2, 3, 4, 5};
  ASSERT_TRUE(write_integrity_file(path_, key_, payload).is_ok());
  Result<std::vector<uint8_t>> back = read_integrity_file(path_, key_);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, payload);
}

// read_integrity_file_into: the payload straight into the caller's memory, with the same
// checks; a payload of another size is refused before anything is read.
TEST_F(IntegrityFile, ReadIntoTheCallersMemory) {
  const std::vector<uint8_t> payload = {1, 2, 3, 4, 5};
  ASSERT_TRUE(write_integrity_file(path_, key_, payload).is_ok());
  uint8_t dst[5] = {};
  const Status ok = read_integrity_file_into(path_, key_, dst, sizeof dst);
  ASSERT_TRUE(ok.is_ok()) << ok.message();
  EXPECT_EQ(std::vector<uint8_t>(dst, dst + 5), payload);

  uint8_t other[4] = {9, 9, 9, 9};
  const Status size = read_integrity_file_into(path_, key_, other, sizeof other);
  EXPECT_EQ(size.code(), Error::DelegateInvalidCompatibility);
  EXPECT_NE(std::string(size.message()).find("holds a 5-byte payload, expected 4"),
            std::string::npos)
      << size.message();
  EXPECT_EQ(std::vector<uint8_t>(other, other + 4), std::vector<uint8_t>(4, 9));  // untouched

  IntegrityKey stale = key_;
  stale.content = 3;
  EXPECT_EQ(read_integrity_file_into(path_, stale, dst, sizeof dst).code(),
            Error::DelegateInvalidCompatibility);
  EXPECT_EQ(read_integrity_file_into(path_ + ".none", key_, dst, sizeof dst).code(),
            Error::NotFound);

  // A flipped payload byte, then a file cut short and one made longer: each an error.
  std::vector<uint8_t> file(kIntegrityHeaderSize + payload.size());
  {
    std::FILE* f = std::fopen(path_.c_str(), "rb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fread(file.data(), 1, file.size(), f), file.size());
    std::fclose(f);
  }
  std::vector<uint8_t> flipped = file;
  flipped.back() ^= 0x10;
  write_raw(flipped);
  const Status corrupt = read_integrity_file_into(path_, key_, dst, sizeof dst);
  EXPECT_EQ(corrupt.code(), Error::InvalidProgram);
  EXPECT_NE(std::string(corrupt.message()).find("checksum mismatch"), std::string::npos);
  write_raw(std::vector<uint8_t>(file.begin(), file.end() - 2));
  const Status cut = read_integrity_file_into(path_, key_, dst, sizeof dst);
  EXPECT_EQ(cut.code(), Error::Truncated);
  EXPECT_NE(std::string(cut.message()).find("holds fewer payload bytes"), std::string::npos);
  std::vector<uint8_t> longer = file;
  longer.push_back(0);
  write_raw(longer);
  const Status more = read_integrity_file_into(path_, key_, dst, sizeof dst);
  EXPECT_EQ(more.code(), Error::Truncated);
  EXPECT_NE(std::string(more.message()).find("holds more payload bytes"), std::string::npos);
}

// Found by the cache_files fuzz target: a 62-byte program cache entry whose header announced a
// 4 GB payload made the reader allocate 4 GB before noticing the file was short (an announced
// size up to 2^40 was allocated, failing with std::bad_alloc on most machines). The payload is
// now allocated only for what the file holds.
TEST_F(IntegrityFile, FuzzRegressionSizeFieldLargerThanTheFileAllocatesNothing) {
  const std::vector<uint8_t> input =
      testing::read_fuzz_input("cache_files", "regression-size-field-larger-than-file");
  ASSERT_GT(input.size(), 1u);
  ASSERT_EQ(input[0], 0);  // the target's mode byte: a program cache entry, header as is
  const std::vector<uint8_t> file(input.begin() + 1, input.end());
  write_raw(file);
  std::memcpy(&key_.device, file.data() + 16, 8);  // the key it was found with
  std::memcpy(&key_.content, file.data() + 24, 8);
  Result<std::vector<uint8_t>> entry = read_integrity_file(path_, key_);
  ASSERT_FALSE(entry.ok());
  EXPECT_EQ(entry.error(), Error::Truncated) << entry.status().message();
  EXPECT_NE(std::string(entry.status().message()).find("holds fewer payload bytes"),
            std::string::npos)
      << entry.status().message();

  // A well-formed header announcing almost 2^40 bytes over a 3-byte payload.
  ASSERT_TRUE(write_integrity_file(path_, key_, {7, 8, 9}).is_ok());
  std::FILE* f = std::fopen(path_.c_str(), "r+b");
  ASSERT_NE(f, nullptr);
  const uint64_t huge = (uint64_t{1} << 40) - 2;
  std::fseek(f, 32, SEEK_SET);
  std::fwrite(&huge, 8, 1, f);
  std::fclose(f);
  Result<std::vector<uint8_t>> huge_entry = read_integrity_file(path_, key_);
  ASSERT_FALSE(huge_entry.ok());
  EXPECT_EQ(huge_entry.error(), Error::Truncated);
  EXPECT_NE(std::string(huge_entry.status().message()).find("holds fewer payload bytes"),
            std::string::npos)
      << huge_entry.status().message();
}

}  // namespace
}  // namespace tessera
