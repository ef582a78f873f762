// The selection cache (LoadOptions::selection = auto on a delegate the compiler left selectable):
// measured once, remembered, read back on the next load; missed when any key field changes;
// damaged, foreign or stale entries re-measure with a warning; concurrent loads (threads and
// processes) measure once and leave one valid entry; an unusable directory is a warning.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tessera/backend/context.h"
#include "tessera/backend/device_info.h"
#include "tessera/backend/integrity_file.h"
#include "tessera/backend/options_map.h"
#include "tessera/backend/registry.h"
#include "tessera/backend/testing/stub_backend.h"
#include "tessera/core/log.h"
#include "tessera/runtime/data_loader.h"
#include "tessera/runtime/delegate_runner.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program.h"
#include "tessera/runtime/selection_cache.h"
#include "tests/testing/selection_clocks.h"
#include "tests/testing/test_programs.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

constexpr OptionSpec kFastSchema[] = {
    OptionSpec::integer(OptionKey<int64_t>{"num_threads"}, 0, 0, 64, kInitScopes, "threads"),
};
constexpr OptionKey<int64_t> kThreads{"num_threads"};

std::mutex g_log_mutex;
std::vector<std::string> g_warnings;

void capture(LogLevel level, const char* message, void*) {
  if (level != LogLevel::Warning) return;
  std::lock_guard<std::mutex> lock(g_log_mutex);
  g_warnings.emplace_back(message);
}

Status copy_input(BackendExecutionContext&, DelegateHandle*, Span<EValue*> args) {
  std::memcpy(args[1]->to_tensor().data(), args[0]->to_tensor().data(),
              args[0]->to_tensor().nbytes());
  return Status::ok();
}

// The clocks of the tests of disturbed measurements, which the stubs move.
double g_wall_ms = 0, g_cpu_ms = 0;
double fake_wall_ms() {
  return g_wall_ms;
}
double fake_cpu_ms() {
  return g_cpu_ms;
}

// device_fixture_ as `auto` sees it while another process keeps one CPU busy: it leaves that CPU
// alone and makes its workers sleep.
DeviceInfo with_busy_neighbour(const DeviceInfo& device) {
  DeviceInfo busy = device;
  busy.load.known = true;
  busy.load.runnable_tasks = 2;
  busy.load.busy_cpus = 1.0;
  busy.load.window_ms = 50;
  return busy;
}

class SelectionCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tessera_selection_cache_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    device_fixture_ = DeviceInfo::get();
    device_fixture_.usable_cpus = 2;
    device_fixture_.usable_performance_cores = 1;
    device_fixture_.cpu_quota = 0;
    device_ = &device_fixture_;
    busy_fixture_ = with_busy_neighbour(device_fixture_);
    slow_ = new testing::StubBackend();
    slow_->on_execute = [](BackendExecutionContext& c, DelegateHandle* h, Span<EValue*> args) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      return copy_input(c, h, args);
    };
    fast_ = new testing::StubBackend(kFastSchema);
    fast_->on_execute = copy_input;
    ASSERT_TRUE(register_backend("sc_slow", std::unique_ptr<BackendInterface>(slow_)).is_ok());
    ASSERT_TRUE(register_backend("sc_fast", std::unique_ptr<BackendInterface>(fast_)).is_ok());
    program_ = load(selectable_program({2, 4}));
    {
      std::lock_guard<std::mutex> lock(g_log_mutex);
      g_warnings.clear();
    }
    set_log_sink(capture);
  }
  void TearDown() override {
    set_log_sink(nullptr);
    loaded_.clear();
    (void)unregister_backend("sc_slow");
    (void)unregister_backend("sc_fast");
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // One Relu delegate compiled for sc_slow that sc_fast may also run (as tessera-compile
  // records it without --backends).
  static ir::ProgramBuilder selectable_program(std::vector<int64_t> shape) {
    ir::ProgramBuilder pb = testing::delegate_chain_program({"sc_slow"}, {}, shape);
    pb.methods()[0].delegates[0].candidates = {"sc_slow", "sc_fast"};
    return pb;
  }
  Program* load(const ir::ProgramBuilder& pb) {
    auto loaded = testing::load_built_program(pb);
    EXPECT_TRUE(loaded.ok()) << loaded.status().message();
    loaded_.push_back(std::make_unique<testing::LoadedProgram>(std::move(*loaded)));
    return loaded_.back()->program.get();
  }

  // sc_fast runs on the calling thread and is off its CPU for half of every run (another
  // process has it), on the fake clocks; sc_slow takes four times as long, on its CPU.
  void half_off_cpu() {
    fast_->on_calling_thread = true;
    fast_->on_execute = [](BackendExecutionContext& c, DelegateHandle* h, Span<EValue*> args) {
      g_wall_ms += 1.0;
      g_cpu_ms += 0.5;
      return copy_input(c, h, args);
    };
    slow_->on_execute = [](BackendExecutionContext& c, DelegateHandle* h, Span<EValue*> args) {
      g_wall_ms += 4.0;
      g_cpu_ms += 4.0;
      return copy_input(c, h, args);
    };
  }

  LoadOptions auto_options() const {
    LoadOptions o;
    o.selection = Selection::Auto;
    o.selection_cache_dir = dir_.c_str();
    o.device_info = device_;
    return o;
  }

  // auto_options() on busy_fixture_.
  LoadOptions busy_options() const {
    LoadOptions o = auto_options();
    o.device_info = &busy_fixture_;
    return o;
  }

  // Loads and returns delegate 0's info (copied; the method is destroyed).
  DelegateInfo load_info(const Program* program, const LoadOptions& o) {
    auto m = program->load_method("forward", nullptr, o);
    EXPECT_TRUE(m.ok()) << m.status().message();
    if (!m.ok()) return {};
    DelegateInfo info = m->delegate_info(0);
    info.options = nullptr;
    info.derived = nullptr;
    return info;
  }

  std::vector<fs::path> entries() const {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir_)) {
      if (e.path().extension() == ".tsel") out.push_back(e.path());
    }
    return out;
  }
  static std::string warnings() {
    std::lock_guard<std::mutex> lock(g_log_mutex);
    std::string all;
    for (const std::string& w : g_warnings) all += w + "\n";
    return all;
  }
  static void clear_warnings() {
    std::lock_guard<std::mutex> lock(g_log_mutex);
    g_warnings.clear();
  }

  testing::WallClockOnlySelection wall_clock_only_;  // the stubs sleep
  std::string dir_;
  // LoadOptions::device_info of auto_options(): a fixed machine for every load of a test, so
  // that the key does not follow this machine's live state (the auto policy's thread count
  // drops while other processes keep CPUs busy, and the key holds it). One performance core:
  // the thread count stays 1 whatever this machine has, so EachKeyFieldChangeIsAMiss's device
  // changes change only the device part of the key.
  DeviceInfo device_fixture_;
  DeviceInfo busy_fixture_;  // the same while a neighbour keeps a CPU busy
  const DeviceInfo* device_ = nullptr;
  testing::StubBackend* slow_ = nullptr;
  testing::StubBackend* fast_ = nullptr;
  std::vector<std::unique_ptr<testing::LoadedProgram>> loaded_;
  Program* program_ = nullptr;
};

TEST_F(SelectionCacheTest, AutoMeasuresOnceThenReadsTheRememberedChoice) {
  const DelegateInfo first = load_info(program_, auto_options());
  EXPECT_STREQ(first.backend, "sc_fast");
  EXPECT_STREQ(first.selection.mode, "measure");
  EXPECT_FALSE(first.selection.cached);
  ASSERT_EQ(entries().size(), 1u);
  EXPECT_EQ(slow_->init_count(), 1);  // measured once as the reference
  EXPECT_EQ(fast_->init_count(), 1);  // measured, and kept to run

  const DelegateInfo second = load_info(program_, auto_options());
  EXPECT_STREQ(second.backend, "sc_fast");
  EXPECT_TRUE(second.selection.cached);
  EXPECT_STREQ(second.selection.mode, "measure");
  // The candidates it was made from are still listed.
  ASSERT_EQ(second.selection.num_candidates, 2u);
  EXPECT_STREQ(second.selection.candidates[0].backend, "sc_slow");
  EXPECT_TRUE(second.selection.candidates[1].chosen);
  EXPECT_GT(second.selection.candidates[0].median_ms, second.selection.candidates[1].median_ms);
  EXPECT_STREQ(second.selection.summary, first.selection.summary);
  // The measurement's notes (the budget it derived) are kept on their own too.
  EXPECT_NE(std::string(first.selection.notes).find("; budget auto: "), std::string::npos)
      << first.selection.notes;
  EXPECT_STREQ(second.selection.notes, first.selection.notes);
  EXPECT_EQ(slow_->init_count(), 1);  // nothing measured again
  EXPECT_EQ(fast_->init_count(), 2);
  EXPECT_EQ(warnings(), "");

  // The entry is readable JSON inside the integrity header.
  std::ifstream f(entries()[0], std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(bytes.find("\"chosen\": true"), std::string::npos);
  EXPECT_NE(bytes.find("delegate=sc_slow#0"), std::string::npos);
}

// The program's part of the key is a hash of its bytes, whether they come from a mapped file
// (copied with pread, never mapped) or from a caller's buffer (read in place): the same program
// both ways reads one remembered choice. The program spans several of the hash's 256 KiB pieces.
TEST_F(SelectionCacheTest, AFileAndABufferOfTheSameProgramShareTheRememberedChoice) {
  ir::ProgramBuilder pb = selectable_program({2, 4});
  std::vector<uint8_t> filler((size_t{600} << 10) + 7);
  for (size_t i = 0; i < filler.size(); ++i) filler[i] = static_cast<uint8_t>(i * 7 + (i >> 11));
  pb.add_constant(filler.data(), filler.size());
  Program* from_buffer = load(pb);
  const DelegateInfo first = load_info(from_buffer, auto_options());
  EXPECT_STREQ(first.selection.mode, "measure");
  EXPECT_FALSE(first.selection.cached);

  const std::string path = dir_ + "-program.tsr";
  ASSERT_TRUE(pb.write(path).is_ok());
  ASSERT_GT(fs::file_size(path), size_t{2} * (256 << 10));
  auto loader = MmapDataLoader::from(path.c_str());
  ASSERT_TRUE(loader.ok()) << loader.status().message();
  auto from_file = Program::load(&*loader);
  ASSERT_TRUE(from_file.ok()) << from_file.status().message();
  const DelegateInfo second = load_info(&*from_file, auto_options());
  EXPECT_TRUE(second.selection.cached);
  EXPECT_STREQ(second.backend, first.backend);
  EXPECT_EQ(entries().size(), 1u);
  EXPECT_EQ(slow_->init_count(), 1);  // measured once, by the first load
  std::remove(path.c_str());
}

// A program loaded from a file is hashed once for its selection key: the hash is remembered in
// the cache directory under the file's identity (a .tphash file), and read back by the next
// load of the same file. A rewritten file, a broken memo or a file that changed too recently to
// be told apart from a change in the same timestamp tick is hashed again; a program in a
// caller's buffer is hashed at every load.
TEST_F(SelectionCacheTest, AProgramFileIsHashedOnceUntilItChanges) {
  const int64_t age_before = internal::set_program_hash_memo_min_age_ms(0);
  const std::string path = dir_ + "-memo.tsr";
  ir::ProgramBuilder pb = selectable_program({2, 4});
  std::vector<uint8_t> filler(size_t{300} << 10);
  for (size_t i = 0; i < filler.size(); ++i) filler[i] = static_cast<uint8_t>(i * 13 + (i >> 9));
  pb.add_constant(filler.data(), filler.size());
  ASSERT_TRUE(pb.write(path).is_ok());
  auto memos = [&] {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir_)) {
      if (e.path().extension() == ".tphash") out.push_back(e.path());
    }
    return out;
  };
  // Writes `b` over the file until its identity differs from the one before (a write within the
  // same timestamp tick would keep it: the case the memo's minimum age guards against, set to
  // zero here).
  auto rewrite = [&](const ir::ProgramBuilder& b) {
    auto identity = [&] {
      FileIdentity id;
      auto loader = MmapDataLoader::from(path.c_str());
      EXPECT_TRUE(loader.ok() && loader->file_identity(&id));
      return id;
    };
    const FileIdentity before = identity();
    for (int i = 0; i < 200; ++i) {
      ASSERT_TRUE(b.write(path).is_ok());
      const FileIdentity now = identity();
      if (now.inode != before.inode || now.modified_ns != before.modified_ns ||
          now.changed_ns != before.changed_ns) {
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    FAIL() << "the file's identity did not change";
  };
  // Each load maps the file anew, as a new process would.
  auto load_file = [&](const LoadOptions& o) {
    auto loader = MmapDataLoader::from(path.c_str());
    EXPECT_TRUE(loader.ok()) << loader.status().message();
    auto program = Program::load(&*loader);
    EXPECT_TRUE(program.ok()) << program.status().message();
    return load_info(&*program, o);
  };

  uint64_t hashes = internal::program_hashes_computed();
  const DelegateInfo first = load_file(auto_options());
  EXPECT_FALSE(first.selection.cached);
  EXPECT_EQ(internal::program_hashes_computed(), hashes + 1);
  ASSERT_EQ(memos().size(), 1u);

  const DelegateInfo second = load_file(auto_options());
  EXPECT_TRUE(second.selection.cached);
  EXPECT_EQ(internal::program_hashes_computed(), hashes + 1);  // read from the memo

  // A broken memo: hashed again (the same hash: the choice is still found) and rewritten.
  fs::resize_file(memos()[0], 20);
  const DelegateInfo third = load_file(auto_options());
  EXPECT_TRUE(third.selection.cached);
  EXPECT_EQ(internal::program_hashes_computed(), hashes + 2);
  EXPECT_TRUE(load_file(auto_options()).selection.cached);
  EXPECT_EQ(internal::program_hashes_computed(), hashes + 2);

  // Rewritten with other constants: a new identity, hashed, a new key, measured.
  filler[7] ^= 0xff;
  ir::ProgramBuilder changed = selectable_program({2, 4});
  changed.add_constant(filler.data(), filler.size());
  rewrite(changed);
  const DelegateInfo fourth = load_file(auto_options());
  EXPECT_FALSE(fourth.selection.cached);
  EXPECT_EQ(internal::program_hashes_computed(), hashes + 3);
  EXPECT_EQ(memos().size(), 2u);
  EXPECT_EQ(entries().size(), 2u);

  // Changed moments ago (as every file of this test was; the default age is two seconds):
  // hashed at each load, never remembered.
  internal::set_program_hash_memo_min_age_ms(3600 * 1000);
  rewrite(pb);
  EXPECT_TRUE(load_file(auto_options()).selection.cached);  // the first program's choice
  EXPECT_TRUE(load_file(auto_options()).selection.cached);
  EXPECT_EQ(internal::program_hashes_computed(), hashes + 5);
  EXPECT_EQ(memos().size(), 2u);
  internal::set_program_hash_memo_min_age_ms(0);

  // A program in a buffer has no file to name: hashed at every load, no memo.
  hashes = internal::program_hashes_computed();
  EXPECT_TRUE(load_info(load(pb), auto_options()).selection.cached);
  EXPECT_TRUE(load_info(load(pb), auto_options()).selection.cached);
  EXPECT_EQ(internal::program_hashes_computed(), hashes + 2);
  EXPECT_EQ(memos().size(), 2u);
  EXPECT_EQ(warnings(), "");
  internal::set_program_hash_memo_min_age_ms(age_before);
  std::remove(path.c_str());
}

// A measurement in which every timed run of a candidate was disturbed (another process kept
// the CPU through them all) is remembered with disturbed_measurements 1, and the next load
// measures again; a clean one then stands.
TEST_F(SelectionCacheTest, ADisturbedMeasurementIsMeasuredOnceMore) {
  internal::set_selection_clocks({&fake_wall_ms, &fake_cpu_ms});
  half_off_cpu();
  // A set budget: every attempt runs (the auto budget gives the runs twice the first init, and
  // the stubs initialise in no time).
  LoadOptions options = auto_options();
  options.selection_budget_ms = 5000;
  const DelegateInfo first = load_info(program_, options);
  EXPECT_STREQ(first.backend, "sc_fast");
  EXPECT_EQ(first.selection.disturbed_measurements, 1);
  EXPECT_EQ(first.selection.candidates[1].disturbed_runs, 9);  // all nine attempts (6 + 3)
  EXPECT_EQ(first.selection.candidates[1].runs, 9);            // the least disturbed: all alike
  EXPECT_EQ(entries().size(), 1u);
  EXPECT_NE(warnings().find("the next load measures again"), std::string::npos) << warnings();

  fast_->on_calling_thread = false;  // now its runs look the same as each other: undisturbed
  const DelegateInfo second = load_info(program_, options);
  EXPECT_FALSE(second.selection.cached);  // measured again
  EXPECT_EQ(second.selection.disturbed_measurements, 0);
  EXPECT_EQ(second.selection.candidates[1].disturbed_runs, 0);
  const DelegateInfo third = load_info(program_, options);
  EXPECT_TRUE(third.selection.cached);
  EXPECT_EQ(third.selection.disturbed_measurements, 0);
}

// Disturbed twice in a row, the second measurement stands: a machine that stays busy does not
// measure at every load.
TEST_F(SelectionCacheTest, TwoDisturbedMeasurementsInARowStand) {
  internal::set_selection_clocks({&fake_wall_ms, &fake_cpu_ms});
  half_off_cpu();
  EXPECT_EQ(load_info(program_, auto_options()).selection.disturbed_measurements, 1);
  const DelegateInfo second = load_info(program_, auto_options());
  EXPECT_FALSE(second.selection.cached);
  EXPECT_EQ(second.selection.disturbed_measurements, 2);
  EXPECT_NE(warnings().find("twice in a row: remembered as it is"), std::string::npos)
      << warnings();
  const DelegateInfo third = load_info(program_, auto_options());
  EXPECT_TRUE(third.selection.cached);
  EXPECT_EQ(third.selection.disturbed_measurements, 2);
  EXPECT_STREQ(third.backend, "sc_fast");
}

// The key holds the policy as it is on an unloaded machine: a neighbour busy at one load does
// not make a new key, so the choice remembered before is used (before, the busy load's sleeping
// workers were a key field of their own, and it measured again).
TEST_F(SelectionCacheTest, ABusyNeighbourAtOneLoadStillReadsTheRememberedChoice) {
  ASSERT_FALSE(load_info(program_, auto_options()).selection.cached);
  const DelegateInfo info = load_info(program_, busy_options());
  EXPECT_TRUE(info.selection.cached);
  EXPECT_STREQ(info.backend, "sc_fast");
  EXPECT_EQ(info.selection.disturbed_measurements, 0);
  EXPECT_EQ(slow_->init_count(), 1);  // not measured again
  EXPECT_EQ(entries().size(), 1u);
  EXPECT_EQ(warnings(), "");
}

// Measured while a neighbour kept a CPU busy, the candidates ran with the threads `auto` left
// free: the choice is remembered like a disturbed one. Busy loads use it as it is; the next
// unloaded load measures again, and that measurement stands.
TEST_F(SelectionCacheTest, AChoiceMeasuredWhileBusyIsMeasuredAgainWhenUnloaded) {
  const DelegateInfo first = load_info(program_, busy_options());
  EXPECT_FALSE(first.selection.cached);
  EXPECT_STREQ(first.backend, "sc_fast");
  EXPECT_EQ(first.selection.disturbed_measurements, 1);
  EXPECT_NE(warnings().find("measured while other processes kept 1.0 CPUs busy (1 of 1 threads): "
                            "the next load on an unloaded machine measures again"),
            std::string::npos)
      << warnings();
  clear_warnings();

  const DelegateInfo second = load_info(program_, busy_options());
  EXPECT_TRUE(second.selection.cached);  // busy again: measuring now would be no better
  EXPECT_EQ(second.selection.disturbed_measurements, 1);
  EXPECT_EQ(slow_->init_count(), 1);
  EXPECT_EQ(warnings(), "");

  const DelegateInfo third = load_info(program_, auto_options());
  EXPECT_FALSE(third.selection.cached);  // unloaded: measured again
  EXPECT_EQ(third.selection.disturbed_measurements, 0);
  EXPECT_EQ(slow_->init_count(), 2);
  EXPECT_EQ(entries().size(), 1u);  // the same key, rewritten
  const DelegateInfo fourth = load_info(program_, auto_options());
  EXPECT_TRUE(fourth.selection.cached);
  EXPECT_EQ(fourth.selection.disturbed_measurements, 0);
}

TEST_F(SelectionCacheTest, MeasureAlwaysMeasuresAndRemembers) {
  LoadOptions o = auto_options();
  o.selection = Selection::Measure;
  EXPECT_FALSE(load_info(program_, o).selection.cached);
  EXPECT_FALSE(load_info(program_, o).selection.cached);
  EXPECT_EQ(slow_->init_count(), 2);
  ASSERT_EQ(entries().size(), 1u);
  EXPECT_TRUE(load_info(program_, auto_options()).selection.cached);  // auto reads it
}

TEST_F(SelectionCacheTest, APinnedDelegateOrADisabledCacheRunsTheProgramsBackend) {
  // Loaded with selection auto: the program's backend, not measured, and the summary says why.
  auto expect_fixed = [&](Program* program, const char* why) {
    const DelegateInfo info = load_info(program, auto_options());
    EXPECT_STREQ(info.backend, "sc_slow");
    EXPECT_STREQ(info.selection.mode, "fixed");
    EXPECT_STREQ(info.selection.summary, why);
    EXPECT_TRUE(entries().empty());
  };
  expect_fixed(load(testing::delegate_chain_program({"sc_slow"})),
               "fixed: the program records no other backend for it (compiled with --backends, "
               "or no other backend takes every node)");
  // One candidate recorded (no other backend takes every node): nothing to measure either.
  ir::ProgramBuilder one = testing::delegate_chain_program({"sc_slow"});
  one.methods()[0].delegates[0].candidates = {"sc_slow"};
  expect_fixed(load(one),
               "fixed: only 'sc_slow' takes every node of it (the one backend the compiler "
               "recorded)");
  EXPECT_EQ(fast_->init_count(), 0);

  LoadOptions disabled = auto_options();
  disabled.selection_cache_dir = "";
  DelegateInfo info = load_info(program_, disabled);
  EXPECT_STREQ(info.backend, "sc_slow");
  EXPECT_STREQ(info.selection.mode, "fixed");
  EXPECT_NE(std::string(info.selection.summary).find("selection cache is disabled"),
            std::string::npos)
      << info.selection.summary;
  EXPECT_EQ(fast_->init_count(), 0);

  // Measure with the cache disabled measures and writes nothing.
  disabled.selection = Selection::Measure;
  EXPECT_STREQ(load_info(program_, disabled).backend, "sc_fast");
  EXPECT_TRUE(entries().empty());
}

TEST_F(SelectionCacheTest, EachKeyFieldChangeIsAMiss) {
  // One fixed machine for every load: the live one's load state (which the auto policy's thread
  // count follows, and the key with it) may change between loads.
  const DeviceInfo& base = device_fixture_;
  ASSERT_FALSE(load_info(program_, auto_options()).selection.cached);
  ASSERT_TRUE(load_info(program_, auto_options()).selection.cached);

  DeviceInfo other_cpu = base;
  std::snprintf(other_cpu.cpu_name, sizeof other_cpu.cpu_name, "%s", "Another CPU 9000");
  DeviceInfo other_cores = base;
  other_cores.usable_cpus += 4;
  LoadBackendOptionsMap threads;
  ASSERT_TRUE(threads.set("sc_fast", kThreads, 3).is_ok());
  Program* other_program = load(selectable_program({4, 4}));

  struct Change {
    const char* name;
    const Program* program;
    std::function<void(LoadOptions&)> apply;
  };
  const std::vector<Change> changes = {
      {"device: cpu name", program_, [&](LoadOptions& o) { o.device_info = &other_cpu; }},
      {"device: usable cpus", program_, [&](LoadOptions& o) { o.device_info = &other_cores; }},
      {"program content", other_program, [](LoadOptions&) {}},
      {"policy", program_, [](LoadOptions& o) { o.set_policy(Policy::PowerSaver); }},
      {"tolerance", program_, [](LoadOptions& o) { o.selection_tolerance = 1e-3; }},
      {"budget", program_, [](LoadOptions& o) { o.selection_budget_ms = 100; }},
      {"runs per load", program_, [](LoadOptions& o) { o.selection_runs_per_load = 1000; }},
      {"a candidate's options", program_, [&](LoadOptions& o) { o.backend_options = &threads; }},
  };
  size_t files = entries().size();
  for (const Change& c : changes) {
    LoadOptions o = auto_options();
    c.apply(o);
    EXPECT_FALSE(load_info(c.program, o).selection.cached) << c.name;
    EXPECT_TRUE(load_info(c.program, o).selection.cached) << c.name;  // remembered in turn
    // A new entry, except for a new device: the same file name, the header's device differs.
    const bool same_file = std::string(c.name).rfind("device", 0) == 0;
    EXPECT_EQ(entries().size(), files + (same_file ? 0 : 1)) << c.name;
    files = entries().size();
  }
  // The device changes replaced the entry; the original key measures again, with a warning.
  clear_warnings();
  EXPECT_FALSE(load_info(program_, auto_options()).selection.cached);
  EXPECT_NE(warnings().find("unusable"), std::string::npos) << warnings();
}

// selection_cache_max_kb: after a load writes a choice, the least recently used (written or
// read) go, each with its lock file, until the entries fit; 0 is no bound; a bad value fails
// the load before anything is measured.
TEST_F(SelectionCacheTest, TheSizeBoundRemovesTheLeastRecentlyUsedChoicesWithTheirLocks) {
  Program* a = program_;
  Program* b = load(selectable_program({4, 4}));
  Program* c = load(selectable_program({6, 4}));
  LoadOptions unbounded = auto_options();
  unbounded.selection_cache_max_kb = 0;
  ASSERT_FALSE(load_info(a, unbounded).selection.cached);
  ASSERT_EQ(entries().size(), 1u);
  const fs::path entry_a = entries()[0];
  const uintmax_t size = fs::file_size(entry_a);
  ASSERT_FALSE(load_info(b, unbounded).selection.cached);
  ASSERT_EQ(entries().size(), 2u);
  const fs::path entry_b = entries()[0] == entry_a ? entries()[1] : entries()[0];

  // Room for two entries, not three (the three differ in size by a few bytes of their keys).
  LoadOptions bounded = auto_options();
  bounded.selection_cache_max_kb = static_cast<int64_t>((2 * size + 64 + 1023) / 1024);
  ASSERT_GE(static_cast<uintmax_t>(bounded.selection_cache_max_kb) * 1024, 2 * size + 64);
  ASSERT_LT(static_cast<uintmax_t>(bounded.selection_cache_max_kb) * 1024, 3 * size - 64);
  // a read after b was written: b is the least recently used.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(load_info(a, bounded).selection.cached);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_FALSE(load_info(c, bounded).selection.cached);
  EXPECT_EQ(entries().size(), 2u);
  EXPECT_TRUE(fs::exists(entry_a));
  EXPECT_TRUE(fs::exists(fs::path(entry_a.string() + ".lock")));
  EXPECT_FALSE(fs::exists(entry_b));
  EXPECT_FALSE(fs::exists(fs::path(entry_b.string() + ".lock")));  // gone with its entry
  EXPECT_TRUE(load_info(a, bounded).selection.cached);
  EXPECT_FALSE(load_info(b, bounded).selection.cached);  // measured again, and remembered
  EXPECT_EQ(entries().size(), 2u);                       // c went: a was read after it was written
  EXPECT_TRUE(fs::exists(entry_a));
  EXPECT_TRUE(fs::exists(entry_b));

  // No bound: nothing goes.
  EXPECT_FALSE(load_info(c, unbounded).selection.cached);
  EXPECT_TRUE(load_info(a, unbounded).selection.cached);
  EXPECT_EQ(entries().size(), 3u);

  LoadOptions bad = auto_options();
  for (int64_t kb : {int64_t{-1}, LoadOptions::kSelectionCacheMaxKbLimit + 1}) {
    bad.selection_cache_max_kb = kb;
    auto m = a->load_method("forward", nullptr, bad);
    ASSERT_FALSE(m.ok()) << kb;
    EXPECT_EQ(m.status().code(), Error::InvalidArgument);
    EXPECT_NE(std::string(m.status().message()).find("selection cache bound"), std::string::npos)
        << m.status().message();
  }
  EXPECT_EQ(entries().size(), 3u);
}

// trim_selection_cache itself: program hash memos count and go like choices; a choice whose
// lock another load holds stays, with its lock; other files are not the cache's.
TEST(SelectionCacheTrim, AChoiceInUseStaysAndMemosCount) {
  char tmpl[] = "/tmp/tessera_selection_trim_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  auto add = [&](const std::string& name, size_t bytes, long age_s) {
    const std::string path = dir + "/" + name;
    std::ofstream(path, std::ios::binary) << std::string(bytes, 'x');
    timespec now;
    ::clock_gettime(CLOCK_REALTIME, &now);
    timespec times[2] = {now, now};
    times[0].tv_sec -= age_s;
    times[1].tv_sec -= age_s;
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  };
  add("0000000000000001.tsel", 3000, 500);
  add("0000000000000001.tsel.lock", 0, 500);
  add("0000000000000002.tphash", 100, 400);
  add("0000000000000003.tsel", 3000, 300);
  add("0000000000000003.tsel.lock", 0, 300);
  add("0000000000000004.tsel", 3000, 10);
  add("notes.txt", 9000, 900);
  add("0000000000000005.tsel.tmp.1.0", 9000, 900);  // a writer in progress
  {
    internal::SelectionLock held(dir + "/0000000000000001.tsel");  // another load has it
    ASSERT_TRUE(held.locked());
    const CacheTrim trim = internal::trim_selection_cache(dir, 6);  // 6144 bytes
    EXPECT_EQ(trim.bytes_before, 9100u);
    EXPECT_EQ(trim.removed, 2u);  // the memo, then entry 3
    EXPECT_EQ(trim.failed, 1u);   // entry 1, in use
    EXPECT_EQ(trim.bytes_after, 6000u);
  }
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"0000000000000001.tsel", "0000000000000001.tsel.lock",
                                            "0000000000000004.tsel",
                                            "0000000000000005.tsel.tmp.1.0", "notes.txt"}));
  EXPECT_EQ(internal::trim_selection_cache(dir, 0).removed, 0u);      // 0: no bound
  const CacheTrim free_now = internal::trim_selection_cache(dir, 3);  // the lock is free now
  EXPECT_EQ(free_now.removed, 1u);
  EXPECT_FALSE(fs::exists(dir + "/0000000000000001.tsel"));
  EXPECT_FALSE(fs::exists(dir + "/0000000000000001.tsel.lock"));
  std::error_code ec;
  fs::remove_all(dir, ec);
}

TEST_F(SelectionCacheTest, DamagedEntriesMeasureAgainWithAWarning) {
  ASSERT_FALSE(load_info(program_, auto_options()).selection.cached);
  ASSERT_EQ(entries().size(), 1u);
  const fs::path entry = entries()[0];
  std::string good;
  {
    std::ifstream f(entry, std::ios::binary);
    good.assign((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  }
  ASSERT_GT(good.size(), kIntegrityHeaderSize);
  // Rewrites the payload with a valid header (size and checksum recomputed), so the damage is
  // seen by the entry's own checks rather than the checksum.
  auto with_payload = [&](const std::string& payload) {
    std::string bytes = good.substr(0, kIntegrityHeaderSize) + payload;
    const uint64_t size = payload.size(), sum = hash64(payload.data(), payload.size());
    std::memcpy(&bytes[32], &size, 8);
    std::memcpy(&bytes[40], &sum, 8);
    return bytes;
  };
  const std::string payload = good.substr(kIntegrityHeaderSize);
  std::string wrong_version = payload;
  wrong_version.replace(wrong_version.find("\"version\": 3"), 12, "\"version\": 7");
  std::string unchosen = payload;
  for (size_t at; (at = unchosen.find("\"chosen\": true")) != std::string::npos;) {
    unchosen.replace(at, 14, "\"chosen\":false");
  }
  std::string flipped = good;
  flipped[good.size() - 3] ^= 0x20;
  std::string other_device = good;
  other_device[16] ^= 0x01;  // the device fingerprint

  const std::map<std::string, std::pair<std::string, std::string>> cases = {
      {"truncated", {good.substr(0, good.size() / 2), "fewer payload bytes"}},
      {"empty", {"", "truncated"}},
      {"flipped byte", {flipped, "checksum"}},
      {"other device", {other_device, "device"}},
      {"wrong version", {with_payload(wrong_version), "version 7"}},
      {"no chosen candidate", {with_payload(unchosen), "no chosen candidate"}},
      {"not json", {with_payload("{\"version\": 3, \"summary\": "), "not a JSON object"}},
  };
  for (const auto& [name, c] : cases) {
    {
      std::ofstream f(entry, std::ios::binary | std::ios::trunc);
      f.write(c.first.data(), static_cast<std::streamsize>(c.first.size()));
    }
    clear_warnings();
    const DelegateInfo info = load_info(program_, auto_options());
    EXPECT_FALSE(info.selection.cached) << name;
    EXPECT_STREQ(info.backend, "sc_fast") << name;  // measured again, and still right
    const std::string w = warnings();
    EXPECT_NE(w.find("is unusable"), std::string::npos) << name << ": " << w;
    EXPECT_NE(w.find(c.second), std::string::npos) << name << ": " << w;
    EXPECT_TRUE(load_info(program_, auto_options()).selection.cached) << name;  // rewritten
  }
}

TEST_F(SelectionCacheTest, AChoiceNoLongerRunnableIsMeasuredAgain) {
  ASSERT_STREQ(load_info(program_, auto_options()).backend, "sc_fast");
  fast_->available = false;
  clear_warnings();
  const DelegateInfo info = load_info(program_, auto_options());
  EXPECT_STREQ(info.backend, "sc_slow");
  EXPECT_FALSE(info.selection.cached);
  EXPECT_NE(warnings().find("no longer applies (backend 'sc_fast' is not available)"),
            std::string::npos)
      << warnings();
}

TEST_F(SelectionCacheTest, AnUnusableDirectoryIsAWarningNotAFailure) {
  // A directory below a regular file cannot be created (even by root).
  const std::string file = dir_ + "/a-file";
  std::ofstream(file) << "x";
  const std::string below = file + "/selection";
  LoadOptions o = auto_options();
  o.selection_cache_dir = below.c_str();
  DelegateInfo info = load_info(program_, o);
  EXPECT_STREQ(info.backend, "sc_slow");
  EXPECT_STREQ(info.selection.mode, "fixed");
  EXPECT_NE(warnings().find("cannot create the selection cache directory"), std::string::npos)
      << warnings();

  o.selection = Selection::Measure;
  clear_warnings();
  info = load_info(program_, o);
  EXPECT_STREQ(info.backend, "sc_fast");
  EXPECT_NE(warnings().find("not remembered"), std::string::npos) << warnings();
}

TEST_F(SelectionCacheTest, ConcurrentLoadsInThreadsMeasureOnce) {
  std::atomic<int> cached{0}, ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&]() {
      auto m = program_->load_method("forward", nullptr, auto_options());
      if (!m.ok()) return;
      ++ok;
      cached += m->delegate_info(0).selection.cached ? 1 : 0;
      if (std::strcmp(m->delegate_info(0).backend, "sc_fast") != 0) --ok;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(ok.load(), 4);
  EXPECT_EQ(cached.load(), 3);  // the lock: one measured, the others read its entry
  EXPECT_EQ(slow_->init_count(), 1);
  ASSERT_EQ(entries().size(), 1u);
  EXPECT_TRUE(load_info(program_, auto_options()).selection.cached);
}

TEST_F(SelectionCacheTest, ConcurrentLoadsInProcessesLeaveOneValidEntry) {
  // Each child loads once and exits with 0 (measured), 1 (read the entry) or 2 (failed).
  constexpr int kChildren = 3;
  pid_t pids[kChildren];
  for (pid_t& pid : pids) {
    pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto m = program_->load_method("forward", nullptr, auto_options());
      if (!m.ok() || std::strcmp(m->delegate_info(0).backend, "sc_fast") != 0) ::_exit(2);
      ::_exit(m->delegate_info(0).selection.cached ? 1 : 0);
    }
  }
  int measured = 0, read = 0;
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_NE(WEXITSTATUS(status), 2);
    (WEXITSTATUS(status) == 0 ? measured : read) += 1;
  }
  EXPECT_EQ(measured, 1);
  EXPECT_EQ(read, kChildren - 1);
  ASSERT_EQ(entries().size(), 1u);
  EXPECT_TRUE(load_info(program_, auto_options()).selection.cached);
  EXPECT_EQ(slow_->init_count(), 0);  // the parent never measured
}

TEST(SelectionCacheFormat, DecodeRejectsMalformedPayloadsWithoutTouchingTheReport) {
  SelectionReport report;
  std::snprintf(report.summary, sizeof report.summary, "%s", "untouched");
  const char* bad[] = {
      "",
      "[]",
      "{\"version\": \"1\"}",
      "{\"version\": 3, \"summary\": \"s\"}",
      "{\"version\": 3, \"summary\": \"s\", \"disturbed_measurements\": 0, \"candidates\": [{}]}",
      "{\"version\": 3, \"summary\": \"s\", \"disturbed_measurements\": 0, \"candidates\": "
      "[{\"backend\": \"\", \"median_ms\": 1, "
      "\"runs\": 1, \"disturbed_runs\": 0, \"init_ms\": 0, \"accepted\": true, \"chosen\": true, "
      "\"reason\": \"\"}]}",
      "{\"version\": 3, \"summary\": \"s\", \"disturbed_measurements\": 0, \"candidates\": "
      "[{\"backend\": \"a\", \"median_ms\": "
      "-1, \"runs\": 1, \"disturbed_runs\": 0, \"init_ms\": 0, \"accepted\": true, \"chosen\": "
      "true, \"reason\": \"\"}]}",
      "{\"version\": 3, \"summary\": \"s\", \"disturbed_measurements\": 0, \"candidates\": "
      "[{\"backend\": \"a\", \"median_ms\": "
      "1, "
      "\"runs\": 1, \"disturbed_runs\": 0, \"init_ms\": 0, \"accepted\": false, \"chosen\": true, "
      "\"reason\": \"\"}]}",
      // No init_ms.
      "{\"version\": 3, \"summary\": \"s\", \"disturbed_measurements\": 0, \"candidates\": "
      "[{\"backend\": \"a\", \"median_ms\": "
      "1, \"runs\": 1, \"disturbed_runs\": 0, \"accepted\": true, \"chosen\": true, \"reason\": "
      "\"\"}]}",
      // No disturbed_measurements, a negative one.
      "{\"version\": 3, \"summary\": \"s\", \"candidates\": [{\"backend\": \"a\", \"median_ms\": "
      "1, \"runs\": 1, \"disturbed_runs\": 0, \"init_ms\": 0, \"accepted\": true, \"chosen\": "
      "true, \"reason\": \"\"}]}",
      "{\"version\": 3, \"summary\": \"s\", \"disturbed_measurements\": -1, \"candidates\": "
      "[{\"backend\": \"a\", \"median_ms\": 1, \"runs\": 1, \"disturbed_runs\": 0, \"init_ms\": "
      "0, \"accepted\": true, \"chosen\": true, \"reason\": \"\"}]}",
      // No disturbed_runs; a negative one.
      "{\"version\": 3, \"summary\": \"s\", \"disturbed_measurements\": 0, \"candidates\": "
      "[{\"backend\": \"a\", \"median_ms\": "
      "1, \"runs\": 1, \"init_ms\": 0, \"accepted\": true, \"chosen\": true, \"reason\": \"\"}]}",
      "{\"version\": 3, \"summary\": \"s\", \"disturbed_measurements\": 0, \"candidates\": "
      "[{\"backend\": \"a\", \"median_ms\": "
      "1, \"runs\": 1, \"disturbed_runs\": -1, \"init_ms\": 0, \"accepted\": true, \"chosen\": "
      "true, \"reason\": \"\"}]}",
      // A whole-method check that is not an object, lacks fields, or names another backend.
      "{\"version\": 3, \"summary\": \"s\", \"disturbed_measurements\": 0, \"candidates\": "
      "[{\"backend\": \"a\", \"median_ms\": "
      "1, \"runs\": 1, \"disturbed_runs\": 0, \"init_ms\": 0, \"accepted\": true, \"chosen\": "
      "true, \"reason\": \"\"}], "
      "\"method\": []}",
      "{\"version\": 3, \"summary\": \"s\", \"disturbed_measurements\": 0, \"candidates\": "
      "[{\"backend\": \"a\", \"median_ms\": "
      "1, \"runs\": 1, \"disturbed_runs\": 0, \"init_ms\": 0, \"accepted\": true, \"chosen\": "
      "true, \"reason\": \"\"}], "
      "\"method\": {\"mixed_ms\": 1}}",
      "{\"version\": 3, \"summary\": \"s\", \"disturbed_measurements\": 0, \"candidates\": "
      "[{\"backend\": \"a\", \"median_ms\": "
      "1, \"runs\": 1, \"disturbed_runs\": 0, \"init_ms\": 0, \"accepted\": true, \"chosen\": "
      "true, \"reason\": \"\"}], "
      "\"method\": {\"mixed_ms\": 1, "
      "\"mixed_runs\": 5, \"uniform\": [], \"chosen\": \"b\", \"reason\": \"\", \"budget_cut\": "
      "false, \"reinit_ms\": 0}}",
      "{\"version\": 3, \"summary\": \"s\", \"disturbed_measurements\": 0, \"candidates\": "
      "[{\"backend\": \"a\", \"median_ms\": "
      "1, \"runs\": 1, \"disturbed_runs\": 0, \"init_ms\": 0, \"accepted\": true, \"chosen\": "
      "true, \"reason\": \"\"}], "
      "\"method\": {\"mixed_ms\": 1, "
      "\"mixed_runs\": 5, \"uniform\": [{\"backend\": \"a\"}], \"chosen\": \"a\", \"reason\": "
      "\"\", \"budget_cut\": false, \"reinit_ms\": 0}}",
      // Notes that are not a string.
      "{\"version\": 3, \"summary\": \"s\", \"notes\": 7, \"disturbed_measurements\": 0, "
      "\"candidates\": [{\"backend\": \"a\", \"median_ms\": 1, \"runs\": 1, \"disturbed_runs\": 0, "
      "\"init_ms\": 0, \"accepted\": true, \"chosen\": true, \"reason\": \"\"}]}",
      // An init made again alone that is not a number, or negative.
      "{\"version\": 3, \"summary\": \"s\", \"disturbed_measurements\": 0, \"candidates\": "
      "[{\"backend\": \"a\", \"median_ms\": 1, \"runs\": 1, \"disturbed_runs\": 0, \"init_ms\": "
      "0, \"alone_init_ms\": \"60\", \"accepted\": true, \"chosen\": true, \"reason\": \"\"}]}",
      "{\"version\": 3, \"summary\": \"s\", \"disturbed_measurements\": 0, \"candidates\": "
      "[{\"backend\": \"a\", \"median_ms\": 1, \"runs\": 1, \"disturbed_runs\": 0, \"init_ms\": "
      "0, \"alone_init_ms\": -1, \"accepted\": true, \"chosen\": true, \"reason\": \"\"}]}",
  };
  for (const char* text : bad) {
    Result<std::string> r = internal::decode_selection(reinterpret_cast<const uint8_t*>(text),
                                                       std::strlen(text), &report);
    EXPECT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error(), Error::InvalidProgram) << text;
    EXPECT_STREQ(report.summary, "untouched");
  }
  const char* good =
      "{\"version\": 3, \"summary\": \"measured: a 1 ms (chosen)\", \"disturbed_measurements\": 1, "
      "\"candidates\": [{\"backend\": "
      "\"a\", \"median_ms\": 1, \"runs\": 5, \"disturbed_runs\": 2, \"init_ms\": 2.5, "
      "\"accepted\": true, \"chosen\": "
      "true, \"reason\": \"reference\"}]}";
  Result<std::string> r = internal::decode_selection(reinterpret_cast<const uint8_t*>(good),
                                                     std::strlen(good), &report);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, "a");
  EXPECT_TRUE(report.cached);
  EXPECT_EQ(report.candidates[0].runs, 5);
  EXPECT_EQ(report.candidates[0].disturbed_runs, 2);
  EXPECT_EQ(report.disturbed_measurements, 1);
  EXPECT_EQ(report.candidates[0].init_ms, 2.5);
  EXPECT_EQ(report.candidates[0].alone_init_ms, 0.0);  // none made (or an older entry)
  EXPECT_FALSE(report.method.checked);
  EXPECT_STREQ(report.notes, "");  // none kept (an entry written before they were)

  const char* with_notes =
      "{\"version\": 3, \"summary\": \"measured: a 1 ms (chosen); budget auto: 4 ms of runs\", "
      "\"notes\": \"; budget auto: 4 ms of runs\", \"disturbed_measurements\": 0, "
      "\"candidates\": [{\"backend\": \"a\", \"median_ms\": 1, \"runs\": 5, \"disturbed_runs\": 0, "
      "\"init_ms\": 2, \"accepted\": true, \"chosen\": true, \"reason\": \"reference\"}]}";
  r = internal::decode_selection(reinterpret_cast<const uint8_t*>(with_notes),
                                 std::strlen(with_notes), &report);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_STREQ(report.notes, "; budget auto: 4 ms of runs");

  const char* made_again =
      "{\"version\": 3, \"summary\": \"measured: a 1 ms (chosen)\", \"disturbed_measurements\": 0, "
      "\"candidates\": [{\"backend\": \"a\", \"median_ms\": 1, \"runs\": 5, \"disturbed_runs\": 0, "
      "\"init_ms\": 120, \"alone_init_ms\": 61.5, \"accepted\": true, \"chosen\": true, "
      "\"reason\": \"reference\"}]}";
  r = internal::decode_selection(reinterpret_cast<const uint8_t*>(made_again),
                                 std::strlen(made_again), &report);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(report.candidates[0].init_ms, 120.0);
  EXPECT_EQ(report.candidates[0].alone_init_ms, 61.5);
}

// What encode_selection writes of each candidate, decode_selection reads back.
TEST(SelectionCacheFormat, EachCandidatesFiguresSurviveTheRoundTrip) {
  SelectionReport in;
  std::snprintf(in.summary, sizeof in.summary, "%s", "measured: a 1 ms (chosen), a [m=f] 0.9 ms");
  in.num_candidates = 2;
  SelectionCandidate& a = in.candidates[0];
  std::snprintf(a.backend, sizeof a.backend, "%s", "a");
  a.median_ms = 1;
  a.runs = 5;
  a.disturbed_runs = 1;
  a.init_ms = 120;
  a.alone_init_ms = 61.5;
  a.accepted = a.chosen = true;
  std::snprintf(a.reason, sizeof a.reason, "%s", "reference; its init made again alone: 62 ms");
  SelectionCandidate& v = in.candidates[1];
  std::snprintf(v.backend, sizeof v.backend, "%s", "a");
  std::snprintf(v.options, sizeof v.options, "%s", "m=f");
  v.median_ms = 0.9;
  v.runs = 4;
  v.init_ms = 250;
  v.accepted = true;
  internal::SelectionKey key;
  key.add("program", "p");
  const std::vector<uint8_t> bytes = internal::encode_selection(key, in);
  SelectionReport out;
  Result<std::string> r = internal::decode_selection(bytes.data(), bytes.size(), &out);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, "a");
  ASSERT_EQ(out.num_candidates, 2u);
  for (size_t i = 0; i < 2; ++i) {
    const SelectionCandidate& want = in.candidates[i];
    const SelectionCandidate& got = out.candidates[i];
    EXPECT_STREQ(got.backend, want.backend);
    EXPECT_STREQ(got.options, want.options);
    EXPECT_EQ(got.median_ms, want.median_ms);
    EXPECT_EQ(got.runs, want.runs);
    EXPECT_EQ(got.disturbed_runs, want.disturbed_runs);
    EXPECT_EQ(got.init_ms, want.init_ms);
    EXPECT_EQ(got.alone_init_ms, want.alone_init_ms);
    EXPECT_EQ(got.accepted, want.accepted);
    EXPECT_EQ(got.chosen, want.chosen);
    EXPECT_STREQ(got.reason, want.reason);
  }
  EXPECT_TRUE(out.cached);
}

TEST(SelectionCacheFormat, TheDefaultDirectoryFollowsXdgThenHome) {
  EXPECT_EQ(internal::selection_cache_dir("/x"), "/x");
  EXPECT_EQ(internal::selection_cache_dir(""), "");
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const std::string saved_xdg = xdg ? xdg : "";
  ::setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(internal::selection_cache_dir(nullptr), "/xdg/tessera/selection");
  ::unsetenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] == '/') {
    EXPECT_EQ(internal::selection_cache_dir(nullptr),
              std::string(home) + "/.cache/tessera/selection");
  }
  if (xdg != nullptr) ::setenv("XDG_CACHE_HOME", saved_xdg.c_str(), 1);
}

}  // namespace
}  // namespace tessera
