// The tools' shared output helpers: the JSON emitter (tools/common/json_output.h) and word
// wrapping (tools/common/terminal.h).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tools/common/json_output.h"
#include "tools/common/terminal.h"

namespace tessera::tools {
namespace {

std::string printed(const Json& value) {
  char* buf = nullptr;
  size_t size = 0;
  FILE* f = open_memstream(&buf, &size);
  print_json(value, f);
  std::fclose(f);
  std::string out(buf, size);
  std::free(buf);
  return out;
}

TEST(JsonOutput, OneCompactLineInInsertionOrder) {
  Json j = Json::object();
  j["zeta"] = 1;
  j["alpha"] = {{"b", nullptr}, {"a", 0.25}};
  EXPECT_EQ(printed(j), "{\"zeta\":1,\"alpha\":{\"b\":null,\"a\":0.25}}\n");
}

TEST(JsonOutput, InvalidUtf8IsReplacedNotThrown) {
  Json j = {{"file", std::string("a\xff.npy")}, {"tab", "a\tb"}};
  const std::string out = printed(j);
  EXPECT_EQ(out, "{\"file\":\"a\xEF\xBF\xBD.npy\",\"tab\":\"a\\tb\"}\n");
  EXPECT_EQ(nlohmann::json::parse(out)["tab"], "a\tb");
}

TEST(JsonOutput, Errors) {
  EXPECT_EQ(
      printed(error_json(Status::error(Error::NotFound, "cannot open '%s'", "x.tsr"), "load")),
      "{\"error\":{\"code\":\"NotFound\",\"message\":\"load: cannot open 'x.tsr'\"}}\n");
  EXPECT_EQ(printed(error_json(kUsageErrorCode, "--warmup needs a value")),
            "{\"error\":{\"code\":\"UsageError\",\"message\":\"--warmup needs a value\"}}\n");
  EXPECT_FALSE(parse_json("{\"a\":").ok());
  Result<Json> ok = parse_json("{\"b\": 1, \"a\": [2]}");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->dump(), "{\"b\":1,\"a\":[2]}");
}

TEST(Terminal, WrapsAtSpacesWithAHangingIndent) {
  std::string out = "  key   ";
  append_wrapped("one two three four five six", out.size(), 8, 20, &out);
  EXPECT_EQ(out,
            "  key   one two\n"
            "        three four\n"
            "        five six");
}

TEST(Terminal, SplitsAWordLongerThanALine) {
  std::string out;
  append_wrapped("x aaaa|bbbb|cccc|dddd", 0, 2, 12, &out);
  EXPECT_EQ(out, "x\n  aaaa|bbbb|\n  cccc|dddd");
  std::string hard;
  append_wrapped("abcdefghijklmnop", 0, 0, 10, &hard);
  EXPECT_EQ(hard, "abcdefghij\nklmnop");
}

TEST(Terminal, WidthFromColumns) {
  setenv("COLUMNS", "123", 1);
  EXPECT_EQ(terminal_width(-1), 123u);
  setenv("COLUMNS", "10", 1);
  EXPECT_EQ(terminal_width(-1), 40u);  // never below 40
  setenv("COLUMNS", "wide", 1);
  EXPECT_EQ(terminal_width(-1), 80u);
  unsetenv("COLUMNS");
  EXPECT_EQ(terminal_width(-1), 80u);  // not a terminal
}

}  // namespace
}  // namespace tessera::tools
