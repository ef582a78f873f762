// The whole-method check of a measured selection, with two stub backends on a two-delegate
// method: per-delegate timing favours a mix (wm_a for the first delegate, wm_b for the second);
// a switch penalty (a stub sleeps when the delegate run before it was the other backend's)
// makes one backend for the whole method faster. Delays are tens of milliseconds against
// differences of tens of milliseconds, so the outcome does not depend on this machine's speed.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "tessera/backend/context.h"
#include "tessera/backend/device_info.h"
#include "tessera/backend/registry.h"
#include "tessera/backend/testing/stub_backend.h"
#include "tessera/core/trace.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program.h"
#include "tests/testing/selection_clocks.h"
#include "tests/testing/test_programs.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

// The backend that ran the latest delegate (0: none yet, 1: wm_a, 2: wm_b), and the sleep a
// delegate pays when it differs from its own: the cost of handing over between backends.
std::atomic<int> g_last_backend{0};
std::atomic<int> g_switch_penalty_ms{0};
std::atomic<int> g_hand_overs{0};  // delegates that ran after one of the other backend's

// Per-delegate cost: wm_a is fast on the first delegate, wm_b on the second; on the whole
// method wm_a (2 + 10 ms) beats wm_b (22 + 2 ms).
int cost_ms(int backend, const char* delegate_id) {
  const bool first = std::strcmp(delegate_id, "wm_a#0") == 0;
  if (backend == 1) return first ? 2 : 10;
  return first ? 22 : 2;
}

Status run(int backend, BackendExecutionContext& ctx, Span<EValue*> args) {
  const int last = g_last_backend.exchange(backend);
  int ms = cost_ms(backend, ctx.delegate_id());
  if (last != 0 && last != backend) {
    ms += g_switch_penalty_ms.load();
    ++g_hand_overs;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  std::memcpy(args[1]->to_tensor().data(), args[0]->to_tensor().data(),
              args[0]->to_tensor().nbytes());
  return Status::ok();
}

class WholeMethodSelectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_last_backend = 0;
    g_switch_penalty_ms = 0;
    g_hand_overs = 0;
    char tmpl[] = "/tmp/tessera_whole_method_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    device_ = DeviceInfo::get();
    device_.usable_cpus = 2;
    device_.usable_performance_cores = 1;
    device_.cpu_quota = 0;
    a_ = new testing::StubBackend();
    a_->on_execute = [](BackendExecutionContext& c, DelegateHandle*, Span<EValue*> args) {
      return run(1, c, args);
    };
    b_ = new testing::StubBackend();
    b_->on_execute = [](BackendExecutionContext& c, DelegateHandle*, Span<EValue*> args) {
      return run(2, c, args);
    };
    ASSERT_TRUE(register_backend("wm_a", std::unique_ptr<BackendInterface>(a_)).is_ok());
    ASSERT_TRUE(register_backend("wm_b", std::unique_ptr<BackendInterface>(b_)).is_ok());
    // Two Relu delegates, compiled for wm_a and wm_b, either of which may run each (as
    // tessera-compile records them without --backends).
    ir::ProgramBuilder pb = testing::delegate_chain_program({"wm_a", "wm_b"});
    for (auto& d : pb.methods()[0].delegates) d.candidates = {"wm_a", "wm_b"};
    auto loaded = testing::load_built_program(pb);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    loaded_ = std::move(*loaded);
  }
  void TearDown() override {
    loaded_ = testing::LoadedProgram{};
    (void)unregister_backend("wm_a");
    (void)unregister_backend("wm_b");
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  LoadOptions options(Selection mode) const {
    LoadOptions o;
    o.selection = mode;
    o.selection_cache_dir = dir_.c_str();
    o.device_info = &device_;
    // Every assignment timed even on a loaded machine (the mix with hand-overs takes ~270 ms).
    o.selection_budget_ms = 5000;
    return o;
  }
  Result<Method> load(const LoadOptions& o) {
    return loaded_.program->load_method("forward", nullptr, o);
  }
  // A measuring load under the auto budget.
  Result<Method> load_with_auto_budget() {
    LoadOptions o = options(Selection::Measure);
    o.selection_budget_ms = LoadOptions::kSelectionBudgetAuto;
    return load(o);
  }
  static const UniformAssignment* uniform(const MethodSelection& m, const char* backend) {
    for (size_t i = 0; i < m.num_uniform; ++i) {
      if (std::strcmp(m.uniform[i].backend, backend) == 0) return &m.uniform[i];
    }
    return nullptr;
  }
  static const SelectionCandidate* chosen(const SelectionReport& r) {
    for (size_t i = 0; i < r.num_candidates; ++i) {
      if (r.candidates[i].chosen) return &r.candidates[i];
    }
    return nullptr;
  }

  testing::WallClockOnlySelection wall_clock_only_;  // the stubs sleep
  std::string dir_;
  DeviceInfo device_;
  testing::StubBackend* a_ = nullptr;
  testing::StubBackend* b_ = nullptr;
  testing::LoadedProgram loaded_;
};

TEST_F(WholeMethodSelectionTest, ASwitchPenaltyMakesOneBackendRunTheWholeMethod) {
  g_switch_penalty_ms = 20;
  auto m = load(options(Selection::Measure));
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->num_delegates(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    const DelegateInfo& info = m->delegate_info(k);
    EXPECT_STREQ(info.backend, "wm_a") << info.id;
    const MethodSelection& ms = info.selection.method;
    EXPECT_TRUE(ms.checked);
    EXPECT_STREQ(ms.chosen, "wm_a");
    EXPECT_GE(ms.mixed_ms, 40.0);  // two hand-overs of 20 ms
    EXPECT_GT(ms.mixed_runs, 0);
    ASSERT_NE(uniform(ms, "wm_a"), nullptr);
    ASSERT_NE(uniform(ms, "wm_b"), nullptr);
    EXPECT_LT(uniform(ms, "wm_a")->ms, ms.mixed_ms);
    EXPECT_GT(uniform(ms, "wm_a")->runs, 0);
    EXPECT_GT(uniform(ms, "wm_b")->runs, 0);
    EXPECT_NE(std::string(ms.reason).find("switching cost"), std::string::npos) << ms.reason;
    EXPECT_FALSE(ms.budget_cut);
    // The chosen flag follows the whole-method choice; the per-delegate figures stay.
    ASSERT_NE(chosen(info.selection), nullptr);
    EXPECT_STREQ(chosen(info.selection)->backend, "wm_a");
    EXPECT_NE(std::string(info.reason).find("whole method"), std::string::npos) << info.reason;
  }
  // The second delegate's per-delegate winner was wm_b: still listed as the faster there.
  const SelectionReport& second = m->delegate_info(1).selection;
  double a_ms = 0, b_ms = 0;
  for (size_t i = 0; i < second.num_candidates; ++i) {
    (std::strcmp(second.candidates[i].backend, "wm_a") == 0 ? a_ms : b_ms) =
        second.candidates[i].median_ms;
  }
  EXPECT_LT(b_ms, a_ms);
  // wm_a's own reason there says what chose it; the first delegate's choice was its own.
  EXPECT_EQ(std::string(chosen(second)->reason)
                .rfind("chosen by the whole-method check (wm_a for every delegate)", 0),
            0u)
      << chosen(second)->reason;
  EXPECT_EQ(std::string(chosen(m->delegate_info(0).selection)->reason).find("whole-method"),
            std::string::npos);

  // It runs, on wm_a throughout: no hand-over.
  g_last_backend = 0;
  g_hand_overs = 0;
  ASSERT_TRUE(m->execute().is_ok());
  EXPECT_EQ(g_hand_overs.load(), 0);
  // Every handle made for the check but those that run went: one wm_b handle ran the second
  // delegate in the mix and was replaced; wm_b's uniform trial made one for the first.
  m = Status::error(Error::InvalidArgument, "gone");
  EXPECT_EQ(a_->init_count(), a_->destroy_count());
  EXPECT_EQ(b_->init_count(), b_->destroy_count());
}

TEST_F(WholeMethodSelectionTest, ATraceShowsEachAssignmentTimed) {
  g_switch_penalty_ms = 20;
  ASSERT_TRUE(Trace::start().is_ok());
  auto m = load(options(Selection::Measure));
  Result<std::vector<TraceEvent>> events = Trace::stop();
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_TRUE(events.ok());
  std::map<std::string, int> spans;
  for (const TraceEvent& e : *events) {
    if (e.category == "select") ++spans[e.name];
  }
  // Each delegate's own measurement, then the mix and each uniform assignment once.
  EXPECT_EQ(spans["select wm_a#0"], 1);
  EXPECT_EQ(spans["select wm_b#0"], 1);
  EXPECT_EQ(spans["select method as chosen per delegate"], 1);
  EXPECT_EQ(spans["select method on wm_a"], 1);
  EXPECT_EQ(spans["select method on wm_b"], 1);
  EXPECT_GE(spans["select wm_a"], 2);  // a warm-up and timed runs
  EXPECT_GE(spans["select wm_b"], 2);
}

TEST_F(WholeMethodSelectionTest, TheRewrittenSummaryKeepsTheMeasurementsNotes) {
  // The check rewrites the summary of each delegate whose choice it changes (the second's,
  // from wm_b to wm_a): the notes after the candidates stay, here the inits made together (the
  // fixture machine has two usable CPUs).
  g_switch_penalty_ms = 20;
  a_->init_beside_others = true;
  b_->init_beside_others = true;
  auto m = load(options(Selection::Measure));
  ASSERT_TRUE(m.ok()) << m.status().message();
  for (size_t k = 0; k < 2; ++k) {
    const SelectionReport& r = m->delegate_info(k).selection;
    EXPECT_STREQ(r.method.chosen, "wm_a");
    // The program's backend for the delegate first, then the other.
    const std::string own = m->delegate_info(k).requested_backend;
    EXPECT_EQ(r.notes,
              "; " + own + " and " + (own == "wm_a" ? "wm_b" : "wm_a") + " initialised at once");
    const std::string summary = r.summary;
    ASSERT_GT(summary.size(), std::strlen(r.notes)) << summary;
    EXPECT_EQ(summary.substr(summary.size() - std::strlen(r.notes)), r.notes) << summary;
  }
}

TEST_F(WholeMethodSelectionTest, WithoutAPenaltyTheMixStays) {
  auto m = load(options(Selection::Measure));
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_STREQ(m->delegate_info(0).backend, "wm_a");
  EXPECT_STREQ(m->delegate_info(1).backend, "wm_b");
  const MethodSelection& ms = m->delegate_info(0).selection.method;
  EXPECT_TRUE(ms.checked);
  EXPECT_STREQ(ms.chosen, "mixed");
  ASSERT_NE(uniform(ms, "wm_a"), nullptr);
  EXPECT_GT(uniform(ms, "wm_a")->ms, ms.mixed_ms);
  EXPECT_NE(std::string(ms.reason).find("the mix is fastest"), std::string::npos) << ms.reason;
  EXPECT_STREQ(chosen(m->delegate_info(1).selection)->backend, "wm_b");
  // The trial handles went; the mix's stay.
  EXPECT_EQ(a_->init_count() - a_->destroy_count(), 1);
  EXPECT_EQ(b_->init_count() - b_->destroy_count(), 1);
}

TEST_F(WholeMethodSelectionTest, ACachedLoadGoesStraightToTheWholeMethodChoice) {
  g_switch_penalty_ms = 20;
  {
    auto m = load(options(Selection::Auto));
    ASSERT_TRUE(m.ok()) << m.status().message();
    EXPECT_FALSE(m->delegate_info(0).selection.cached);
    EXPECT_STREQ(m->delegate_info(1).backend, "wm_a");
  }
  const int a_inits = a_->init_count(), b_inits = b_->init_count(), a_runs = a_->execute_count();
  auto m = load(options(Selection::Auto));
  ASSERT_TRUE(m.ok()) << m.status().message();
  for (size_t k = 0; k < 2; ++k) {
    const DelegateInfo& info = m->delegate_info(k);
    EXPECT_TRUE(info.selection.cached);
    EXPECT_STREQ(info.backend, "wm_a");
    // What it was made from: both candidates and the whole-method figures.
    EXPECT_EQ(info.selection.num_candidates, 2u);
    EXPECT_TRUE(info.selection.method.checked);
    EXPECT_STREQ(info.selection.method.chosen, "wm_a");
    EXPECT_GT(info.selection.method.mixed_ms, 0.0);
    EXPECT_EQ(info.selection.method.num_uniform, 2u);
  }
  // No measuring: one init per delegate, on wm_a, and nothing ran.
  EXPECT_EQ(a_->init_count() - a_inits, 2);
  EXPECT_EQ(b_->init_count() - b_inits, 0);
  EXPECT_EQ(a_->execute_count() - a_runs, 0);
}

TEST_F(WholeMethodSelectionTest, AnExhaustedBudgetCutsTheCheckAndSaysSo) {
  g_switch_penalty_ms = 20;
  LoadOptions o = options(Selection::Measure);
  o.selection_budget_ms = 0;  // listed candidates still get one timed run each
  auto m = load(o);
  ASSERT_TRUE(m.ok()) << m.status().message();
  const MethodSelection& ms = m->delegate_info(0).selection.method;
  EXPECT_TRUE(ms.checked);
  EXPECT_TRUE(ms.budget_cut);
  EXPECT_STREQ(ms.chosen, "mixed");
  EXPECT_EQ(ms.mixed_runs, 1);
  ASSERT_NE(uniform(ms, "wm_a"), nullptr);
  EXPECT_EQ(uniform(ms, "wm_a")->runs, 0);
  EXPECT_NE(std::string(uniform(ms, "wm_a")->reason).find("skipped (budget"), std::string::npos)
      << uniform(ms, "wm_a")->reason;
  EXPECT_NE(std::string(ms.reason).find("budget: 0 ms spent, wm_a, wm_b not timed"),
            std::string::npos)
      << ms.reason;
  EXPECT_STREQ(m->delegate_info(1).backend, "wm_b");
}

// Under the auto budget the check's runs may take twice what a fixed load spends on the
// method's delegates (each delegate's first init). Stubs that initialise in no time leave it
// nothing: the mix gets its one timed run and the uniform assignments are skipped, saying so.
TEST_F(WholeMethodSelectionTest, TheAutoBudgetCutsTheCheckWhenTheInitsTookNoTime) {
  g_switch_penalty_ms = 20;
  auto m = load_with_auto_budget();
  ASSERT_TRUE(m.ok()) << m.status().message();
  const MethodSelection& ms = m->delegate_info(0).selection.method;
  EXPECT_TRUE(ms.checked);
  EXPECT_TRUE(ms.budget_cut);
  EXPECT_EQ(ms.mixed_runs, 1);
  ASSERT_NE(uniform(ms, "wm_b"), nullptr);
  EXPECT_EQ(uniform(ms, "wm_b")->runs, 0);
  EXPECT_EQ(std::string(uniform(ms, "wm_b")->reason).rfind("skipped (budget auto: ", 0), 0u)
      << uniform(ms, "wm_b")->reason;
  EXPECT_NE(std::string(ms.reason).find("ms of runs spent, wm_a, wm_b not timed"),
            std::string::npos)
      << ms.reason;
}

// ... and inits that take 100 ms each give the runs 2 x (100 + 100) ms: every assignment is
// timed (about 240 ms of runs here).
TEST_F(WholeMethodSelectionTest, TheAutoBudgetTimesTheCheckAfterSlowInits) {
  auto slow_init = [](BackendInitContext&, FreeableBuffer*,
                      Span<const CompileSpec>) -> Result<DelegateHandle*> {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    static int handle;  // the stub's destroy frees nothing when on_init is set
    return reinterpret_cast<DelegateHandle*>(&handle);
  };
  a_->on_init = slow_init;
  b_->on_init = slow_init;
  auto m = load_with_auto_budget();
  ASSERT_TRUE(m.ok()) << m.status().message();
  const MethodSelection& ms = m->delegate_info(0).selection.method;
  EXPECT_TRUE(ms.checked);
  EXPECT_FALSE(ms.budget_cut) << ms.reason;
  ASSERT_NE(uniform(ms, "wm_a"), nullptr);
  ASSERT_NE(uniform(ms, "wm_b"), nullptr);
  EXPECT_GT(uniform(ms, "wm_a")->runs, 1);
  EXPECT_GT(uniform(ms, "wm_b")->runs, 1);
  EXPECT_STREQ(ms.chosen, "mixed");
}

TEST_F(WholeMethodSelectionTest, CandidatesReportTheirInitTime) {
  a_->on_init = [](BackendInitContext&, FreeableBuffer*,
                   Span<const CompileSpec>) -> Result<DelegateHandle*> {
    std::this_thread::sleep_for(std::chrono::milliseconds(15));
    static int handle;  // the stub's destroy frees nothing when on_init is set
    return reinterpret_cast<DelegateHandle*>(&handle);
  };
  auto m = load(options(Selection::Measure));
  ASSERT_TRUE(m.ok()) << m.status().message();
  for (size_t k = 0; k < 2; ++k) {
    const SelectionReport& r = m->delegate_info(k).selection;
    ASSERT_EQ(r.num_candidates, 2u);
    for (size_t i = 0; i < r.num_candidates; ++i) {
      const SelectionCandidate& c = r.candidates[i];
      if (std::strcmp(c.backend, "wm_a") == 0) {
        EXPECT_GE(c.init_ms, 15.0);
      } else {
        EXPECT_GT(c.init_ms, 0.0);
        EXPECT_LT(c.init_ms, 15.0);
      }
    }
  }
  // The whole-method check re-initialised wm_a on the second delegate (its uniform trial).
  EXPECT_GE(m->delegate_info(0).selection.method.reinit_ms, 15.0);
}

TEST_F(WholeMethodSelectionTest, APinnedDelegateTakesPartWithItsOwnBackend) {
  // The second delegate is pinned to wm_b (no recorded candidates: auto runs it as compiled,
  // as tessera-compile records a delegate only one backend can take); the first is measured.
  ir::ProgramBuilder pb = testing::delegate_chain_program({"wm_a", "wm_b"});
  pb.methods()[0].delegates[0].candidates = {"wm_a", "wm_b"};
  auto loaded = testing::load_built_program(pb);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  g_switch_penalty_ms = 20;
  const LoadOptions o = options(Selection::Auto);
  {
    auto m = loaded->program->load_method("forward", nullptr, o);
    ASSERT_TRUE(m.ok()) << m.status().message();
    EXPECT_STREQ(m->delegate_info(1).selection.mode, "fixed");
    const MethodSelection& ms = m->delegate_info(0).selection.method;
    EXPECT_TRUE(ms.checked);
    // Only wm_b can run both; with the hand-overs it beats the mix.
    ASSERT_EQ(ms.num_uniform, 1u);
    EXPECT_STREQ(ms.uniform[0].backend, "wm_b");
    EXPECT_STREQ(ms.chosen, "wm_b");
    EXPECT_STREQ(m->delegate_info(0).backend, "wm_b");
    EXPECT_STREQ(m->delegate_info(1).backend, "wm_b");
  }
  // Remembered for the measured delegate; the pinned one runs as compiled.
  const int a_inits = a_->init_count();
  auto m = loaded->program->load_method("forward", nullptr, o);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_TRUE(m->delegate_info(0).selection.cached);
  EXPECT_STREQ(m->delegate_info(0).backend, "wm_b");
  EXPECT_STREQ(m->delegate_info(0).selection.method.chosen, "wm_b");
  EXPECT_STREQ(m->delegate_info(1).backend, "wm_b");
  EXPECT_EQ(a_->init_count(), a_inits);
}

TEST_F(WholeMethodSelectionTest, AUniformBackendThatFailsToInitialiseIsReportedAndPassedOver) {
  g_switch_penalty_ms = 20;
  // wm_a initialises for the per-delegate measurement (once per delegate), then fails.
  static std::atomic<int> inits_left;
  inits_left = 2;
  a_->on_init = [](BackendInitContext&, FreeableBuffer*,
                   Span<const CompileSpec>) -> Result<DelegateHandle*> {
    if (inits_left.fetch_sub(1) <= 0)
      return Status(Error::DelegateInvalidCompatibility, "no memory today");
    static int handle;  // the stub's destroy frees nothing when on_init is set
    return reinterpret_cast<DelegateHandle*>(&handle);
  };
  auto m = load(options(Selection::Measure));
  ASSERT_TRUE(m.ok()) << m.status().message();
  const MethodSelection& ms = m->delegate_info(0).selection.method;
  ASSERT_NE(uniform(ms, "wm_a"), nullptr);
  EXPECT_EQ(uniform(ms, "wm_a")->runs, 0);
  EXPECT_NE(std::string(uniform(ms, "wm_a")->reason)
                .find("delegate 'wm_b#0': 'wm_a' init failed: no memory today"),
            std::string::npos)
      << uniform(ms, "wm_a")->reason;
  // wm_b for both (22 + 2 ms) still beats the mix with its hand-overs (44 ms).
  EXPECT_STREQ(ms.chosen, "wm_b");
  EXPECT_STREQ(m->delegate_info(0).backend, "wm_b");
  EXPECT_STREQ(m->delegate_info(1).backend, "wm_b");
  ASSERT_TRUE(m->execute().is_ok());
}

}  // namespace
}  // namespace tessera
