// The .npy reader of the tools (tools/common/npy.h): round trips and malformed headers,
// including the inputs the npy_reader fuzz target found (fuzz/corpus/npy_reader/regression-*).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "tests/testing/fuzz_inputs.h"
#include "tools/common/npy.h"

namespace tessera::tools {
namespace {

std::vector<uint8_t> npy_with_header(const std::string& dict, size_t data_bytes) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::vector<uint8_t> bytes = {0x93,
                                'N',
                                'U',
                                'M',
                                'P',
                                'Y',
                                1,
                                0,
                                static_cast<uint8_t>(header.size()),
                                static_cast<uint8_t>(header.size() >> 8)};
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.resize(bytes.size() + data_bytes, 0);
  return bytes;
}

TEST(Npy, RoundTrip) {
  NpyArray a;
  a.dtype = ScalarType::Int32;
  a.shape = {2, 3};
  a.data.resize(24, 7);
  Result<NpyArray> back = parse_npy(encode_npy(a), "a.npy");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->shape, a.shape);
  EXPECT_EQ(back->data, a.data);
  EXPECT_EQ(back->numel(), 6);
}

TEST(Npy, ZeroSizedArrays) {
  Result<NpyArray> empty = parse_npy(
      npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 0), }", 0), "e.npy");
  ASSERT_TRUE(empty.ok()) << empty.status().message();
  EXPECT_EQ(empty->numel(), 0);
  EXPECT_TRUE(empty->data.empty());
}

// Found by the npy_reader fuzz target: a shape whose non-zero dims overflow int64, made
// zero-sized by a later 0, was accepted, and NpyArray::numel() then overflowed (UBSan: signed
// integer overflow) before reaching the 0. Like NumPy, the reader rejects it.
TEST(Npy, FuzzRegressionZeroDimAfterOverflowingDims) {
  const std::vector<uint8_t> input =
      tessera::testing::read_fuzz_input("npy_reader", "regression-zero-dim-after-overflowing-dims");
  ASSERT_FALSE(input.empty());
  Result<NpyArray> a = parse_npy(input, "found.npy");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error(), Error::InvalidArgument);
  EXPECT_STREQ(a.status().message(), "found.npy: shape overflows");

  Result<NpyArray> b = parse_npy(npy_with_header("{'descr': '<f4', 'fortran_order': False, "
                                                 "'shape': (4294967296, 4294967296, 0), }",
                                                 0),
                                 "b.npy");
  ASSERT_FALSE(b.ok());
  EXPECT_STREQ(b.status().message(), "b.npy: shape overflows");
}

}  // namespace
}  // namespace tessera::tools
