// Schema validation of single options, string parsing against the schema, schema checks and
// the did-you-mean machinery.
#include <gtest/gtest.h>

#include <iterator>
#include <string>

#include "tessera/backend/option_schema.h"
#include "tessera/backend/suggest.h"
#include "tests/backend/test_support.h"

namespace tessera::test {
namespace {

Status check(const BackendOption& o, OptionLevel scope = OptionLevel::Load) {
  return validate_option("xnnpack", kTestSchema, o, scope);
}

BackendOption raw_int(const char* key, int64_t v) {
  BackendOption o;
  EXPECT_OK(o.set_key(key));
  o.set_int(v);
  return o;
}

TEST(SchemaValidation, AcceptsValidValuesAndReportsTheIndex) {
  size_t index = 99;
  EXPECT_OK(
      validate_option("xnnpack", kTestSchema, opt(kNumThreads, 8), OptionLevel::Load, &index));
  EXPECT_EQ(index, 0u);
  EXPECT_OK(check(opt(kPerfMode, EnumValue{"throughput"})));
  EXPECT_OK(check(opt(kRatio, 1.0)));
  EXPECT_OK(check(opt(kCacheDir, std::string(64, 'd'))));
}

TEST(SchemaValidation, UnknownKeySuggestsTheClosest) {
  Status s = check(raw_int("num_thread", 4));
  EXPECT_EQ(s.code(), Error::OptionUnknownKey);
  EXPECT_STREQ(s.message(), "xnnpack: unknown option 'num_thread' (did you mean 'num_threads'?)");

  Status swapped = check(raw_int("ratoi", 1));
  EXPECT_STREQ(swapped.message(), "xnnpack: unknown option 'ratoi' (did you mean 'ratio'?)");
}

TEST(SchemaValidation, UnknownKeyWithoutCloseMatchListsTheKnownKeys) {
  Status s = check(raw_int("completely_different", 4));
  EXPECT_EQ(s.code(), Error::OptionUnknownKey);
  EXPECT_EQ(std::string(s.message())
                .rfind("xnnpack: unknown option 'completely_different' "
                       "(known options: num_threads, weight_cache, ",
                       0),
            0u)
      << s.message();
}

TEST(SchemaValidation, UnknownKeyOnABackendWithoutOptions) {
  Status s = validate_option("portable", {}, raw_int("num_threads", 1), OptionLevel::Load);
  EXPECT_STREQ(s.message(),
               "portable: unknown option 'num_threads' (this backend declares no options)");
}

TEST(SchemaValidation, WrongTypeNamesBothTypesAndTheValue) {
  Status s = check(opt(OptionKey<std::string_view>{"num_threads"}, "four"));
  EXPECT_EQ(s.code(), Error::OptionTypeMismatch);
  EXPECT_STREQ(s.message(), "xnnpack: option 'num_threads' expects int, got string \"four\"");

  Status e = check(opt(OptionKey<std::string_view>{"perf_mode"}, "latency"));
  EXPECT_EQ(e.code(), Error::OptionTypeMismatch);
  EXPECT_STREQ(e.message(),
               "xnnpack: option 'perf_mode' expects enum (one of: latency, throughput, "
               "power_saver), got string \"latency\"");
}

TEST(SchemaValidation, OutOfRangeGivesTheRange) {
  Status s = check(opt(kNumThreads, 300));
  EXPECT_EQ(s.code(), Error::OptionOutOfRange);
  EXPECT_STREQ(s.message(), "xnnpack: option 'num_threads' = 300 is out of range [0, 256]");
  Status d = check(opt(kRatio, 1.5));
  EXPECT_STREQ(d.message(), "xnnpack: option 'ratio' = 1.5 is out of range [0, 1]");
  EXPECT_EQ(check(opt(kNumThreads, -1)).code(), Error::OptionOutOfRange);
}

TEST(SchemaValidation, InvalidChoiceListsTheChoices) {
  Status s = check(opt(kPerfMode, EnumValue{"turbo"}));
  EXPECT_EQ(s.code(), Error::OptionInvalidChoice);
  EXPECT_STREQ(s.message(),
               "xnnpack: option 'perf_mode' = 'turbo' is not one of: latency, throughput, "
               "power_saver");
  Status close = check(opt(kPerfMode, EnumValue{"latancy"}));
  EXPECT_STREQ(close.message(),
               "xnnpack: option 'perf_mode' = 'latancy' is not one of: latency, throughput, "
               "power_saver (did you mean 'latency'?)");
}

TEST(SchemaValidation, WrongScopeListsTheAllowedScopes) {
  Status s = check(opt(kNumThreads, 2), OptionLevel::Execute);
  EXPECT_OK(s);  // num_threads allows every scope
  Status w = check(opt(kWeightCache, true), OptionLevel::Execute);
  EXPECT_EQ(w.code(), Error::OptionWrongScope);
  EXPECT_STREQ(w.message(),
               "xnnpack: option 'weight_cache' cannot be set at execute scope (allowed: "
               "compile_spec, global, load, delegate)");
  Status b = check(opt(kBatchHint, 2), OptionLevel::Load);
  EXPECT_STREQ(b.message(),
               "xnnpack: option 'batch_hint' cannot be set at load scope (allowed: execute)");
}

TEST(SchemaValidation, StringLongerThanTheSpecAllows) {
  Status s = check(opt(kCacheDir, std::string(65, 'd')));
  EXPECT_EQ(s.code(), Error::OptionTooLong);
  EXPECT_STREQ(s.message(),
               "xnnpack: option 'cache_dir' value has 65 characters; at most 64 allowed");
}

// --- parsing strings against the schema (compile specs, command lines) ---------------------

Result<BackendOption> parse(const char* key, std::string_view text) {
  int i = find_option_spec(kTestSchema, key);
  EXPECT_GE(i, 0);
  BackendOption out;
  Status s = parse_option_value("xnnpack", kTestSchema[i], text, &out);
  if (!s.is_ok()) return s;
  return out;
}

TEST(ParseOptionValue, ParsesEachType) {
  EXPECT_EQ(parse("num_threads", "4")->as_int(), 4);
  EXPECT_EQ(parse("num_threads", "+8")->as_int(), 8);
  EXPECT_TRUE(parse("weight_cache", "true")->as_bool());
  EXPECT_TRUE(parse("weight_cache", "TRUE")->as_bool());
  EXPECT_TRUE(parse("weight_cache", "1")->as_bool());
  EXPECT_FALSE(parse("weight_cache", "false")->as_bool());
  EXPECT_FALSE(parse("weight_cache", "0")->as_bool());
  EXPECT_DOUBLE_EQ(parse("ratio", "0.25")->as_double(), 0.25);
  EXPECT_DOUBLE_EQ(parse("ratio", "1e-1")->as_double(), 0.1);
  EXPECT_EQ(parse("cache_dir", "/tmp/x y")->as_string(), "/tmp/x y");
  Result<BackendOption> e = parse("perf_mode", "throughput");
  EXPECT_EQ(e->as_enum().name, "throughput");
  EXPECT_EQ(e->as_enum().index, 1);
  EXPECT_EQ(e->key(), "perf_mode");
}

TEST(ParseOptionValue, ReportsBadText) {
  Result<BackendOption> i = parse("num_threads", "four");
  EXPECT_EQ(i.error(), Error::OptionTypeMismatch);
  EXPECT_STREQ(i.status().message(), "xnnpack: option 'num_threads' expects int, got 'four'");
  EXPECT_EQ(parse("num_threads", "4x").error(), Error::OptionTypeMismatch);
  EXPECT_EQ(parse("num_threads", "").error(), Error::OptionTypeMismatch);
  EXPECT_EQ(parse("num_threads", "2.5").error(), Error::OptionTypeMismatch);
  Result<BackendOption> b = parse("weight_cache", "yes please");
  EXPECT_STREQ(b.status().message(),
               "xnnpack: option 'weight_cache' expects bool (true, false, 1 or 0), got 'yes "
               "please'");
  EXPECT_EQ(parse("ratio", "half").error(), Error::OptionTypeMismatch);
  EXPECT_EQ(parse("ratio", "nan").error(), Error::OptionOutOfRange);  // not a finite number
  EXPECT_EQ(parse("ratio", "inf").error(), Error::OptionOutOfRange);
}

TEST(ParseOptionValue, ChecksRangeChoicesAndLength) {
  Result<BackendOption> big = parse("num_threads", "300");
  EXPECT_EQ(big.error(), Error::OptionOutOfRange);
  EXPECT_STREQ(big.status().message(),
               "xnnpack: option 'num_threads' = 300 is out of range [0, 256]");
  Result<BackendOption> huge = parse("num_threads", "99999999999999999999");
  EXPECT_EQ(huge.error(), Error::OptionOutOfRange);
  EXPECT_EQ(parse("ratio", "1e999").error(), Error::OptionOutOfRange);
  Result<BackendOption> choice = parse("perf_mode", "tpu");
  EXPECT_EQ(choice.error(), Error::OptionInvalidChoice);
  EXPECT_STREQ(choice.status().message(),
               "xnnpack: option 'perf_mode' = 'tpu' is not one of: latency, throughput, "
               "power_saver");
  EXPECT_EQ(parse("cache_dir", std::string(65, 'x')).error(), Error::OptionTooLong);
}

// --- schema checks at registration ----------------------------------------------------------

TEST(CheckSchema, AcceptsTheTestSchema) {
  EXPECT_OK(check_schema("xnnpack", kTestSchema));
}

TEST(CheckSchema, RejectsMalformedSchemas) {
  static constexpr OptionSpec kDuplicate[] = {
      OptionSpec::boolean(OptionKey<bool>{"a"}, true, kInitScopes, "x"),
      OptionSpec::boolean(OptionKey<bool>{"a"}, false, kInitScopes, "y"),
  };
  Status dup = check_schema("b", kDuplicate);
  EXPECT_EQ(dup.code(), Error::InvalidArgument);
  EXPECT_STREQ(dup.message(), "b: schema declares 'a' twice");

  static constexpr OptionSpec kBadKey[] = {
      OptionSpec::boolean(OptionKey<bool>{"Bad.Key"}, true, kInitScopes, "")};
  EXPECT_EQ(check_schema("b", kBadKey).code(), Error::InvalidArgument);

  static constexpr OptionSpec kBadDefault[] = {
      OptionSpec::integer(OptionKey<int64_t>{"n"}, 10, 0, 5, kInitScopes, "")};
  Status def = check_schema("b", kBadDefault);
  EXPECT_EQ(def.code(), Error::InvalidArgument);
  EXPECT_STREQ(def.message(), "invalid default: b: option 'n' = 10 is out of range [0, 5]");

  static constexpr const char* kChoices[] = {"x", "y"};
  static constexpr OptionSpec kBadChoice[] = {
      OptionSpec::enumeration(OptionKey<EnumValue>{"e"}, "z", kChoices, kInitScopes, "")};
  EXPECT_EQ(check_schema("b", kBadChoice).code(), Error::InvalidArgument);

  static constexpr OptionSpec kInitOnlyExecute[] = {
      OptionSpec::integer(OptionKey<int64_t>{"n"}, 0, 0, 5, kAllScopes, "").init_only()};
  EXPECT_STREQ(check_schema("b", kInitOnlyExecute).message(),
               "b: option 'n' is init-only, so it cannot allow execute scope");

  static constexpr OptionSpec kNoScope[] = {
      OptionSpec::integer(OptionKey<int64_t>{"n"}, 0, 0, 5, Scopes(), "")};
  EXPECT_EQ(check_schema("b", kNoScope).code(), Error::InvalidArgument);
}

TEST(CheckSchema, RejectsTooManyOptions) {
  static const std::string* keys = [] {
    auto* k = new std::string[kMaxSchemaOptions + 1];
    for (size_t i = 0; i <= kMaxSchemaOptions; ++i) k[i] = std::string(1, 'k') + std::to_string(i);
    return k;
  }();
  std::vector<OptionSpec> big;
  for (size_t i = 0; i <= kMaxSchemaOptions; ++i) {
    big.push_back(OptionSpec::boolean(OptionKey<bool>{keys[i].c_str()}, true, kInitScopes, ""));
  }
  Status s = check_schema("b", big);
  EXPECT_EQ(s.code(), Error::InvalidArgument);
  EXPECT_STREQ(s.message(), "b: schema declares 49 options; at most 48 are supported");
}

TEST(Suggest, EditDistance) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
  EXPECT_EQ(edit_distance("num_thread", "num_threads"), 1u);
  EXPECT_EQ(edit_distance("ratoi", "ratio"), 1u);  // adjacent swap
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

TEST(Suggest, OnlyPlausibleTypos) {
  Suggester s("xnnpak");
  s.consider("opencl");
  s.consider("xnnpack");
  s.consider("onednn");
  EXPECT_EQ(s.best(), "xnnpack");
  Suggester none("gpu");
  none.consider("opencl");
  EXPECT_TRUE(none.best().empty());
}

TEST(Scopes, FormatAndMembership) {
  char buf[96];
  EXPECT_STREQ(format_scopes(kRuntimeScopes, buf, sizeof buf), "global, load, delegate");
  EXPECT_STREQ(format_scopes(Scopes(), buf, sizeof buf), "none");
  EXPECT_TRUE(kAllScopes.has(OptionLevel::Execute));
  EXPECT_FALSE(kInitScopes.has(OptionLevel::Execute));
}

// One enum for where a value may be set and where it came from: precedence order, one name each
// (as reports show them), and a scope bit only for the levels a caller can set.
TEST(OptionLevels, OrderNamesAndScopeBits) {
  const OptionLevel in_order[] = {
      OptionLevel::Default, OptionLevel::Selection, OptionLevel::CompileSpec, OptionLevel::Global,
      OptionLevel::Load,    OptionLevel::Delegate,  OptionLevel::Execute};
  const char* names[] = {"default", "selection", "compile_spec", "global",
                         "load",    "delegate",  "execute"};
  for (size_t i = 0; i < std::size(in_order); ++i) {
    EXPECT_EQ(static_cast<size_t>(in_order[i]), i);
    EXPECT_STREQ(option_level_name(in_order[i]), names[i]);
  }
  EXPECT_TRUE(Scopes(OptionLevel::Default).empty());
  EXPECT_TRUE(Scopes(OptionLevel::Selection).empty());
  EXPECT_FALSE(kAllScopes.has(OptionLevel::Default));
  EXPECT_FALSE(kAllScopes.has(OptionLevel::Selection));
  unsigned all = 0;
  for (size_t i = 0; i < std::size(kScopeLevels); ++i) {
    EXPECT_EQ(Scopes(kScopeLevels[i]).bits, 1u << i);
    all |= Scopes(kScopeLevels[i]).bits;
  }
  EXPECT_EQ(all, kAllScopes.bits);

  // A level nobody sets is never an allowed scope.
  Status s = check(opt(kNumThreads, 2), OptionLevel::Selection);
  EXPECT_EQ(s.code(), Error::OptionWrongScope);
  EXPECT_STREQ(s.message(),
               "xnnpack: option 'num_threads' cannot be set at selection scope (allowed: "
               "compile_spec, global, load, delegate, execute)");
}

}  // namespace
}  // namespace tessera::test
