// Front ends: backend.key=value strings, TESSERA_OPTIONS and TOML files, with file:line:col
// errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "tessera/backend/global_options.h"
#include "tessera/backend/option_parser.h"
#include "tessera/backend/resolution.h"
#include "tests/backend/test_support.h"

namespace tessera::test {
namespace {

class Parser : public ::testing::Test {
 protected:
  ScopedStub xnnpack_{"xnnpack"};
  ScopedStub opencl_{"opencl"};
};

const BackendOption* find(const std::vector<ParsedOptionList>& lists, std::string_view target,
                          std::string_view key) {
  for (const ParsedOptionList& l : lists) {
    if (l.target != target) continue;
    for (const BackendOption& o : l.options) {
      if (o.key() == key) return &o;
    }
  }
  return nullptr;
}

TEST_F(Parser, AssignmentIsTypedByTheSchema) {
  ParsedOptions p;
  ASSERT_OK(parse_option_assignment("xnnpack.num_threads=4", OptionLevel::Load, Validation::Strict,
                                    "--option", &p));
  ASSERT_OK(parse_option_assignment("xnnpack.weight_cache=false", OptionLevel::Load,
                                    Validation::Strict, "--option", &p));
  ASSERT_OK(parse_option_assignment("xnnpack.ratio=0.25", OptionLevel::Load, Validation::Strict,
                                    "--option", &p));
  ASSERT_OK(parse_option_assignment("opencl.cache_dir=/data/cl cache", OptionLevel::Load,
                                    Validation::Strict, "--option", &p));
  ASSERT_OK(parse_option_assignment("opencl.device_type=gpu", OptionLevel::Load, Validation::Strict,
                                    "--option", &p));
  EXPECT_EQ(find(p.load, "xnnpack", "num_threads")->as_int(), 4);
  EXPECT_FALSE(find(p.load, "xnnpack", "weight_cache")->as_bool());
  EXPECT_DOUBLE_EQ(find(p.load, "xnnpack", "ratio")->as_double(), 0.25);
  EXPECT_EQ(find(p.load, "opencl", "cache_dir")->as_string(), "/data/cl cache");
  EXPECT_EQ(find(p.load, "opencl", "device_type")->as_enum().name, "gpu");
}

TEST_F(Parser, AssignmentScopesAndDelegateIds) {
  ParsedOptions p;
  ASSERT_OK(parse_option_assignment("xnnpack.num_threads=2", OptionLevel::Global,
                                    Validation::Strict, "--option", &p));
  ASSERT_OK(parse_option_assignment("xnnpack#1.num_threads=3", OptionLevel::Load,
                                    Validation::Strict, "--option", &p));
  ASSERT_OK(parse_option_assignment("xnnpack#0.num_threads=5", OptionLevel::Delegate,
                                    Validation::Strict, "--option", &p));
  ASSERT_OK(parse_option_assignment("xnnpack.batch_hint=16", OptionLevel::Execute,
                                    Validation::Strict, "--option", &p));
  EXPECT_EQ(find(p.global, "xnnpack", "num_threads")->as_int(), 2);
  EXPECT_EQ(find(p.delegate, "xnnpack#1", "num_threads")->as_int(), 3);  // '#' → delegate
  EXPECT_EQ(find(p.delegate, "xnnpack#0", "num_threads")->as_int(), 5);
  EXPECT_EQ(find(p.execute, "xnnpack", "batch_hint")->as_int(), 16);
  EXPECT_TRUE(p.load.empty());

  Status s = parse_option_assignment("xnnpack#0.num_threads=1", OptionLevel::Global,
                                     Validation::Strict, "--global-option", &p);
  EXPECT_EQ(s.code(), Error::OptionParseError);
  EXPECT_STREQ(s.message(),
               "--global-option:1:1: delegate id 'xnnpack#0' is only valid for load or delegate "
               "options");
}

TEST_F(Parser, AssignmentErrorsPointAtTheProblem) {
  ParsedOptions p;
  Status no_eq = parse_option_assignment("xnnpack.num_threads", OptionLevel::Load,
                                         Validation::Strict, "--option", &p);
  EXPECT_EQ(no_eq.code(), Error::OptionParseError);
  EXPECT_STREQ(no_eq.message(),
               "--option:1:1: expected backend.key=value, got 'xnnpack.num_threads'");
  Status no_dot = parse_option_assignment("num_threads=4", OptionLevel::Load, Validation::Strict,
                                          "--option", &p);
  EXPECT_STREQ(no_dot.message(),
               "--option:1:1: expected backend.key before '=', got 'num_threads'");
  Status backend = parse_option_assignment("xnnpak.num_threads=4", OptionLevel::Load,
                                           Validation::Strict, "--option", &p);
  EXPECT_EQ(backend.code(), Error::OptionUnknownBackend);
  EXPECT_EQ(std::string(backend.message())
                .rfind("--option:1:1: unknown backend 'xnnpak' (did you mean 'xnnpack'?", 0),
            0u)
      << backend.message();
  Status key = parse_option_assignment("xnnpack.num_thread=4", OptionLevel::Load,
                                       Validation::Strict, "--option", &p);
  EXPECT_STREQ(key.message(),
               "--option:1:9: xnnpack: unknown option 'num_thread' (did you mean 'num_threads'?)");
  Status value = parse_option_assignment("xnnpack.num_threads=four", OptionLevel::Load,
                                         Validation::Strict, "--option", &p);
  EXPECT_EQ(value.code(), Error::OptionTypeMismatch);
  EXPECT_STREQ(value.message(),
               "--option:1:21: xnnpack: option 'num_threads' expects int, got 'four'");
  Status scope = parse_option_assignment("xnnpack.batch_hint=4", OptionLevel::Load,
                                         Validation::Strict, "--option", &p);
  EXPECT_EQ(scope.code(), Error::OptionWrongScope);
  EXPECT_TRUE(p.empty());
}

TEST_F(Parser, EnvironmentVariable) {
  ::setenv("TESSERA_TEST_OPTIONS", "xnnpack.num_threads=2;opencl.device_type=gpu ; ;", 1);
  ParsedOptions p;
  ASSERT_OK(parse_options_from_environment(Validation::Strict, &p, "TESSERA_TEST_OPTIONS"));
  EXPECT_EQ(find(p.load, "xnnpack", "num_threads")->as_int(), 2);
  EXPECT_EQ(find(p.load, "opencl", "device_type")->as_enum().name, "gpu");

  ::setenv("TESSERA_TEST_OPTIONS", "xnnpack.num_threads=2;opencl.device_type=tpu", 1);
  ParsedOptions bad;
  Status s = parse_options_from_environment(Validation::Strict, &bad, "TESSERA_TEST_OPTIONS");
  EXPECT_EQ(s.code(), Error::OptionInvalidChoice);
  EXPECT_STREQ(s.message(),
               "TESSERA_TEST_OPTIONS:1:42: opencl: option 'device_type' = 'tpu' is not one of: "
               "cpu, gpu, accelerator (did you mean 'cpu'?)");
  EXPECT_TRUE(bad.empty());  // a bad entry leaves nothing half-parsed

  ::unsetenv("TESSERA_TEST_OPTIONS");
  ParsedOptions none;
  EXPECT_OK(parse_options_from_environment(Validation::Strict, &none, "TESSERA_TEST_OPTIONS"));
  EXPECT_TRUE(none.empty());
}

TEST_F(Parser, EnvironmentTextAsTheToolsPassIt) {
  ParsedOptions p;
  ASSERT_OK(parse_options_env("xnnpack.num_threads=2;xnnpack#0.ratio=0.5", Validation::Strict, &p));
  EXPECT_EQ(find(p.load, "xnnpack", "num_threads")->as_int(), 2);
  EXPECT_DOUBLE_EQ(find(p.delegate, "xnnpack#0", "ratio")->as_double(), 0.5);
  Status s = parse_options_env("xnnpack.num_threads=x", Validation::Strict, &p);
  EXPECT_STREQ(s.message(),
               "TESSERA_OPTIONS:1:21: xnnpack: option 'num_threads' expects int, got 'x'");
}

TEST_F(Parser, ListColumnsAndQuotes) {
  ParsedOptions p;
  Status s = parse_option_list("xnnpack.num_threads=2;  xnnpack.ratio=2", OptionLevel::Load,
                               Validation::Strict, "TESSERA_OPTIONS", &p);
  EXPECT_EQ(s.code(), Error::OptionOutOfRange);
  EXPECT_STREQ(s.message(),
               "TESSERA_OPTIONS:1:39: xnnpack: option 'ratio' = 2 is out of range [0, 1]");
  ASSERT_OK(parse_option_list("opencl.cache_dir=\"/a;b\";xnnpack.num_threads=1", OptionLevel::Load,
                              Validation::Strict, "TESSERA_OPTIONS", &p));
  EXPECT_EQ(find(p.load, "opencl", "cache_dir")->as_string(), "/a;b");
  Status garbage = parse_option_list("xnnpack.num_threads=1;oops", OptionLevel::Load,
                                     Validation::Strict, "TESSERA_OPTIONS", &p);
  EXPECT_STREQ(garbage.message(), "TESSERA_OPTIONS:1:23: expected backend.key=value, got 'oops'");
}

constexpr const char* kToml = R"(# options for the demo
[global.xnnpack]
num_threads = 4
perf_mode = "throughput"

[load.opencl]
device_type = "gpu"
ratio = 1            # an integer is fine for a double option
cache_dir = "/data/cl"

[delegate."xnnpack#1"]
num_threads = 1

[execute.xnnpack]
batch_hint = 8
)";

TEST_F(Parser, TomlTablesPerScope) {
  ParsedOptions p;
  ASSERT_OK(parse_options_toml(kToml, "options.toml", Validation::Strict, &p));
  EXPECT_EQ(find(p.global, "xnnpack", "num_threads")->as_int(), 4);
  EXPECT_EQ(find(p.global, "xnnpack", "perf_mode")->as_enum().name, "throughput");
  EXPECT_EQ(find(p.load, "opencl", "device_type")->as_enum().name, "gpu");
  EXPECT_DOUBLE_EQ(find(p.load, "opencl", "ratio")->as_double(), 1.0);
  EXPECT_EQ(find(p.load, "opencl", "cache_dir")->as_string(), "/data/cl");
  EXPECT_EQ(find(p.delegate, "xnnpack#1", "num_threads")->as_int(), 1);
  EXPECT_EQ(find(p.execute, "xnnpack", "batch_hint")->as_int(), 8);
}

TEST_F(Parser, TomlErrorsGiveFileLineAndColumn) {
  ParsedOptions p;
  Status type = parse_options_toml("[load.xnnpack]\nweight_cache = true\nnum_threads = \"four\"\n",
                                   "options.toml", Validation::Strict, &p);
  EXPECT_EQ(type.code(), Error::OptionTypeMismatch);
  EXPECT_STREQ(type.message(),
               "options.toml:3:15: xnnpack: option 'num_threads' expects int, got string "
               "\"four\"");
  Status key = parse_options_toml("[load.xnnpack]\nnum_thread = 4\n", "options.toml",
                                  Validation::Strict, &p);
  EXPECT_STREQ(key.message(),
               "options.toml:2:1: xnnpack: unknown option 'num_thread' (did you mean "
               "'num_threads'?)");
  Status range =
      parse_options_toml("[global.opencl]\nplatform = 99\n", "o.toml", Validation::Strict, &p);
  EXPECT_STREQ(range.message(),
               "o.toml:2:12: opencl: option 'platform' = 99 is out of range [0, 8]");
  Status backend =
      parse_options_toml("\n[load.openc]\nratio = 0.5\n", "o.toml", Validation::Strict, &p);
  EXPECT_EQ(backend.code(), Error::OptionUnknownBackend);
  EXPECT_EQ(std::string(backend.message()).rfind("o.toml:2:7: unknown backend 'openc'", 0), 0u)
      << backend.message();
  Status section =
      parse_options_toml("[loads.xnnpack]\nnum_threads = 1\n", "o.toml", Validation::Strict, &p);
  EXPECT_EQ(section.code(), Error::OptionParseError);
  EXPECT_STREQ(section.message(),
               "o.toml:1:2: unknown section 'loads' (expected global, load, delegate or execute)");
  Status array = parse_options_toml("[load.xnnpack]\nnum_threads = [1, 2]\n", "o.toml",
                                    Validation::Strict, &p);
  EXPECT_STREQ(array.message(),
               "o.toml:2:15: xnnpack: option 'num_threads' expects int, got array");
  Status scope =
      parse_options_toml("[load.xnnpack]\nbatch_hint = 2\n", "o.toml", Validation::Strict, &p);
  EXPECT_EQ(scope.code(), Error::OptionWrongScope);
  Status id_outside = parse_options_toml("[load.\"xnnpack#0\"]\nnum_threads = 2\n", "o.toml",
                                         Validation::Strict, &p);
  EXPECT_EQ(id_outside.code(), Error::OptionParseError);
  EXPECT_TRUE(p.empty());
}

TEST_F(Parser, TomlSyntaxErrors) {
  ParsedOptions p;
  Status s = parse_options_toml("[load.xnnpack]\nnum_threads = \n", "options.toml",
                                Validation::Strict, &p);
  EXPECT_EQ(s.code(), Error::OptionParseError);
  EXPECT_EQ(std::string(s.message()).rfind("options.toml:2:", 0), 0u) << s.message();
}

TEST_F(Parser, TomlFile) {
  std::string path = ::testing::TempDir() + "tessera_parser_test.toml";
  {
    std::ofstream f(path);
    f << kToml;
  }
  ParsedOptions p;
  ASSERT_OK(parse_options_file(path, Validation::Strict, &p));
  EXPECT_EQ(find(p.global, "xnnpack", "num_threads")->as_int(), 4);
  std::remove(path.c_str());
  Status missing = parse_options_file(path, Validation::Strict, &p);
  EXPECT_EQ(missing.code(), Error::NotFound);
  EXPECT_NE(std::string(missing.message()).find("cannot open options file"), std::string::npos);
}

TEST_F(Parser, LenientSkipsUnknownBackendsAndKeys) {
  LogCapture log;
  ParsedOptions p;
  ASSERT_OK(
      parse_options_toml("[load.coreml]\nunits = \"all\"\n[load.xnnpack]\nfuture = 1\n"
                         "num_threads = 2\n",
                         "o.toml", Validation::Lenient, &p));
  EXPECT_EQ(find(p.load, "xnnpack", "num_threads")->as_int(), 2);
  EXPECT_EQ(find(p.load, "xnnpack", "future"), nullptr);
  EXPECT_TRUE(log.contains("o.toml:1:7: unknown backend 'coreml'"));
  EXPECT_TRUE(log.contains("o.toml:4:1: xnnpack: unknown option 'future'"));
  EXPECT_EQ(
      parse_options_toml("[load.xnnpack]\nnum_threads = true\n", "o.toml", Validation::Lenient, &p)
          .code(),
      Error::OptionTypeMismatch);
}

TEST_F(Parser, MergeLaterSourcesWinAndConvert) {
  ParsedOptions file;
  ASSERT_OK(parse_options_toml(kToml, "options.toml", Validation::Strict, &file));
  ParsedOptions flags;
  ASSERT_OK(parse_option_assignment("opencl.device_type=cpu", OptionLevel::Load, Validation::Strict,
                                    "--option", &flags));
  file.merge(flags);
  EXPECT_EQ(find(file.load, "opencl", "device_type")->as_enum().name, "cpu");
  EXPECT_EQ(find(file.load, "opencl", "cache_dir")->as_string(), "/data/cl");

  LoadBackendOptionsMap load;
  ASSERT_OK(file.to_load_map(&load));
  EXPECT_EQ(load.get_options("opencl").size(), 3u);
  DelegateOptionsMap delegates;
  ASSERT_OK(file.to_delegate_map(&delegates));
  EXPECT_EQ(delegates.get_options("xnnpack#1")[0].as_int(), 1);
  ExecuteOptions execute;
  ASSERT_OK(file.to_execute_options(&execute));
  EXPECT_EQ(execute.get_options("xnnpack")[0].as_int(), 8);
  ASSERT_OK(file.apply_global());
  BackendOptions<1> q;
  ASSERT_OK(q.set(kNumThreads, 0));
  ASSERT_OK(get_option("xnnpack", q.mutable_view()));
  EXPECT_EQ(*q.get(kNumThreads), 4);

  // The parsed values resolve like any other.
  ResolvedOptions r;
  ASSERT_OK(resolve_options("opencl", opencl_.backend(), "opencl#0", {}, &load, &delegates,
                            Validation::Strict, &r));
  EXPECT_EQ(r.get(kDeviceType)->name, "cpu");
  EXPECT_EQ(r.get(kDeviceType)->index, 0);
}

// Every parsed value carries the front end it came from, and the origin survives merging,
// the load maps, the global store and resolution, so reports can name it.
TEST_F(Parser, OriginsNameTheFrontEnd) {
  ParsedOptions p;
  ASSERT_OK(
      parse_options_env("xnnpack.num_threads=2;opencl.device_type=gpu", Validation::Strict, &p));
  EXPECT_EQ(find(p.load, "xnnpack", "num_threads")->origin(), "TESSERA_OPTIONS");
  ASSERT_OK(parse_options_toml(kToml, "options.toml", Validation::Strict, &p));
  EXPECT_EQ(find(p.global, "xnnpack", "num_threads")->origin(), "options.toml:3");
  EXPECT_EQ(find(p.global, "xnnpack", "perf_mode")->origin(), "options.toml:4");
  EXPECT_EQ(find(p.load, "opencl", "device_type")->origin(), "options.toml:7");  // the file won
  EXPECT_EQ(find(p.delegate, "xnnpack#1", "num_threads")->origin(), "options.toml:12");
  EXPECT_EQ(find(p.execute, "xnnpack", "batch_hint")->origin(), "options.toml:15");
  EXPECT_EQ(find(p.load, "xnnpack", "num_threads")->origin(), "TESSERA_OPTIONS");
  ASSERT_OK(parse_option_assignment("xnnpack.num_threads=3", OptionLevel::Load, Validation::Strict,
                                    "--option", &p));
  ASSERT_OK(parse_option_assignment("xnnpack#0.num_threads=5", OptionLevel::Delegate,
                                    Validation::Strict, "--delegate-option", &p));
  ASSERT_OK(parse_option_assignment("xnnpack.ratio=0.25", OptionLevel::Global, Validation::Strict,
                                    "--global-option", &p));
  EXPECT_EQ(find(p.load, "xnnpack", "num_threads")->origin(), "--option");
  EXPECT_EQ(find(p.delegate, "xnnpack#0", "num_threads")->origin(), "--delegate-option");
  EXPECT_EQ(find(p.global, "xnnpack", "ratio")->origin(), "--global-option");

  // A long file name keeps its end and the line.
  ParsedOptions deep;
  const std::string path = "/very/long/directory/name/for/the/configuration/of/tessera.toml";
  ASSERT_OK(
      parse_options_toml("[load.xnnpack]\nnum_threads = 1\n", path, Validation::Strict, &deep));
  std::string_view origin = find(deep.load, "xnnpack", "num_threads")->origin();
  EXPECT_EQ(origin.size(), kMaxOptionOriginLength);
  EXPECT_EQ(origin.substr(0, 3), "...");
  EXPECT_EQ(origin.substr(origin.size() - 15), "/tessera.toml:2") << origin;

  // Through the maps, the global store and resolution.
  LoadBackendOptionsMap load;
  DelegateOptionsMap delegates;
  ASSERT_OK(p.to_load_maps(&load, &delegates));
  ASSERT_OK(p.apply_global());
  ResolvedOptions r;
  ASSERT_OK(resolve_options("xnnpack", xnnpack_.backend(), "xnnpack#0", {}, &load, &delegates,
                            Validation::Strict, &r));
  auto origin_of = [&](const char* key) { return r.origin(static_cast<size_t>(r.find(key))); };
  EXPECT_EQ(origin_of("num_threads"), "--delegate-option");
  EXPECT_EQ(origin_of("ratio"), "--global-option");
  EXPECT_EQ(origin_of("perf_mode"), "options.toml:4");
  EXPECT_EQ(origin_of("weight_cache"), "");  // default
  std::string explained = explain_options(r);
  EXPECT_NE(explained.find("xnnpack#0  num_threads = 5  (delegate (--delegate-option))"),
            std::string::npos)
      << explained;
  EXPECT_NE(explained.find("xnnpack#0  perf_mode = throughput  (global (options.toml:4))"),
            std::string::npos)
      << explained;
  EXPECT_NE(explained.find("xnnpack#0  weight_cache = true  (default)\n"), std::string::npos)
      << explained;
  ASSERT_OK(reset_backend_options("xnnpack"));
}

}  // namespace
}  // namespace tessera::test
