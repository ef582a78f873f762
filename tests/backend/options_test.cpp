// BackendOption and BackendOptions<N>: storage, typed access, capacity and length errors.
#include <gtest/gtest.h>

#include <string>

#include "tessera/backend/options.h"
#include "tests/backend/test_support.h"

namespace tessera::test {
namespace {

TEST(BackendOption, HoldsEachType) {
  BackendOption o;
  ASSERT_OK(o.set_key("k"));
  o.set_bool(true);
  EXPECT_EQ(o.type(), OptionType::Bool);
  EXPECT_TRUE(o.as_bool());
  o.set_int(-7);
  EXPECT_EQ(o.as_int(), -7);
  o.set_double(0.25);
  EXPECT_DOUBLE_EQ(o.as_double(), 0.25);
  ASSERT_OK(o.set_string("/tmp/cache"));
  EXPECT_EQ(o.type(), OptionType::String);
  EXPECT_EQ(o.as_string(), "/tmp/cache");
  ASSERT_OK(o.set_enum("gpu", 1));
  EXPECT_EQ(o.as_enum().name, "gpu");
  EXPECT_EQ(o.as_enum().index, 1);
  EXPECT_EQ(o.key(), "k");
}

TEST(BackendOption, CopiesStringsIntoItsOwnStorage) {
  BackendOption o;
  ASSERT_OK(o.set_key("cache_dir"));
  {
    std::string temporary = "/data/local/tmp";
    ASSERT_OK(o.set_string(temporary));
    temporary.assign(temporary.size(), 'x');
  }
  EXPECT_EQ(o.as_string(), "/data/local/tmp");
}

TEST(BackendOption, RejectsEmptyAndOverlongKeys) {
  BackendOption o;
  Status empty = o.set_key("");
  EXPECT_EQ(empty.code(), Error::InvalidArgument);
  Status too_long = o.set_key(std::string(64, 'k'));
  EXPECT_EQ(too_long.code(), Error::OptionTooLong);
  EXPECT_NE(std::string(too_long.message()).find("64 characters; at most 63"), std::string::npos)
      << too_long.message();
  EXPECT_OK(o.set_key(std::string(63, 'k')));
}

TEST(BackendOption, OverlongStringFailsAndLeavesValueUnchanged) {
  BackendOption o;
  ASSERT_OK(o.set_key("cache_dir"));
  ASSERT_OK(o.set_string("old"));
  Status s = o.set_string(std::string(256, 'a'));
  EXPECT_EQ(s.code(), Error::OptionTooLong);
  EXPECT_STREQ(s.message(),
               "option 'cache_dir': string value has 256 characters; at most 255 allowed");
  EXPECT_EQ(o.as_string(), "old");
  EXPECT_OK(o.set_string(std::string(255, 'a')));
}

TEST(BackendOption, TypedGetReportsMismatch) {
  BackendOption o = opt(kNumThreads, 4);
  Result<int64_t> ok = o.get<int64_t>();
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 4);
  Result<std::string_view> wrong = o.get<std::string_view>();
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error(), Error::OptionTypeMismatch);
  EXPECT_STREQ(wrong.status().message(), "option 'num_threads' holds int, not string");
}

TEST(BackendOption, FormatsValues) {
  char buf[64];
  EXPECT_STREQ(opt(kNumThreads, 4).format_value(buf, sizeof buf), "4");
  EXPECT_STREQ(opt(kWeightCache, false).format_value(buf, sizeof buf), "false");
  EXPECT_STREQ(opt(kRatio, 0.5).format_value(buf, sizeof buf), "0.5");
  EXPECT_STREQ(opt(kCacheDir, "/tmp").format_value(buf, sizeof buf), "\"/tmp\"");
  EXPECT_STREQ(opt(kPerfMode, EnumValue{"throughput"}).format_value(buf, sizeof buf), "throughput");
}

TEST(BackendOption, SameValueComparesTypeAndValue) {
  EXPECT_TRUE(opt(kNumThreads, 4).same_value(opt(kPlatform, 4)));
  EXPECT_FALSE(opt(kNumThreads, 4).same_value(opt(kNumThreads, 5)));
  EXPECT_FALSE(opt(kNumThreads, 1).same_value(opt(kWeightCache, true)));
}

TEST(BackendOptions, TypedSetAndGet) {
  BackendOptions<8> opts;
  ASSERT_OK(opts.set(kNumThreads, 4));
  ASSERT_OK(opts.set(kWeightCache, false));
  ASSERT_OK(opts.set(kRatio, 0.75));
  ASSERT_OK(opts.set(kCacheDir, "/tmp/k"));
  ASSERT_OK(opts.set(kPerfMode, EnumValue{"power_saver"}));
  EXPECT_EQ(opts.size(), 5u);
  EXPECT_EQ(*opts.get(kNumThreads), 4);
  EXPECT_FALSE(*opts.get(kWeightCache));
  EXPECT_DOUBLE_EQ(*opts.get(kRatio), 0.75);
  EXPECT_EQ(*opts.get(kCacheDir), "/tmp/k");
  EXPECT_EQ(opts.get(kPerfMode)->name, "power_saver");
  Result<int64_t> missing = opts.get(kPlatform);
  EXPECT_EQ(missing.error(), Error::NotFound);
}

TEST(BackendOptions, StringSettersMatchTypedOnes) {
  BackendOptions<8> opts;
  ASSERT_OK(opts.set_int("num_threads", 2));
  ASSERT_OK(opts.set_bool("weight_cache", true));
  ASSERT_OK(opts.set_double("ratio", 0.1));
  ASSERT_OK(opts.set_string("cache_dir", "x"));
  ASSERT_OK(opts.set_enum("perf_mode", "latency"));
  ASSERT_EQ(opts.view().size(), 5u);
  EXPECT_EQ(opts.view()[0].key(), "num_threads");
  EXPECT_EQ(opts.view()[4].type(), OptionType::Enum);
}

TEST(BackendOptions, SettingAKeyAgainReplacesIt) {
  BackendOptions<2> opts;
  ASSERT_OK(opts.set(kNumThreads, 1));
  ASSERT_OK(opts.set(kNumThreads, 3));
  EXPECT_EQ(opts.size(), 1u);
  EXPECT_EQ(*opts.get(kNumThreads), 3);
}

TEST(BackendOptions, FullListFailsWithoutChange) {
  BackendOptions<2> opts;
  ASSERT_OK(opts.set(kNumThreads, 1));
  ASSERT_OK(opts.set(kPlatform, 0));
  Status s = opts.set(kBatchHint, 4);
  EXPECT_EQ(s.code(), Error::MemoryAllocationFailed);
  EXPECT_STREQ(s.message(),
               "BackendOptions<2> is full; cannot add option 'batch_hint' (use a larger N)");
  EXPECT_EQ(opts.size(), 2u);
  EXPECT_OK(opts.set(kNumThreads, 9));  // replacing still works when full
}

TEST(BackendOptions, ErrorsLeaveTheListUnchanged) {
  BackendOptions<4> opts;
  ASSERT_OK(opts.set(kCacheDir, "old"));
  EXPECT_EQ(opts.set(kCacheDir, std::string(300, 'x')).code(), Error::OptionTooLong);
  EXPECT_EQ(opts.set_int(std::string(70, 'k'), 1).code(), Error::OptionTooLong);
  EXPECT_EQ(opts.set_int("", 1).code(), Error::InvalidArgument);
  EXPECT_EQ(opts.size(), 1u);
  EXPECT_EQ(*opts.get(kCacheDir), "old");
}

TEST(BackendOption, OriginIsALabelBesideTheValue) {
  BackendOption o;
  ASSERT_OK(o.set_key("num_threads"));
  o.set_int(4);
  EXPECT_EQ(o.origin(), "");  // set through the API without one
  ASSERT_OK(o.set_origin("settings.json"));
  EXPECT_EQ(o.origin(), "settings.json");
  BackendOption copy = o;
  EXPECT_EQ(copy.origin(), "settings.json");
  copy.set_int(5);  // a new value keeps the label; the caller relabels if it wants
  EXPECT_EQ(copy.origin(), "settings.json");
  BackendOption plain;
  ASSERT_OK(plain.set_key("num_threads"));
  plain.set_int(4);
  EXPECT_TRUE(plain.same_value(o));  // not part of the value
  Status long_origin = o.set_origin(std::string(kMaxOptionOriginLength + 1, 'o'));
  EXPECT_EQ(long_origin.code(), Error::OptionTooLong);
  EXPECT_EQ(o.origin(), "settings.json");
  ASSERT_OK(o.set_origin(std::string(kMaxOptionOriginLength, 'o')));
  EXPECT_EQ(o.origin().size(), kMaxOptionOriginLength);
  ASSERT_OK(o.set_origin(""));
  EXPECT_EQ(o.origin(), "");
}

TEST(BackendOptions, SetOriginLabelsEveryOption) {
  BackendOptions<4> opts;
  ASSERT_OK(opts.set(kNumThreads, 2));
  ASSERT_OK(opts.set(kCacheDir, "/tmp"));
  EXPECT_EQ(opts.set_origin(std::string(kMaxOptionOriginLength + 1, 'o')).code(),
            Error::OptionTooLong);
  EXPECT_EQ(opts.find("num_threads")->origin(), "");
  ASSERT_OK(opts.set_origin("app settings"));
  EXPECT_EQ(opts.find("num_threads")->origin(), "app settings");
  EXPECT_EQ(opts.find("cache_dir")->origin(), "app settings");
}

TEST(BackendOptions, NoHeapStorageIsPartOfTheObject) {
  static_assert(std::is_trivially_copyable_v<BackendOption>);
  static_assert(sizeof(BackendOptions<4>) >= 4 * sizeof(BackendOption));
  static_assert(kNumThreads.length == 11);
  static_assert(kNumThreads.hash == hash_option_key("num_threads"));
}

}  // namespace
}  // namespace tessera::test
