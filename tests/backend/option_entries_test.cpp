// Options that take entries (OptionSpec::with_entries): a ';'-separated NAME=VALUE list that can
// also be set one entry at a time with the key "<key>.<NAME>", from the typed API, option strings
// and TOML. ArmNN's backend_option is the user; tests/backends/armnn checks what ArmNN receives.
#include <gtest/gtest.h>

#include <string>

#include "tessera/backend/global_options.h"
#include "tessera/backend/option_parser.h"
#include "tessera/backend/options.h"
#include "tessera/backend/resolution.h"
#include "tessera/c/tessera.h"
#include "tests/backend/test_support.h"

namespace tessera::test {
namespace {

constexpr OptionSpec kEntrySchema[] = {
    OptionSpec::string(OptionKey<std::string_view>{"pass"}, "", OptionLevel::Global,
                       "NAME=VALUE entries", 80)
        .with_entries(),
    OptionSpec::integer(OptionKey<int64_t>{"level"}, 0, 0, 3, kRuntimeScopes, "a plain option"),
};

class OptionEntries : public ::testing::Test {
 protected:
  ScopedStub stub_{"entries_stub", kEntrySchema};
};

std::string global_pass() {
  BackendOptions<1> query;
  EXPECT_TRUE(query.set_string("pass", "?").is_ok());
  EXPECT_TRUE(get_option("entries_stub", query.mutable_view()).is_ok());
  return std::string(query.view()[0].as_string());
}

TEST_F(OptionEntries, TypedEntriesMergeIntoTheListReplacingTheSameName) {
  ASSERT_OK(set_option("entries_stub",
                       [] {
                         BackendOptions<1> o;
                         (void)o.set_string("pass", "Gpu.File=/a;Cpu.Fast=false");
                         return o;
                       }()
                           .view()));
  BackendOptions<4> entries;
  ASSERT_OK(entries.set_int("pass.Gpu.Level", 2));
  ASSERT_OK(entries.set_bool("pass.Cpu.Fast", true));  // replaces Cpu.Fast=false
  ASSERT_OK(entries.set_double("pass.Gpu.Ratio", 0.25));
  ASSERT_OK(entries.set_string("pass.Gpu.File", "/b"));
  ASSERT_OK(set_option("entries_stub", entries.view()));
  EXPECT_EQ(global_pass(), "Gpu.Level=2;Cpu.Fast=true;Gpu.Ratio=0.25;Gpu.File=/b");
  // The hook saw the merged list under the option's own key, not the entry keys.
  BackendOptions<kMaxSchemaOptions> seen = stub_->last_set_options();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen.view()[0].key(), "pass");
}

TEST_F(OptionEntries, AWholeValueInTheSameCallIsTheBase) {
  BackendOptions<2> o;
  ASSERT_OK(o.set_int("pass.A", 1));
  ASSERT_OK(o.set_string("pass", "B=2"));
  ASSERT_OK(set_option("entries_stub", o.view()));
  EXPECT_EQ(global_pass(), "B=2;A=1");
}

TEST_F(OptionEntries, BadEntriesAreRefusedAndNothingChanges) {
  BackendOptions<1> first;
  ASSERT_OK(first.set_int("pass.A", 1));
  ASSERT_OK(set_option("entries_stub", first.view()));
  struct Case {
    const char* key;
    const char* text;  // a string value, or nullptr for an enum value
    Error code;
    const char* message;
  };
  const Case cases[] = {
      {"pass.", "x", Error::InvalidArgument, "followed by a name"},
      {"pass.A B", "x", Error::InvalidArgument, "followed by a name"},
      {"pass..A", "x", Error::InvalidArgument, "followed by a name"},
      {"pass.A", "1;B=2", Error::InvalidArgument, "cannot hold ';' or '='"},
      {"pass.A", nullptr, Error::OptionTypeMismatch, "got an enum"},
      {"pas.A", "1", Error::OptionUnknownKey, "unknown option 'pas.A'"},
      {"level.A", "1", Error::OptionUnknownKey, "unknown option 'level.A'"},
      // 80 characters at most for the whole list.
      {"pass.Long", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
       Error::OptionTooLong, "at most 80"},
  };
  for (const Case& c : cases) {
    BackendOptions<2> o;
    ASSERT_OK(o.set_int("level", 3));  // a valid option in the same call is not applied either
    if (c.text != nullptr) {
      ASSERT_OK(o.set_string(c.key, c.text));
    } else {
      ASSERT_OK(o.set_enum(c.key, "x"));
    }
    Status st = set_option("entries_stub", o.view());
    EXPECT_EQ(st.code(), c.code) << c.key << ": " << st.message();
    EXPECT_NE(std::string(st.message()).find(c.message), std::string::npos) << st.message();
    EXPECT_EQ(global_pass(), "A=1") << c.key;
  }
  BackendOptions<1> level;
  ASSERT_OK(level.set(OptionKey<int64_t>{"level"}, 0));
  ASSERT_OK(get_option("entries_stub", level.mutable_view()));
  EXPECT_EQ(level.view()[0].as_int(), 0);
}

TEST_F(OptionEntries, EntriesAreGlobalOnlyLikeTheirOption) {
  BackendOption entry;
  ASSERT_OK(entry.set_key("pass.A"));
  entry.set_int(1);
  for (OptionLevel scope : {OptionLevel::Load, OptionLevel::Delegate, OptionLevel::Execute}) {
    Status st = validate_option("entries_stub", kEntrySchema, entry, scope);
    EXPECT_EQ(st.code(), Error::OptionWrongScope) << st.message();
    EXPECT_NE(std::string(st.message()).find("an entry of 'pass'"), std::string::npos)
        << st.message();
  }
  ParsedOptions p;
  Status st = parse_option_assignment("entries_stub.pass.A=1", OptionLevel::Load,
                                      Validation::Strict, "--option", &p);
  EXPECT_EQ(st.code(), Error::OptionWrongScope) << st.message();
}

TEST_F(OptionEntries, OptionStringsAndTomlReachTheSameList) {
  ParsedOptions p;
  ASSERT_OK(parse_option_list("entries_stub.pass.Gpu.Level=2;entries_stub.level=1",
                              OptionLevel::Global, Validation::Strict, "TESSERA_OPTIONS", &p));
  ASSERT_OK(p.apply_global(Validation::Strict));
  EXPECT_EQ(global_pass(), "Gpu.Level=2");

  // TOML: a quoted key, dotted keys and a sub-table all name entries; typed values keep their
  // type's spelling.
  ParsedOptions t;
  ASSERT_OK(parse_options_toml(R"([global.entries_stub]
"pass.Gpu.File" = "/tmp/t"
pass.Cpu.Fast = true
[global.entries_stub.pass.Npu]
Level = 3
)",
                               "opts.toml", Validation::Strict, &t));
  ASSERT_OK(t.apply_global(Validation::Strict));
  const std::string merged = global_pass();
  for (const char* entry : {"Gpu.Level=2", "Gpu.File=/tmp/t", "Cpu.Fast=true", "Npu.Level=3"}) {
    EXPECT_NE(merged.find(entry), std::string::npos) << entry << " in " << merged;
  }

  // A table under an option without entries is still a type error.
  ParsedOptions bad;
  Status st = parse_options_toml("[global.entries_stub.level]\nA = 1\n", "bad.toml",
                                 Validation::Strict, &bad);
  EXPECT_EQ(st.code(), Error::OptionTypeMismatch) << st.message();
}

// The C ABI takes the entry key with the value as text.
TEST_F(OptionEntries, TheCAbiSetsEntries) {
  ASSERT_EQ(tessera_set_global_option("entries_stub", "pass.Gpu.Level", "2"), nullptr);
  ASSERT_EQ(tessera_set_global_option("entries_stub", "pass.Gpu.File", "/c"), nullptr);
  char value[96];
  ASSERT_EQ(tessera_get_global_option("entries_stub", "pass", value, sizeof value), nullptr);
  EXPECT_STREQ(value, "\"Gpu.Level=2;Gpu.File=/c\"");  // strings come back quoted
  tessera_status* bad = tessera_set_global_option("entries_stub", "pass.Gpu.File", "a=b");
  ASSERT_NE(bad, nullptr);
  EXPECT_EQ(tessera_status_code(bad), TESSERA_ERROR_INVALID_ARGUMENT);
  tessera_status_free(bad);
  EXPECT_EQ(global_pass(), "Gpu.Level=2;Gpu.File=/c");
}

TEST(OptionEntriesSchema, OnlyGlobalStringOptionsTakeEntries) {
  constexpr OptionSpec int_entries[] = {
      OptionSpec::integer(OptionKey<int64_t>{"n"}, 0, 0, 3, OptionLevel::Global, "n")
          .with_entries()};
  constexpr OptionSpec load_entries[] = {
      OptionSpec::string(OptionKey<std::string_view>{"s"}, "", kRuntimeScopes, "s").with_entries()};
  for (Span<const OptionSpec> schema :
       {Span<const OptionSpec>(int_entries), Span<const OptionSpec>(load_entries)}) {
    Status st = check_schema("b", schema);
    EXPECT_EQ(st.code(), Error::InvalidArgument);
    EXPECT_NE(std::string(st.message()).find("global scope only"), std::string::npos)
        << st.message();
  }
  EXPECT_OK(check_schema("b", kEntrySchema));
}

}  // namespace
}  // namespace tessera::test
