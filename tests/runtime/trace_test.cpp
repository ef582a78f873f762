// Traces: spans for program load, method load, delegate init, execute, each delegate call and
// each operator a backend reports, written as Chrome trace-event JSON and read back here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessera/backend/execute_options.h"
#include "tessera/backend/option_key.h"
#include "tessera/backend/profile_buffer.h"
#include "tessera/core/trace.h"
#include "tessera/runtime/data_loader.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program.h"
#include "tests/testing/test_programs.h"

namespace tessera {
namespace {

using nlohmann::json;

constexpr OptionKey<bool> kProfile{"profile"};

struct Span_ {
  std::string name, cat, detail;
  double ts, dur;
  int64_t tid;
  double end() const { return ts + dur; }
  bool contains(const Span_& o) const {
    return tid == o.tid && o.ts >= ts - 1e-3 && o.end() <= end() + 1e-3;
  }
};

std::vector<Span_> complete_events(const json& doc) {
  std::vector<Span_> out;
  for (const json& e : doc.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    Span_ s{e.at("name"), e.at("cat"), e.contains("args") ? e["args"].value("detail", "") : "",
            e.at("ts"),   e.at("dur"), e.at("tid")};
    out.push_back(s);
  }
  return out;
}

std::vector<Span_> of(const std::vector<Span_>& all, const std::string& cat) {
  std::vector<Span_> out;
  std::copy_if(all.begin(), all.end(), std::back_inserter(out),
               [&](const Span_& s) { return s.cat == cat; });
  return out;
}

class TraceTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (Trace::running()) (void)Trace::stop();
  }
};

TEST_F(TraceTest, SpansNestNameWhatTheyTimeAndAddUp) {
  // Two delegates of 8 MiB each (a few ms per call), so the runtime's own work between the
  // calls is small against them.
  auto bytes = testing::delegate_chain_program({"xnnpack", "portable"}, {}, {1024, 2048}).build();
  ASSERT_TRUE(bytes.ok());
  testing::AlignedBuffer buffer(*bytes);
  BufferDataLoader loader(buffer.data(), buffer.size());

  ASSERT_TRUE(Trace::start().is_ok());
  auto program = Program::load(&loader);
  ASSERT_TRUE(program.ok()) << program.status().message();
  auto method = program->load_method("forward");
  ASSERT_TRUE(method.ok()) << method.status().message();
  ExecuteOptions exec;
  ASSERT_TRUE(exec.set("xnnpack", kProfile, true).is_ok());
  std::vector<ProfileEvent> storage(256);
  ProfileBuffer profile(Span<ProfileEvent>(storage.data(), storage.size()));
  constexpr int kRuns = 3;
  for (int i = 0; i < kRuns; ++i) {
    profile.clear();
    ASSERT_TRUE(method->execute(exec, &profile).is_ok());
  }
  auto events = Trace::stop();
  ASSERT_TRUE(events.ok());
  EXPECT_FALSE(Trace::running());

  // Profile events now carry their start and their delegate.
  ASSERT_GT(profile.events().size(), 0u);
  for (const ProfileEvent& e : profile.events()) {
    ASSERT_NE(e.delegate, nullptr) << e.name;
    EXPECT_STREQ(e.delegate, "xnnpack#0");
    EXPECT_GT(e.start_us, 0.0) << e.name;
  }

  const json doc = json::parse(Trace::to_chrome_json(*events));
  const std::vector<Span_> all = complete_events(doc);
  const auto loads = of(all, "load"), inits = of(all, "init"), executes = of(all, "execute"),
             delegates = of(all, "delegate"), operators = of(all, "operator");
  ASSERT_EQ(loads.size(), 2u);
  EXPECT_EQ(loads[0].name, "program load");
  EXPECT_EQ(loads[1].name, "method load forward");
  ASSERT_EQ(inits.size(), 2u);
  EXPECT_EQ(inits[0].name, "init xnnpack#0");
  EXPECT_EQ(inits[0].detail, "backend=xnnpack");
  EXPECT_EQ(inits[1].name, "init portable#0");
  for (const Span_& i : inits) EXPECT_TRUE(loads[1].contains(i)) << i.name;
  ASSERT_EQ(executes.size(), static_cast<size_t>(kRuns));
  ASSERT_EQ(delegates.size(), 2u * kRuns);
  EXPECT_FALSE(operators.empty());

  double best_share = 0;
  for (const Span_& x : executes) {
    EXPECT_EQ(x.name, "execute forward");
    EXPECT_GE(x.ts, loads[1].end());
    double inside = 0;
    int calls = 0;
    for (const Span_& d : delegates) {
      if (!x.contains(d)) continue;
      ++calls;
      inside += d.dur;
      EXPECT_TRUE(d.name == "xnnpack#0" || d.name == "portable#0") << d.name;
      EXPECT_EQ(d.detail, "backend=" + d.name.substr(0, d.name.find('#')));
    }
    EXPECT_EQ(calls, 2);
    best_share = std::max(best_share, inside / x.dur);
  }
  // The delegate calls of an execute add up to its span within 5 % (best of the runs: one
  // preemption of this test between two calls must not fail it).
  EXPECT_GE(best_share, 0.95);
  EXPECT_LE(best_share, 1.0 + 1e-6);
  // Each operator sits inside a call of the delegate that reported it.
  for (const Span_& o : operators) {
    EXPECT_EQ(o.detail, "delegate=xnnpack#0");
    const bool inside = std::any_of(delegates.begin(), delegates.end(), [&](const Span_& d) {
      return d.name == "xnnpack#0" && d.ts <= o.ts + 1.0 && o.end() <= d.end() + 1.0;
    });
    EXPECT_TRUE(inside) << o.name << " at " << o.ts;
  }
  // Metadata names the process and its threads.
  bool process_named = false;
  for (const json& e : doc["traceEvents"]) process_named |= e["name"] == "process_name";
  EXPECT_TRUE(process_named);
}

TEST_F(TraceTest, NothingIsRecordedWithoutARunningTrace) {
  Trace::record("load", "dropped", 0, 1);
  { TraceSpan span("load", "dropped too"); }
  ASSERT_TRUE(Trace::start().is_ok());
  Trace::record("load", "kept", Trace::now_us(), 1, "x=1");
  auto events = Trace::stop();
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].name, "kept");
  EXPECT_EQ((*events)[0].detail, "x=1");
  EXPECT_GT((*events)[0].tid, 0u);
}

TEST_F(TraceTest, MisuseAndWriteErrorsAreClear) {
  Result<std::vector<TraceEvent>> none = Trace::stop();
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), Error::InvalidState);
  ASSERT_TRUE(Trace::start().is_ok());
  Status again = Trace::start();
  EXPECT_EQ(again.code(), Error::InvalidState);
  EXPECT_NE(std::string(again.message()).find("already running"), std::string::npos);
  auto events = Trace::stop();
  ASSERT_TRUE(events.ok());
  Status st = Trace::write_chrome_json(*events, "/nonexistent-dir/trace.json");
  EXPECT_EQ(st.code(), Error::AccessFailed);
  EXPECT_NE(std::string(st.message()).find("/nonexistent-dir/trace.json"), std::string::npos)
      << st.message();
}

TEST_F(TraceTest, WrittenFileIsTheJson) {
  ASSERT_TRUE(Trace::start().is_ok());
  { TraceSpan span("load", "with \"quotes\" and \\ backslash"); }
  auto events = Trace::stop();
  ASSERT_TRUE(events.ok());
  const std::string path = ::testing::TempDir() + "/tessera_trace_test.json";
  ASSERT_TRUE(Trace::write_chrome_json(*events, path).is_ok());
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const json doc = json::parse(text.str());
  const auto all = complete_events(doc);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].name, "with \"quotes\" and \\ backslash");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tessera
