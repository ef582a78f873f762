#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "tessera/core/result.h"
#include "tessera/core/status.h"

namespace tessera {
namespace {

TEST(Status, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.is_ok());
  EXPECT_EQ(s.code(), Error::Ok);
  EXPECT_STREQ(s.message(), "");
}

TEST(Status, FormatsMessageInline) {
  Status s = Status::error(Error::OptionOutOfRange, "value %d outside [%d, %d]", 99, 0, 64);
  EXPECT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), Error::OptionOutOfRange);
  EXPECT_STREQ(s.message(), "value 99 outside [0, 64]");
  EXPECT_STREQ(error_name(s.code()), "OptionOutOfRange");
}

TEST(Status, TruncatesLongMessages) {
  std::string long_msg(1000, 'x');
  Status s(Error::Internal, long_msg);
  EXPECT_EQ(std::string(s.message()).size(), Status::kMaxMessage - 1);
}

TEST(Status, PrefixKeepsCode) {
  Status s = Status(Error::NotFound, "no such thing").with_prefix("loader");
  EXPECT_EQ(s.code(), Error::NotFound);
  EXPECT_STREQ(s.message(), "loader: no such thing");
}

Result<int> half(int v) {
  if (v % 2) return Status::error(Error::InvalidArgument, "%d is odd", v);
  return v / 2;
}

Status use_half(int v, int* out) {
  TESSERA_ASSIGN_OR_RETURN(*out, half(v));
  TESSERA_RETURN_IF_ERROR(Status::ok());
  return Status::ok();
}

TEST(Result, ValueAndError) {
  Result<int> ok = half(4);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 2);
  Result<int> bad = half(3);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), Error::InvalidArgument);
  EXPECT_STREQ(bad.status().message(), "3 is odd");
}

TEST(Result, MacrosPropagate) {
  int out = 0;
  EXPECT_TRUE(use_half(8, &out).is_ok());
  EXPECT_EQ(out, 4);
  EXPECT_EQ(use_half(7, &out).code(), Error::InvalidArgument);
}

TEST(Result, OkStatusBecomesInternalError) {
  Result<int> r{Status::ok()};
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error(), Error::Internal);
}

TEST(Result, MoveOnlyValues) {
  Result<std::unique_ptr<int>> r(std::make_unique<int>(5));
  ASSERT_TRUE(r.ok());
  Result<std::unique_ptr<int>> moved(std::move(r));
  ASSERT_TRUE(moved.ok());
  EXPECT_EQ(**moved, 5);
  static_assert(!std::is_copy_constructible_v<Result<int>>);
}

}  // namespace
}  // namespace tessera
