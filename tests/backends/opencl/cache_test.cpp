// The program cache and the tuning file: cold and warm loads, cache modes, and the table of
// broken files (truncated, flipped bytes, wrong version, other device, empty, unwritable
// directory), each recompiled or re-tuned with a warning, never a crash or a wrong result.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include "harness.h"
#include "tessera/backends/opencl/options.h"
#include "test_util.h"

namespace tessera::opencl::testing {
namespace {

LoadBackendOptionsMap cache_options(const std::string& dir, const char* mode = "readwrite") {
  LoadBackendOptionsMap load;
  EXPECT_TRUE(load.set("opencl", kCacheDir, dir).is_ok());
  EXPECT_TRUE(load.set("opencl", kCacheMode, EnumValue{mode}).is_ok());
  return load;
}

// Initialises and runs `g` and checks the result against the portable kernels.
::testing::AssertionResult runs_correctly(Session& s, const GraphCase& g) {
  std::vector<Floats> in = random_inputs(g, 7);
  std::vector<Floats> out;
  Status st = s.run(in, &out);
  if (!st.is_ok()) return ::testing::AssertionFailure() << st.message();
  Result<std::vector<Floats>> want = run_portable(g, in);
  if (!want.ok()) return ::testing::AssertionFailure() << want.status().message();
  return close(out, *want);
}

bool any_contains(const std::vector<std::string>& lines, const std::string& text) {
  for (const std::string& l : lines) {
    if (l.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(OpenClCache, ColdThenWarm) {
  TempDir dir;
  GraphCase g = small_net();
  LoadBackendOptionsMap load = cache_options(dir.path());
  double cold_ms = 0.0;
  {
    Session cold;
    ASSERT_TRUE(cold.init(g, with(load)).is_ok());
    EXPECT_FALSE(cold.summary().program.from_cache);
    EXPECT_TRUE(cold.summary().program.cache_written);
    EXPECT_TRUE(runs_correctly(cold, g));
    cold_ms = cold.summary().program.ms;
  }
  ASSERT_EQ(dir.files().size(), 1u);
  EXPECT_NE(dir.files()[0].find(".clbin"), std::string::npos);
  Session warm;
  ASSERT_TRUE(warm.init(g, with(load)).is_ok());
  EXPECT_TRUE(warm.summary().program.from_cache);
  EXPECT_TRUE(runs_correctly(warm, g));
  std::printf("[ figures  ] program: cold %.1f ms, warm %.1f ms\n", cold_ms, warm.summary().program.ms);
}

TEST(OpenClCache, ReadModeNeverWritesOffModeIgnores) {
  TempDir dir;
  GraphCase g = small_net();
  LoadBackendOptionsMap read = cache_options(dir.path(), "read");
  Session s;
  ASSERT_TRUE(s.init(g, with(read)).is_ok());
  EXPECT_FALSE(s.summary().program.cache_written);
  EXPECT_TRUE(dir.files().empty());
  LoadBackendOptionsMap rw = cache_options(dir.path());
  Session w;
  ASSERT_TRUE(w.init(g, with(rw)).is_ok());
  LoadBackendOptionsMap off = cache_options(dir.path(), "off");
  Session o;
  ASSERT_TRUE(o.init(g, with(off)).is_ok());
  EXPECT_FALSE(o.summary().program.from_cache);
  EXPECT_TRUE(o.summary().program.cache_path.empty());
}

enum class Damage { Truncated, FlippedByte, WrongVersion, OtherDevice, Empty, HeaderOnly };

const char* damage_name(Damage d) {
  switch (d) {
    case Damage::Truncated: return "truncated";
    case Damage::FlippedByte: return "flipped byte";
    case Damage::WrongVersion: return "wrong version";
    case Damage::OtherDevice: return "other device";
    case Damage::Empty: return "empty";
    case Damage::HeaderOnly: return "header only";
  }
  return "?";
}

void damage(const std::string& path, Damage d) {
  std::vector<char> bytes = read_bytes(path);
  ASSERT_GT(bytes.size(), 64u);
  switch (d) {
    case Damage::Truncated: bytes.resize(bytes.size() / 2); break;
    case Damage::FlippedByte: bytes[bytes.size() - 10] ^= 0x5a; break;
    case Damage::WrongVersion: bytes[8] = 99; break;
    case Damage::OtherDevice: bytes[16] ^= 0xff; break;
    case Damage::Empty: bytes.clear(); break;
    case Damage::HeaderOnly: bytes.resize(48); break;
  }
  write_bytes(path, bytes);
}

const Damage kAllDamage[] = {Damage::Truncated, Damage::FlippedByte, Damage::WrongVersion,
                             Damage::OtherDevice, Damage::Empty, Damage::HeaderOnly};

TEST(OpenClCache, BrokenEntriesRecompileWithWarning) {
  GraphCase g = small_net();
  for (Damage d : kAllDamage) {
    SCOPED_TRACE(damage_name(d));
    TempDir dir;
    LoadBackendOptionsMap load = cache_options(dir.path());
    {
      Session first;
      ASSERT_TRUE(first.init(g, with(load)).is_ok());
    }
    ASSERT_EQ(dir.files().size(), 1u);
    damage(dir.file(dir.files()[0]), d);
    LogCapture log;
    Session s;
    ASSERT_TRUE(s.init(g, with(load)).is_ok());
    EXPECT_FALSE(s.summary().program.from_cache);
    EXPECT_TRUE(any_contains(log.warnings(), "recompiling")) << "no warning";
    EXPECT_TRUE(runs_correctly(s, g));
    std::printf("[ table    ] cache entry %-13s -> recompiled, warning: %s\n", damage_name(d),
                log.warnings().empty() ? "(none)" : log.warnings()[0].c_str());
    // Rewritten: the next load uses it.
    Session again;
    ASSERT_TRUE(again.init(g, with(load)).is_ok());
    EXPECT_TRUE(again.summary().program.from_cache);
  }
}

TEST(OpenClCache, UnwritableDirectoryIsAWarning) {
  TempDir dir;
  const std::string blocker = dir.file("not-a-dir");
  write_bytes(blocker, {'x'});
  GraphCase g = small_net();
  LoadBackendOptionsMap load = cache_options(blocker + "/cache");
  LogCapture log;
  Session s;
  ASSERT_TRUE(s.init(g, with(load)).is_ok());
  EXPECT_FALSE(s.summary().program.cache_written);
  EXPECT_TRUE(any_contains(log.warnings(), "cache_dir")) << "no warning";
  EXPECT_TRUE(runs_correctly(s, g));
  std::printf("[ table    ] cache dir unwritable -> compiled, warning: %s\n",
              log.warnings().empty() ? "(none)" : log.warnings()[0].c_str());
}

LoadBackendOptionsMap tuning_options(const std::string& file, const char* level) {
  LoadBackendOptionsMap load;
  EXPECT_TRUE(load.set("opencl", kTuningFile, file).is_ok());
  EXPECT_TRUE(load.set("opencl", kTuningLevel, EnumValue{level}).is_ok());
  return load;
}

TEST(OpenClTuning, SearchOnceThenReadFromFile) {
  TempDir dir;
  GraphCase g = small_net();
  const std::string file = dir.file("tuning.bin");
  LoadBackendOptionsMap load = tuning_options(file, "rapid");
  {
    Session first;
    ASSERT_TRUE(first.init(g, with(load)).is_ok());
    EXPECT_EQ(first.summary().tuned, first.summary().kernels);
    EXPECT_TRUE(runs_correctly(first, g));
  }
  Session second;
  ASSERT_TRUE(second.init(g, with(load)).is_ok());
  EXPECT_EQ(second.summary().tuned, 0u);
  EXPECT_EQ(second.summary().tuning_loaded, second.summary().kernels);
  EXPECT_TRUE(runs_correctly(second, g));
  // Level none still uses a tuning file's entries.
  LoadBackendOptionsMap none = tuning_options(file, "none");
  Session third;
  ASSERT_TRUE(third.init(g, with(none)).is_ok());
  EXPECT_EQ(third.summary().tuning_loaded, third.summary().kernels);
}

PolicyDecision policy_of(Policy effective) {
  PolicyDecision d;
  d.effective = effective;
  d.expensive_load_transforms = effective != Policy::PowerSaver;
  return d;
}

TEST(OpenClTuning, AutoLevelFollowsPolicyAndTuningFile) {
  TempDir dir;
  GraphCase g = small_net();
  struct Case {
    Policy policy;
    bool with_file;
    const char* level;
    const char* reason_part;
  };
  const Case cases[] = {
      {Policy::Latency, true, "normal", "8 sizes under policy latency"},
      {Policy::Balanced, true, "rapid", "4 sizes under policy balanced"},
      {Policy::Latency, false, "none", "no tuning_file"},
      {Policy::PowerSaver, true, "none", "no load-time search under policy power_saver"},
  };
  int n = 0;
  for (const Case& c : cases) {
    LoadBackendOptionsMap load;  // tuning_level left at its default, auto
    const std::string file = dir.file("tuning" + std::to_string(n++) + ".bin");
    if (c.with_file) {
      ASSERT_TRUE(load.set("opencl", kTuningFile, file).is_ok());
    }
    const PolicyDecision policy = policy_of(c.policy);
    RunOptions options = with(load);
    options.policy = &policy;
    Session s;
    ASSERT_TRUE(s.init(g, options).is_ok()) << c.level;
    const DerivedValue* d = s.derived().find("tuning_level");
    ASSERT_NE(d, nullptr) << c.level;
    EXPECT_STREQ(d->value, c.level);
    EXPECT_NE(std::string(d->reason).find(c.reason_part), std::string::npos) << d->reason;
    // A search ran exactly when a level other than none was derived.
    EXPECT_EQ(s.summary().tuned, std::string(c.level) == "none" ? 0u : s.summary().kernels)
        << c.level;
    EXPECT_TRUE(runs_correctly(s, g));
  }
  // A level the application set is used as set and not reported as derived.
  LoadBackendOptionsMap set = tuning_options(dir.file("set.bin"), "rapid");
  const PolicyDecision saver = policy_of(Policy::PowerSaver);
  RunOptions options = with(set);
  options.policy = &saver;
  Session s;
  ASSERT_TRUE(s.init(g, options).is_ok());
  EXPECT_EQ(s.derived().find("tuning_level"), nullptr);
  EXPECT_EQ(s.summary().tuned, s.summary().kernels);
}

TEST(OpenClTuning, BrokenFilesRetuneWithWarning) {
  GraphCase g = small_net();
  for (Damage d : kAllDamage) {
    SCOPED_TRACE(damage_name(d));
    TempDir dir;
    const std::string file = dir.file("tuning.bin");
    LoadBackendOptionsMap load = tuning_options(file, "rapid");
    {
      Session first;
      ASSERT_TRUE(first.init(g, with(load)).is_ok());
    }
    std::vector<char> bytes = read_bytes(file);
    if (bytes.size() <= 64 && d != Damage::Empty && d != Damage::WrongVersion &&
        d != Damage::OtherDevice && d != Damage::Truncated) {
      continue;  // too small to damage that way
    }
    if (d == Damage::FlippedByte || d == Damage::HeaderOnly) {
      if (d == Damage::FlippedByte) bytes[bytes.size() - 3] ^= 0x5a;
      else bytes.resize(48);
      write_bytes(file, bytes);
    } else if (d == Damage::Truncated) {
      bytes.resize(bytes.size() - 5);
      write_bytes(file, bytes);
    } else if (d == Damage::WrongVersion) {
      bytes[8] = 99;
      write_bytes(file, bytes);
    } else if (d == Damage::OtherDevice) {
      bytes[16] ^= 0xff;
      write_bytes(file, bytes);
    } else {
      write_bytes(file, {});
    }
    LogCapture log;
    Session s;
    ASSERT_TRUE(s.init(g, with(load)).is_ok());
    EXPECT_EQ(s.summary().tuned, s.summary().kernels);
    EXPECT_TRUE(any_contains(log.warnings(), "tuning file")) << "no warning";
    EXPECT_TRUE(runs_correctly(s, g));
    std::printf("[ table    ] tuning file %-13s -> re-tuned, warning: %s\n", damage_name(d),
                log.warnings().empty() ? "(none)" : log.warnings()[0].c_str());
  }
}

TEST(OpenClTuning, UnwritableFileIsAWarning) {
  TempDir dir;
  const std::string blocker = dir.file("not-a-dir");
  write_bytes(blocker, {'x'});
  GraphCase g = small_net();
  LoadBackendOptionsMap load = tuning_options(blocker + "/tuning.bin", "rapid");
  LogCapture log;
  Session s;
  ASSERT_TRUE(s.init(g, with(load)).is_ok());
  EXPECT_TRUE(any_contains(log.warnings(), "tuning file not written")) << "no warning";
  EXPECT_TRUE(runs_correctly(s, g));
}

}  // namespace
}  // namespace tessera::opencl::testing
