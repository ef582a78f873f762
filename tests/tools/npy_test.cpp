// The .npy reader of the tools (tools/common/npy.h): round trips and malformed headers,
// including the inputs the npy_reader fuzz target found (fuzz/corpus/npy_reader/regression-*).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
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

// A float64 .npy file holding `values` as a 1-D array, in the test's temporary directory.
std::string float64_file(const std::string& name, const std::vector<double>& values) {
  std::vector<uint8_t> bytes =
      npy_with_header("{'descr': '<f8', 'fortran_order': False, 'shape': (" +
                          std::to_string(values.size()) + ",), }",
                      0);
  const auto* p = reinterpret_cast<const uint8_t*>(values.data());
  bytes.insert(bytes.end(), p, p + values.size() * sizeof(double));
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  return path;
}

TEST(Npy, Float64IsConvertedToTheDtypeAskedFor) {
  const std::string path = float64_file("f64.npy", {0.5, -2, 3});
  std::string note;
  Result<NpyArray> f32 = read_npy_as(path, ScalarType::Float32, &note);
  ASSERT_TRUE(f32.ok()) << f32.status().message();
  EXPECT_EQ(f32->dtype, ScalarType::Float32);
  EXPECT_EQ(f32->shape, (std::vector<int64_t>{3}));
  ASSERT_EQ(f32->data.size(), 3 * sizeof(float));
  EXPECT_EQ(reinterpret_cast<const float*>(f32->data.data())[0], 0.5f);
  EXPECT_EQ(reinterpret_cast<const float*>(f32->data.data())[1], -2.0f);
  EXPECT_EQ(
      note,
      path +
          " is float64; converted to float32 (rounded); save it as float32 to skip the conversion");

  Result<NpyArray> f16 = read_npy_as(path, ScalarType::Float16, &note);
  ASSERT_TRUE(f16.ok());
  EXPECT_EQ(half_to_float(reinterpret_cast<const uint16_t*>(f16->data.data())[2]), 3.0f);

  // Whole numbers convert to an integer dtype; anything else is refused with the fix.
  const std::string whole = float64_file("whole.npy", {1, -7, 42});
  Result<NpyArray> i64 = read_npy_as(whole, ScalarType::Int64, &note);
  ASSERT_TRUE(i64.ok()) << i64.status().message();
  EXPECT_EQ(reinterpret_cast<const int64_t*>(i64->data.data())[1], -7);
  EXPECT_EQ(note, whole +
                      " is float64; converted to int64 (every value is a whole number); save it as "
                      "int64 to skip the conversion");
  Result<NpyArray> fraction = read_npy_as(path, ScalarType::Int64, &note);
  ASSERT_FALSE(fraction.ok());
  EXPECT_EQ(
      fraction.status().message(),
      path +
          " is float64 and its element 0 (0.5) is not a whole number in range; the input "
          "is int64: save the array with that dtype (numpy.save(path, array.astype(numpy.int64)))");
  Result<NpyArray> u8 = read_npy_as(whole, ScalarType::UInt8, &note);
  ASSERT_FALSE(u8.ok());
  EXPECT_NE(std::string(u8.status().message()).find("element 1 (-7)"), std::string::npos);

  // Other dtypes come back as read, with no note; parse_npy alone refuses float64 with a hint.
  NpyArray ints;
  ints.dtype = ScalarType::Int32;
  ints.shape = {1};
  ints.data.resize(4, 0);
  ASSERT_TRUE(write_npy(::testing::TempDir() + "/i32.npy", ints).is_ok());
  Result<NpyArray> as_read =
      read_npy_as(::testing::TempDir() + "/i32.npy", ScalarType::Float32, &note);
  ASSERT_TRUE(as_read.ok());
  EXPECT_EQ(as_read->dtype, ScalarType::Int32);
  EXPECT_EQ(note, "");
  Result<NpyArray> refused = read_npy(path);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(std::string(refused.status().message()).find("astype(numpy.float32)"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::tools
