// Measured selection (LoadOptions::selection == Measure): each candidate backend initialised on
// the delegate, checked against a reference on the same inputs, timed, and destroyed; the
// caller then loads the fastest accepted one.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <sys/resource.h>

#include "tessera/backend/context.h"
#include "tessera/backend/derived_values.h"
#include "tessera/backend/device_info.h"
#include "tessera/backend/integrity_file.h"
#include "tessera/backend/option_schema.h"
#include "tessera/backend/policy.h"
#include "tessera/backend/registry.h"
#include "tessera/backend/resolution.h"
#include "tessera/backend/resolved_options.h"
#include "tessera/core/heap_allocator.h"
#include "tessera/core/log.h"
#include "tessera/core/string_format.h"
#include "tessera/core/trace.h"
#include "tessera/ir/schema.h"
#include "tessera/runtime/delegate_runner.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method_state.h"
#include "tessera/runtime/program.h"
#include "tessera/runtime/selection_cache.h"

namespace tessera::internal {
namespace {

using Clock = std::chrono::steady_clock;

// Undisturbed timed runs of each contender in a race (race(): they run alternately): at least
// kRaceMinRuns before one is found slower in every run than the fastest (or it is clearly
// slower), at most kRaceMaxRuns when they stay that close.
constexpr int kRaceMinRuns = 3;
constexpr int kRaceMaxRuns = 6;
// See replaces_fastest: Winograd's weight transform took MobileNetV2's cached load from 66 to
// 161 ms for a "win" within the noise.
constexpr double kVariantMargin = 0.97;
// See the variants' race in measure_candidates: the fastest so far reading more than this times
// its earlier median beside a variant is not a figure to replace it on.
constexpr double kInconsistentReadFactor = 1.5;
// See the variants' race in measure_candidates: a variant that wins by less than this (its
// median over the lower of the fastest's figures above it) races the fastest once more.
constexpr double kConfirmBelow = 0.90;
// The timed runs each side of a race makes at least (race(): it stops past the budget only
// after its second round).
constexpr int kRaceLeastRuns = 2;

// A candidate's init as weighed against others': the lower of its two figures when it was made
// again alone (SelectionCandidate::alone_init_ms), else the one it has.
double lowest_init_ms(const SelectionCandidate& c) {
  return c.alone_init_ms > 0 ? std::min(c.alone_init_ms, c.init_ms) : c.init_ms;
}

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

void set_text(char* dst, size_t cap, const std::string& text) {
  std::snprintf(dst, cap, "%s", text.c_str());
}

// `text` after what c's reason already says ("; " between).
void add_reason(SelectionCandidate* c, const std::string& text) {
  const std::string was = c->reason;
  set_text(c->reason, sizeof c->reason, was.empty() ? text : was + "; " + text);
}

// Deterministic data in every non-constant input of the delegate (fill_deterministic).
void fill_inputs(const fb::Method* method, const fb::Instruction* ins, Span<EValue*> args) {
  const uint32_t n = ins->inputs() ? ins->inputs()->size() : 0;
  for (uint32_t i = 0; i < n; ++i) {
    const fb::Value* v = method->values()->Get(ins->inputs()->Get(i));
    if (v->constant() >= 0 || !args[i]->is_tensor()) continue;
    fill_deterministic(&args[i]->to_tensor(), i);
  }
}

struct Outputs {
  std::vector<std::vector<uint8_t>> bytes;
};

Outputs copy_outputs(Span<EValue*> args, uint32_t num_inputs) {
  Outputs out;
  for (size_t i = num_inputs; i < args.size(); ++i) {
    const Tensor& t = args[i]->to_tensor();
    const uint8_t* p = static_cast<const uint8_t*>(t.data());
    out.bytes.emplace_back(p, p + (p ? t.nbytes() : 0));
  }
  return out;
}

// Empty when `got` matches `ref` within `tolerance` x max |ref| (float32) or exactly; else why.
std::string compare(const Outputs& ref, const Outputs& got, Span<EValue*> args, uint32_t num_inputs,
                    double tolerance) {
  for (size_t j = 0; j < ref.bytes.size(); ++j) {
    const Tensor& t = args[num_inputs + j]->to_tensor();
    if (ref.bytes[j].size() != got.bytes[j].size()) return "output sizes differ";
    if (t.dtype() != ScalarType::Float32) {
      if (ref.bytes[j] != got.bytes[j]) return string_format("output %zu differs", j);
      continue;
    }
    const size_t n = ref.bytes[j].size() / sizeof(float);
    const float* r = reinterpret_cast<const float*>(ref.bytes[j].data());
    const float* g = reinterpret_cast<const float*>(got.bytes[j].data());
    double max_ref = 0, max_diff = 0;
    for (size_t k = 0; k < n; ++k) {
      max_ref = std::max(max_ref, static_cast<double>(std::fabs(r[k])));
      const double diff = std::fabs(static_cast<double>(r[k]) - g[k]);
      max_diff = std::isnan(diff) ? INFINITY : std::max(max_diff, diff);
    }
    if (max_diff > tolerance * std::max(max_ref, 1.0e-30) && max_diff > 0) {
      return string_format("outputs differ: output %zu max |diff| %.3g > %.3g x max |ref| %.3g", j,
                           max_diff, tolerance, max_ref);
    }
  }
  return {};
}

// The program's backend first (the reference), then the candidates in the order given, else
// those the compiler recorded for the delegate, else every registered backend (registry order).
std::vector<std::string> candidate_names(const fb::Delegate* d, std::string_view requested,
                                         const LoadOptions& options) {
  std::vector<std::string> names{std::string(requested)};
  if (options.selection_candidates_size() > 0) {
    for (size_t i = 0; i < options.selection_candidates_size(); ++i) {
      names.emplace_back(options.selection_candidate(i));
    }
  } else if (d->candidates() != nullptr && d->candidates()->size() > 0) {
    for (const flatbuffers::String* n : *d->candidates()) names.emplace_back(n->string_view());
  } else {
    for (const std::string& n : registered_backends()) names.push_back(n);
  }
  std::vector<std::string> unique;
  for (std::string& n : names) {
    if (std::find(unique.begin(), unique.end(), n) == unique.end()) unique.push_back(std::move(n));
  }
  return unique;
}

struct Variant {
  std::string key, value;
};

// The index in `resolved` of the integer num_threads of a thread-pool backend; -1 without one.
int thread_option(const BackendInterface& b, const ResolvedOptions& resolved) {
  const int i = resolved.find("num_threads");
  if (!b.uses_cpu_thread_pool() || i < 0 ||
      resolved.spec(static_cast<size_t>(i)).type != OptionType::Int) {
    return -1;
  }
  return i;
}

// The variants of `b` worth trying on top of `resolved`: its declared ones (those lowering
// precision only when allowed) and num_threads=1 for a thread-pool backend the policy gives more
// threads, each only for an option no scope set and whose resolved value differs.
std::vector<Variant> variants_for(const BackendInterface& b, const ResolvedOptions& resolved,
                                  const LoadOptions& options, const PolicyDecision& policy) {
  std::vector<Variant> out;
  auto applicable = [&](const char* key, const char* value) {
    const int i = resolved.find(key);
    if (i < 0 || resolved.source(static_cast<size_t>(i)) != OptionLevel::Default) return false;
    char buf[64];
    return std::string_view(
               resolved.option(static_cast<size_t>(i)).format_value(buf, sizeof buf)) != value;
  };
  for (const SelectionVariant& v : b.selection_variants()) {
    if (v.lowers_precision && !options.selection_lower_precision) continue;
    if (applicable(v.key, v.value)) out.push_back({v.key, v.value});
  }
  if (thread_option(b, resolved) >= 0 && policy.threads > 1 && applicable("num_threads", "1")) {
    out.push_back({"num_threads", "1"});
  }
  return out;
}

// The CPU threads `b`'s delegate gets with `resolved`: its num_threads (the policy's at 0) for a
// thread-pool backend that has one, else 1.
uint32_t delegate_threads(const BackendInterface& b, const ResolvedOptions& resolved,
                          const PolicyDecision& policy) {
  const int i = thread_option(b, resolved);
  if (i < 0) return 1;
  const int64_t n = resolved.option(static_cast<size_t>(i)).as_int();
  return n > 0 ? static_cast<uint32_t>(n) : std::max<uint32_t>(1, policy.threads);
}

}  // namespace

void fill_deterministic(Tensor* t, uint32_t seed) {
  if (t->data() == nullptr || t->nbytes() == 0) return;
  if (t->dtype() == ScalarType::Float32) {
    float* p = t->data_as<float>();
    uint32_t state = 0x9E3779B9u ^ seed;
    for (int64_t k = 0; k < t->numel(); ++k) {
      state = state * 1664525u + 1013904223u;
      p[k] = static_cast<float>(state >> 8) / static_cast<float>(1u << 23) - 1.0f;
    }
  } else {
    std::memset(t->data(), 0, t->nbytes());
  }
}

namespace {

std::atomic<uint64_t> g_races_begun{0};

}  // namespace

uint64_t races_begun() {
  return g_races_begun.load();
}

void park_candidate_pools(const std::vector<std::string>& names, const BackendInterface* next) {
  for (const std::string& n : names) {
    Result<BackendInterface*> b = get_backend(n);
    if (b.ok() && *b != next && (*b)->uses_cpu_thread_pool()) (*b)->park_idle_workers();
  }
}

void write_selection_summary(SelectionReport* report) {
  // Accepted ones by speed, then the others with why.
  std::vector<const SelectionCandidate*> accepted, rest;
  for (size_t i = 0; i < report->num_candidates; ++i) {
    (report->candidates[i].accepted ? accepted : rest).push_back(&report->candidates[i]);
  }
  std::stable_sort(accepted.begin(), accepted.end(),
                   [](const SelectionCandidate* a, const SelectionCandidate* b) {
                     return a->median_ms < b->median_ms;
                   });
  // A faster one not chosen (a variant inside the margin, or whose longer init its runs do not
  // repay: its reason says which) is marked, so that the line does not read as a wrong choice.
  const SelectionCandidate* chosen = nullptr;
  for (const SelectionCandidate* c : accepted) {
    if (c->chosen) chosen = c;
  }
  std::string summary = "measured:";
  for (size_t i = 0; i < accepted.size(); ++i) {
    const bool passed_over =
        !accepted[i]->chosen && chosen != nullptr && accepted[i]->median_ms < chosen->median_ms;
    summary += string_format("%s %s%s%s%s %.3g ms%s", i ? "," : "", accepted[i]->backend,
                             accepted[i]->options[0] ? " [" : "", accepted[i]->options,
                             accepted[i]->options[0] ? "]" : "", accepted[i]->median_ms,
                             accepted[i]->chosen ? " (chosen)"
                             : passed_over       ? " (not taken)"
                                                 : "");
  }
  if (accepted.empty()) summary += " nothing ran";
  for (size_t i = 0; i < rest.size(); ++i) {
    summary += string_format(
        "%s %s%s%s%s %s", i ? "," : ";", rest[i]->backend, rest[i]->options[0] ? " [" : "",
        rest[i]->options, rest[i]->options[0] ? "]" : "",
        std::strncmp(rest[i]->reason, "skipped", 7) == 0 ? rest[i]->reason : "rejected");
  }
  set_text(report->summary, sizeof report->summary, summary + report->notes);
}

std::vector<RaceResult> race(const std::vector<Contender>& contenders, int min_runs, int max_runs,
                             RunClocks clocks, const std::vector<std::string>& names,
                             const std::function<bool()>& budget_spent, int last_ran) {
  g_races_begun.fetch_add(1);
  const size_t n = contenders.size();
  std::vector<RunTimer> timers;
  timers.reserve(n);
  for (const Contender& c : contenders) timers.emplace_back(max_runs, clocks, c.on_calling_thread);
  // Timed runs made right after each one's warm-up, as the first round: all or none, so that
  // every round has one run of each.
  bool seeded = n > 0;
  for (const Contender& c : contenders) seeded = seeded && c.first_wall_ms >= 0;
  if (seeded) {
    for (size_t i = 0; i < n; ++i)
      timers[i].add(contenders[i].first_wall_ms, contenders[i].first_cpu_ms);
  }
  const size_t rounds_done = seeded ? 1 : 0;
  std::vector<RaceResult> out(n);
  std::vector<char> done(n, 0);  // the fastest, with nobody left to race
  auto running = [&](size_t i) {
    return out[i].error.is_ok() && !out[i].stopped && !out[i].beaten && !done[i] &&
           timers[i].wants_more() && timers[i].attempts() < max_runs + min_runs;
  };
  // Only undisturbed runs judge: a contender whose runs so far were all disturbed reads slow for
  // that alone (its kept() are then its least disturbed runs), and is timed on. Off its calling
  // thread, disturbance is measured between runs (RunTimer), so one run alone says nothing yet.
  auto clean = [&](size_t i) {
    return out[i].error.is_ok() && !timers[i].disturbed_throughout() &&
           timers[i].attempts() >= (contenders[i].on_calling_thread ? 1 : 2);
  };
  // Whether a timed run follows an untimed one (see below): not once every contender still
  // racing has timed runs of kLongRunMs or more. Runs that long (ResNet-18, GoogLeNet,
  // DenseNet-121 and ResNeXt-50 at one thread, 12-65 ms) took a median 1.1 % longer right after
  // the other backend's run than right after their own (52 pairs, 35 within 3 %), and the
  // untimed runs were about a seventh of ResNeXt-50's measuring load (docs/performance.md,
  // twentieth session). Judged on timed runs, not on the first after init: at two threads on a
  // busy machine that one took 76-290 ms for SqueezeNet's 3 ms runs.
  // Whether some contender still racing has no timed run yet or a quickest one below
  // kLongRunMs.
  auto short_runs = [&]() {
    for (size_t i = 0; i < n; ++i) {
      if (!running(i)) continue;
      const std::vector<double> kept = timers[i].kept();
      if (kept.empty() || kept.front() < kLongRunMs) return true;
    }
    return false;
  };
  // Who leaves the race, judged after every timed run (not only after a whole round: a rival
  // clearly slower after its second run is out before the leader's turn comes round again).
  auto judge = [&]() {
    int leader = -1;
    double leader_ms = 0;
    for (size_t i = 0; i < n; ++i) {
      const double m = timers[i].median();
      if (clean(i) && m > 0 && (leader < 0 || m < leader_ms)) {
        leader = static_cast<int>(i);
        leader_ms = m;
      }
    }
    if (leader < 0) return;
    const std::vector<double> lead = timers[static_cast<size_t>(leader)].kept();
    bool others = false;
    for (size_t i = 0; i < n; ++i) {
      if (static_cast<int>(i) == leader || !running(i)) continue;
      const std::vector<double> kept = timers[i].kept();
      if (clean(i) && clearly_slower(kept, leader_ms)) {
        out[i].stopped = true;
      } else if (clean(i) && static_cast<int>(kept.size()) >= min_runs &&
                 static_cast<int>(lead.size()) >= min_runs && kept.front() > lead.back()) {
        out[i].beaten = true;  // its quickest run slower than the leader's slowest
      } else {
        others = true;
      }
    }
    // Once every rival is out, more runs of the leader would be timed alone and decide nothing
    // (at one thread on ResNeXt-50 the third was 54 ms of the measuring load; at two threads on
    // EfficientNet-B0 its untimed and timed runs after XNNPACK's second were 11-13 ms of about
    // 240): the run it has gives its figure. A rival is only out against a clean run of the
    // leader, and a leader's run read too slow makes a rival less clearly slower, not more.
    // Alone from the start, its runs are all there is: min_runs.
    const int leader_runs = n > 1 ? 1 : min_runs;
    if (!others && static_cast<int>(lead.size()) >= leader_runs)
      done[static_cast<size_t>(leader)] = 1;
  };
  bool rewarm = !seeded || short_runs();
  const size_t first = last_ran >= 0 ? static_cast<size_t>(last_ran) : 0;
  for (size_t round = 0;; ++round) {
    bool any = false;
    for (size_t k = 0; k < n; ++k) {
      const size_t i = (first + round + k) % n;  // each round starts one further on
      if (!running(i)) continue;
      any = true;
      // Its caches as its own last run left them (past the budget too: its timed runs
      // would otherwise be the only cold ones).
      if (rewarm && last_ran != static_cast<int>(i)) {
        park_candidate_pools(names, contenders[i].backend);
        const Status st = contenders[i].run();
        last_ran = static_cast<int>(i);
        if (!st.is_ok()) {
          out[i].error = st;
          continue;
        }
      }
      park_candidate_pools(names, contenders[i].backend);
      const Status st = timers[i].time(contenders[i].run);
      last_ran = static_cast<int>(i);
      if (!st.is_ok()) out[i].error = st;
      judge();
    }
    if (!any) break;
    rewarm = short_runs();
    // After a whole round, and not before the second: each has two timed runs (one run alone
    // can be an outlier that would decide, see clearly_slower).
    if (round + rounds_done >= 1 && budget_spent()) break;
  }
  for (size_t i = 0; i < n; ++i) {
    out[i].median_ms = timers[i].median();
    out[i].runs = static_cast<int>(timers[i].kept().size());
    out[i].disturbed = timers[i].disturbed();
    out[i].disturbed_throughout = timers[i].disturbed_throughout();
  }
  return out;
}

bool replaces_fastest(double ms, double best_ms, bool variant) {
  return ms < best_ms * (variant ? kVariantMargin : 1.0);
}

int keep_by_load(Span<const double> init_ms, Span<const double> median_ms, double runs_per_load) {
  int fastest = -1, cheapest = -1;
  auto load = [&](int i) { return init_ms[i] + runs_per_load * median_ms[i]; };
  for (int i = 0; i < static_cast<int>(median_ms.size()); ++i) {
    if (fastest < 0 || replaces_fastest(median_ms[i], median_ms[fastest], false)) fastest = i;
    if (cheapest < 0 || load(i) < load(cheapest)) cheapest = i;
  }
  if (fastest < 0) return -1;
  return load(cheapest) < load(fastest) * kVariantMargin ? cheapest : fastest;
}

bool clearly_slower(const std::vector<double>& times, double best_ms) {
  // One run is never enough: a run twice as slow as the runs around it happens (RegNet's
  // oneDNN, 12.9 ms once between runs of 5.4-6.5), and a choice made on it is remembered.
  if (times.size() < 2) return false;
  const double quickest = *std::min_element(times.begin(), times.end());
  return quickest > best_ms * 1.25;
}

namespace {

double steady_ms() {
  return std::chrono::duration<double, std::milli>(Clock::now().time_since_epoch()).count();
}

double thread_cpu_ms() {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

// The calling thread's user (or system) CPU time; 0 when it cannot be read.
double thread_rusage_ms(bool user) {
  rusage ru{};
  if (getrusage(RUSAGE_THREAD, &ru) != 0) return 0;
  const timeval& t = user ? ru.ru_utime : ru.ru_stime;
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_usec) * 1e-3;
}
double thread_user_ms() {
  return thread_rusage_ms(true);
}
double thread_sys_ms() {
  return thread_rusage_ms(false);
}

std::atomic<double (*)()> g_wall_clock{nullptr};
std::atomic<double (*)()> g_cpu_clock{nullptr};
std::atomic<double (*)()> g_user_clock{nullptr};
std::atomic<double (*)()> g_sys_clock{nullptr};
std::atomic<bool> g_clocks_replaced{false};

}  // namespace

RunClocks selection_clocks() {
  if (!g_clocks_replaced.load()) {
    return RunClocks{steady_ms, thread_cpu_ms, thread_user_ms, thread_sys_ms};
  }
  return RunClocks{g_wall_clock.load(), g_cpu_clock.load(), g_user_clock.load(),
                   g_sys_clock.load()};
}

void set_selection_clocks(RunClocks clocks) {
  const bool replaced = clocks.wall_ms != nullptr;
  g_wall_clock.store(clocks.wall_ms);
  g_cpu_clock.store(clocks.thread_cpu_ms);
  g_user_clock.store(clocks.thread_user_ms);
  g_sys_clock.store(clocks.thread_sys_ms);
  g_clocks_replaced.store(replaced);
}

double auto_budget_base_ms(double wall_ms, double user_ms, double sys_ms) {
  if (user_ms < 0 || sys_ms < 0) return wall_ms;
  const double excess = std::max(0.0, sys_ms - user_ms);
  return std::min(wall_ms, std::max(user_ms, wall_ms - excess));
}

bool RunTimer::is_disturbed(double wall_ms, double off_ms, double least_off_ms) {
  return off_ms - least_off_ms > std::max(0.05, 0.05 * wall_ms);
}

void RunTimer::add(double wall_ms, double cpu_ms) {
  // The CPU clock is read outside the wall-clock window, so a run can show slightly more CPU
  // than wall time: no time off the CPU.
  const double off = cpu_ms < 0 ? 0.0 : std::max(0.0, wall_ms - cpu_ms);
  runs_.push_back({wall_ms, off});
}

double RunTimer::least_off() const {
  double least = INFINITY;
  for (const Run& r : runs_) least = std::min(least, r.off_ms);
  return least;
}

int RunTimer::clean_runs() const {
  const double from = strict_baseline();
  int clean = 0;
  for (const Run& r : runs_) clean += is_disturbed(r.wall_ms, r.off_ms, from) ? 0 : 1;
  return clean;
}

bool RunTimer::disturbed_throughout() const {
  return !runs_.empty() && clean_runs() == 0;
}

int RunTimer::disturbed() const {
  return attempts() - clean_runs();
}

std::vector<double> RunTimer::kept() const {
  // Every run disturbed from zero: the least disturbed ones.
  const double from = disturbed_throughout() ? least_off() : strict_baseline();
  std::vector<double> out;
  for (const Run& r : runs_) {
    if (!is_disturbed(r.wall_ms, r.off_ms, from)) out.push_back(r.wall_ms);
  }
  std::sort(out.begin(), out.end());
  return out;
}

double RunTimer::median() const {
  const std::vector<double> k = kept();
  return k.empty() ? 0.0 : k[k.size() / 2];
}

bool RunTimer::wants_more() const {
  // Clean runs, so that runs all disturbed alike do not end it early.
  return clean_runs() < wanted_ && attempts() < 2 * wanted_;
}

void KeptCandidate::reset() {
  if (backend != nullptr && handle != nullptr) backend->destroy(handle);
  backend = nullptr;
  handle = nullptr;
  candidate = -1;
  options.reset();
  derived.reset();
  first_wall_ms = first_cpu_ms = -1;
}

Status apply_selected_options(std::string_view backend, const char* text,
                              ResolvedOptions* resolved) {
  const std::string_view assignment(text);
  const size_t eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return Status::error(Error::InvalidArgument, "selected option '%s' is not KEY=VALUE", text);
  }
  const std::string key(assignment.substr(0, eq));
  const int i = resolved->find(key);
  if (i < 0) return unknown_option_status(backend, resolved->schema(), key);
  BackendOption value;
  TESSERA_RETURN_IF_ERROR(parse_option_value(backend, resolved->spec(static_cast<size_t>(i)),
                                             assignment.substr(eq + 1), &value));
  resolved->assign(static_cast<size_t>(i), value, OptionLevel::Selection);
  return Status::ok();
}

namespace {

// An init made before its candidate enters the measurement: two of them at once, the second on
// a thread of its own (see BackendInterface::init_beside_other_backends).
struct PreInit {
  std::unique_ptr<ResolvedOptions> options;  // what it was initialised with
  std::unique_ptr<DerivedValues> derived = std::make_unique<DerivedValues>();
  std::optional<Result<DelegateHandle*>> made;
  double init_ms = 0;
  // Its thread's user and system CPU time over the init (negative: not known).
  double user_ms = -1, sys_ms = -1;
  // The init did one-time work (BackendInterface::init_would_be_cold) that the backend's cache
  // now spares later loads: init_ms is not what those loads will take.
  bool warmer_later = false;
};

// Whether `b`'s init of `d` with `resolved` would do one-time work now that a cache of the
// backend spares later loads (BackendInterface::init_would_be_cold); false when it cannot tell.
bool init_would_be_cold(const Program& program, const fb::Method* method, const fb::Delegate* d,
                        BackendInterface* b, Span<const CompileSpec> specs,
                        ResolvedOptions* resolved, const MethodState* s,
                        Span<const SymbolValue> symbols) {
  const Result<bool> cold =
      ask_init_would_be_cold(program, method, d, *b, specs, resolved, *s, symbols);
  return cold.ok() && *cold;
}

}  // namespace

int measure_candidates(const Program& program, const fb::Method* method, const fb::Instruction* ins,
                       const fb::Delegate* d, std::string_view requested,
                       Span<const CompileSpec> specs, const LoadOptions& options,
                       const CpuPoolBackends& pools, MethodState* s,
                       Span<const SymbolValue> symbols, Span<EValue*> args, DelegateInfo* info,
                       KeptCandidate* kept) {
  kept->reset();
  const TraceSpan span("select", Trace::running() ? "select " + d->id()->str() : std::string(),
                       "measuring the candidates");
  SelectionReport& report = info->selection;
  std::snprintf(report.mode, sizeof report.mode, "%s", "measure");
  report.auto_budget_base_ms = 0;
  const fb::Graph* graph = d->payload_nested_root();
  const uint32_t num_inputs = ins->inputs() ? ins->inputs()->size() : 0;
  const Validation validation = options.lenient_options ? Validation::Lenient : Validation::Strict;

  const std::vector<std::string> names = candidate_names(d, requested, options);

  const RunClocks clocks = selection_clocks();
  const Clock::time_point start = Clock::now();
  // The budget: set, the whole measurement's; auto, the runs' (the time outside the candidates'
  // inits), known once the first candidate initialised (see LoadOptions::selection_budget_ms).
  const bool auto_budget = options.selection_budget_is_auto();
  double inits_ms = 0;         // the candidates' inits so far
  double runs_budget_ms = -1;  // auto: kAutoBudgetRunsPerInit x the first init
  std::string first_init;      // auto: whose init that was
  double first_init_ms = 0;    // auto: and what it read
  // What the budget has left now (auto: of the runs; set: of the whole measurement); unbounded
  // while the auto budget is not known yet.
  auto budget_left_ms = [&]() {
    const double spent = ms_between(start, Clock::now());
    if (!auto_budget) return options.selection_budget_ms - spent;
    if (runs_budget_ms < 0) return std::numeric_limits<double>::infinity();
    return runs_budget_ms - (spent - inits_ms);
  };
  auto budget_spent = [&]() { return budget_left_ms() <= 0; };
  auto skipped_for_budget = [&](SelectionCandidate* c) {
    const std::string why =
        auto_budget
            ? string_format("skipped (budget auto: %.0f ms of runs spent, %g x %s's init)",
                            runs_budget_ms, LoadOptions::kAutoBudgetRunsPerInit, first_init.c_str())
            : string_format("skipped (budget: %.0f ms spent)", options.selection_budget_ms);
    set_text(c->reason, sizeof c->reason, why);
  };
  auto next_candidate = [&](const std::string& backend) -> SelectionCandidate* {
    if (report.num_candidates == SelectionReport::kMaxCandidates) return nullptr;
    SelectionCandidate* c = &report.candidates[report.num_candidates++];
    set_text(c->backend, sizeof c->backend, backend);
    return c;
  };
  auto index_of = [&](const SelectionCandidate* c) {
    return static_cast<int>(c - report.candidates);
  };
  // Backends the application listed or the compiler recorded are each measured (after the
  // budget is spent, with two timed runs); the budget cuts the others (every registered backend,
  // for a pinned delegate without a list) and the option variants.
  const bool listed = options.selection_candidates_size() > 0 ||
                      (d->candidates() != nullptr && d->candidates()->size() > 0);

  // A run of the candidate `k` holds on the delegate's arguments (warm-up, untimed and timed),
  // a span of its own in a running trace ("select BACKEND [OPTIONS]").
  auto contender = [&](KeptCandidate* k) {
    std::string label;
    if (Trace::running() && k->candidate >= 0) {
      const SelectionCandidate& c = report.candidates[k->candidate];
      label = string_format("select %s%s%s%s", c.backend, c.options[0] ? " [" : "", c.options,
                            c.options[0] ? "]" : "");
    }
    return Contender{[k, info, args, label]() {
                       TraceSpan span("select", label, info->id);
                       BackendExecutionContext ctx(k->options.get());
                       ctx.set_delegate_id(info->id);
                       return k->backend->execute(ctx, k->handle, args);
                     },
                     k->backend->runs_on_calling_thread(), k->first_wall_ms, k->first_cpu_ms,
                     k->backend};
  };
  Outputs reference;
  bool have_reference = false;
  // By candidate: its init was cold and the backend's cache now spares later loads that work
  // (PreInit::warmer_later); such an init is not weighed against the others' (see step 2).
  std::vector<char> warmer_later(SelectionReport::kMaxCandidates, 0);
  const KeptCandidate* last_ran = nullptr;  // whose run was the last (its warm-up), if accepted
  // `b` initialised with `opts` on `state` (the method's, or the second thread's), timed.
  auto init_timed = [&](const std::string& name, BackendInterface* b,
                        Span<const CompileSpec> use_specs, std::unique_ptr<ResolvedOptions> opts,
                        MethodState* state, PreInit* into) {
    into->options = std::move(opts);
    const bool cold =
        init_would_be_cold(program, method, d, b, use_specs, into->options.get(), state, symbols);
    bool fatal = false;
    const bool split = clocks.thread_user_ms != nullptr && clocks.thread_sys_ms != nullptr;
    const double user0 = split ? clocks.thread_user_ms() : 0;
    const double sys0 = split ? clocks.thread_sys_ms() : 0;
    const Clock::time_point start = Clock::now();
    into->made.emplace(init_on(program, method, d, name, b, use_specs, pools, state, symbols,
                               into->options.get(), into->derived.get(), &fatal));
    into->init_ms = ms_between(start, Clock::now());
    if (split) {
      into->user_ms = clocks.thread_user_ms() - user0;
      into->sys_ms = clocks.thread_sys_ms() - sys0;
    }
    into->warmer_later =
        cold && into->made->ok() &&
        !init_would_be_cold(program, method, d, b, use_specs, into->options.get(), state, symbols);
  };
  // Its warm-up: `b` initialised with `opts` into `out` (with `pre`, the init was made already,
  // the time of its phase in inits_ms; else it is made here) and run once, the first to run
  // giving the reference outputs, the others compared with them. False, with c's reason, when
  // it failed or differs (nothing stays initialised then).
  auto warm = [&](const std::string& name, BackendInterface* b, Span<const CompileSpec> use_specs,
                  std::unique_ptr<ResolvedOptions> opts, SelectionCandidate* c, KeptCandidate* out,
                  PreInit* pre) {
    PreInit here;
    if (pre == nullptr) {
      init_timed(name, b, use_specs, std::move(opts), s, &here);
      inits_ms += here.init_ms;
      pre = &here;
    }
    std::unique_ptr<DerivedValues> derived = std::move(pre->derived);
    const Result<DelegateHandle*>& made = *pre->made;
    opts = std::move(pre->options);
    c->init_ms = pre->init_ms;
    warmer_later[index_of(c)] = pre->warmer_later ? 1 : 0;
    if (auto_budget && runs_budget_ms < 0 && made.ok()) {
      report.auto_budget_base_ms = auto_budget_base_ms(c->init_ms, pre->user_ms, pre->sys_ms);
      runs_budget_ms = LoadOptions::kAutoBudgetRunsPerInit * report.auto_budget_base_ms;
      first_init = name;
      first_init_ms = c->init_ms;
    }
    if (!made.ok()) {
      set_text(c->reason, sizeof c->reason,
               string_format("init failed: %s", made.status().message()));
      return false;
    }
    out->reset();
    out->backend = b;
    out->handle = *made;
    out->candidate = index_of(c);
    out->options = std::move(opts);
    out->derived = std::move(derived);
    fill_inputs(method, ins, args);
    park_candidate_pools(names, out->backend);
    const Status st = contender(out).run();
    std::string why;
    if (!st.is_ok()) {
      why = string_format("execute failed: %s", st.message());
    } else if (!have_reference) {
      reference = copy_outputs(args, num_inputs);
      have_reference = true;
      set_text(c->reason, sizeof c->reason, "reference");
    } else {
      why = compare(reference, copy_outputs(args, num_inputs), args, num_inputs,
                    options.selection_tolerance);
    }
    last_ran = why.empty() ? out : nullptr;
    if (why.empty()) return true;
    set_text(c->reason, sizeof c->reason, why);
    out->reset();
    return false;
  };
  // A warmed candidate's first timed run, at once, its caches as its warm-up left them (race():
  // the first round, for the backends racing each other in step 2). False, with c's reason,
  // when it failed (nothing stays initialised then).
  auto time_first_run = [&](KeptCandidate* out, SelectionCandidate* c) {
    park_candidate_pools(names, out->backend);
    double wall = 0, cpu = 0;
    const Status timed = RunTimer::time_once(clocks, contender(out).run, &wall, &cpu);
    if (!timed.is_ok()) {
      last_ran = nullptr;
      set_text(c->reason, sizeof c->reason, string_format("execute failed: %s", timed.message()));
      out->reset();
      return false;
    }
    out->first_wall_ms = wall;
    out->first_cpu_ms = cpu;
    last_ran = out;
    return true;
  };
  // `from` becomes the fastest so far, in place of what `kept` held.
  auto adopt = [&](KeptCandidate* from) {
    kept->reset();
    kept->backend = from->backend;
    kept->handle = from->handle;
    kept->candidate = from->candidate;
    kept->options = std::move(from->options);
    kept->derived = std::move(from->derived);
    from->handle = nullptr;  // kept's now
    from->reset();
  };
  auto record = [&](SelectionCandidate* c, const RaceResult& r) {
    c->median_ms = r.median_ms;
    c->runs = r.runs;
    c->disturbed_runs = r.disturbed;
    if (r.disturbed_throughout) report.disturbed_measurements = 1;
  };

  // 1. Each backend with the load's options: initialised and run once (the program's own
  // first: the reference), its option variants' report entries reserved right after its own.
  struct Entrant {
    std::string name;
    BackendInterface* backend = nullptr;
    Span<const CompileSpec> specs;
    std::unique_ptr<ResolvedOptions> resolved;
    std::vector<Variant> variants;
    std::vector<SelectionCandidate*> slots;  // the variants' report entries
    std::vector<char> changes;               // variant_changes, asked of the resolved one
    DerivedValues derived;                   // what it derived for options at auto
    SelectionCandidate* entry = nullptr;
    KeptCandidate held;  // initialised and accepted: in the race
  };
  std::vector<std::unique_ptr<Entrant>> entrants;
  // An entrant's warm-up (warm), then its first timed run and what it derived (finish_entrant).
  auto warm_entrant = [&](Entrant* e, PreInit* pre) {
    return warm(e->name, e->backend, e->specs,
                pre != nullptr ? nullptr : std::make_unique<ResolvedOptions>(*e->resolved),
                e->entry, &e->held, pre);
  };
  auto finish_entrant = [&](Entrant* e) {
    if (!time_first_run(&e->held, e->entry)) return;
    e->derived = *e->held.derived;
    for (size_t k = 0; k < e->variants.size(); ++k) {
      const Variant& v = e->variants[k];
      e->changes[k] = e->backend->variant_changes(e->held.handle, v.key, v.value) ? 1 : 0;
    }
  };
  auto enter_entrant = [&](Entrant* e, PreInit* pre) {
    if (warm_entrant(e, pre)) finish_entrant(e);
  };
  // Listed backends are each measured whatever the budget, so they enter after this loop, where
  // two of them may initialise at once; the others enter as they come (the budget may cut them).
  std::vector<Entrant*> waiting;
  for (const std::string& name : names) {
    SelectionCandidate* c = next_candidate(name);
    if (c == nullptr) break;
    const bool is_requested = name == requested;
    if (!is_requested && !listed && budget_spent()) {
      skipped_for_budget(c);
      continue;
    }
    Result<BackendInterface*> backend = get_backend(name);
    if (!backend.ok()) {
      set_text(c->reason, sizeof c->reason, backend.status().message());
      continue;
    }
    BackendInterface* b = *backend;
    if (!b->is_available()) {
      set_text(c->reason, sizeof c->reason, "not available on this machine");
      continue;
    }
    char missing[128];
    if (!supports_all(*b, graph, missing, sizeof missing)) {
      set_text(c->reason, sizeof c->reason, string_format("does not support %s", missing));
      continue;
    }
    auto e = std::make_unique<Entrant>();
    e->name = name;
    e->backend = b;
    e->specs = is_requested ? specs : Span<const CompileSpec>();
    e->entry = c;
    e->resolved = std::make_unique<ResolvedOptions>();
    const Status st =
        resolve_options(name, *b, d->id()->string_view(), e->specs, options.backend_options,
                        options.delegate_options, validation, e->resolved.get());
    if (!st.is_ok()) {
      set_text(c->reason, sizeof c->reason, string_format("options: %s", st.message()));
      continue;
    }
    e->variants = variants_for(*b, *e->resolved, options, *s->policy);
    for (const Variant& v : e->variants) {
      SelectionCandidate* slot = next_candidate(name);
      e->slots.push_back(slot);
      if (slot != nullptr) set_text(slot->options, sizeof slot->options, v.key + "=" + v.value);
    }
    e->changes.assign(e->variants.size(), 1);
    if (listed) {
      waiting.push_back(e.get());
    } else {
      enter_entrant(e.get(), nullptr);
    }
    entrants.push_back(std::move(e));
  }
  // The first two waiting whose backends allow it initialise at once when their delegates'
  // threads together fit the usable CPUs (two at one thread each on two): the first on this
  // thread, the other on a thread of its own, with a method allocator that refuses (the
  // method's is not shared between threads). Then each is run and timed as before, one after
  // the other: no timed run overlaps an init. ResNeXt-50's oneDNN and XNNPACK inits took about
  // 300 ms each, one after the other, of a 1.1 s measuring load at one thread. At two threads on
  // two CPUs each init took about twice as long beside the other (SqueezeNet: oneDNN 66-75 ms
  // against 36-42, XNNPACK 48-55 against 34-37): nothing gained there.
  // The first of the pair, when it is the first to enter, makes its warm-up (an untimed run,
  // the reference) as soon as its own init is made, while the other may still be initialising;
  // its first timed run waits for the other's init to end. (Only the first: a warm-up writes
  // the delegate's outputs, and the reference must stay the program's own backend's.)
  std::string together;  // for the summary
  {
    Entrant* first = nullptr;
    Entrant* second = nullptr;
    const uint32_t cpus = (s->device != nullptr ? *s->device : DeviceInfo::get()).usable_cpus;
    for (Entrant* e : waiting) {
      if (!e->backend->init_beside_other_backends()) continue;
      if (first == nullptr) {
        first = e;
      } else if (delegate_threads(*first->backend, *first->resolved, *s->policy) +
                     delegate_threads(*e->backend, *e->resolved, *s->policy) <=
                 cpus) {
        second = e;
        break;
      }
    }
    PreInit pre[2];
    const bool warm_early = second != nullptr && first == waiting.front();
    bool first_warmed = false;  // with warm_early: its warm-up made and accepted
    if (second != nullptr) {
      Entrant* const pair[2] = {first, second};
      MethodState beside = *s;
      HeapMemoryAllocator refuses(size_t{64} << 10, /*limit=*/0);
      beside.allocator = &refuses;
      auto init = [&](int k, MethodState* state) {
        Entrant* e = pair[k];
        init_timed(e->name, e->backend, e->specs, std::make_unique<ResolvedOptions>(*e->resolved),
                   state, &pre[k]);
      };
      const Clock::time_point t = Clock::now();
      Clock::time_point own_end, other_end, warm_end;
      {
        std::jthread other([&] {
          init(1, &beside);
          other_end = Clock::now();
        });
        init(0, s);
        own_end = Clock::now();
        if (warm_early) first_warmed = warm_entrant(first, &pre[0]);
        warm_end = Clock::now();
      }  // joined
      // The warm-up counts as runs for the budget, the part beside the other init too, as it
      // did when it came after the join: the budget decides as before, and the load is shorter.
      const double beside_ms =
          std::max(0.0, ms_between(own_end, std::min(warm_end, std::max(own_end, other_end))));
      inits_ms += ms_between(t, std::max(own_end, other_end)) - beside_ms;
      together = string_format("; %s and %s initialised at once", first->name.c_str(),
                               second->name.c_str());
    }
    for (Entrant* e : waiting) {
      if (warm_early && e == first) {
        if (first_warmed) finish_entrant(e);
        continue;
      }
      enter_entrant(e, second == nullptr ? nullptr
                       : e == first      ? &pre[0]
                       : e == second     ? &pre[1]
                                         : nullptr);
    }
  }

  // 2. The backends that ran, timed in alternating rounds (so that all see the same machine:
  // a slowdown that comes and goes does not decide), each stopped once clearly slower.
  int chosen = -1;
  {
    std::vector<Entrant*> in;
    std::vector<Contender> contenders;
    int last = -1;
    for (auto& e : entrants) {
      if (e->held.handle == nullptr) continue;
      if (&e->held == last_ran) last = static_cast<int>(in.size());
      in.push_back(e.get());
      contenders.push_back(contender(&e->held));
    }
    const std::vector<RaceResult> results =
        race(contenders, kRaceMinRuns, kRaceMaxRuns, clocks, names, budget_spent, last);
    // The chosen (keep_by_load): the fastest, unless another's init plus the runs the
    // application makes per load (LoadOptions::selection_runs_per_load) at its median comes to
    // 3% less. Each load from the selection cache initialises the chosen backend again, so
    // faster runs must repay a longer init within those runs, as a variant's must (step 3).
    // MobileNetV3-Small at one thread: oneDNN ran 1.21 ms against XNNPACK's 1.64 and
    // initialised in 38 ms against 16: chosen at 100 runs a load, not at 10. Without the 3%,
    // DenseNet-121 at two threads took XNNPACK at 10 runs (329 against 336 ms a load as
    // measured), which fresh processes made 8% slower than oneDNN.
    // An init that was cold and is now in the backend's cache (an OpenCL program compiled and
    // stored) says nothing of what later loads take: it is weighed as the quickest other init.
    const double runs_per_load = static_cast<double>(options.selection_runs_per_load);
    double quickest_init_ms = -1;
    for (size_t i = 0; i < in.size(); ++i) {
      const SelectionCandidate* c = in[i]->entry;
      if (results[i].error.is_ok() && !warmer_later[index_of(c)] &&
          (quickest_init_ms < 0 || c->init_ms < quickest_init_ms)) {
        quickest_init_ms = c->init_ms;
      }
    }
    auto weighed_init_ms = [&](const SelectionCandidate* c) {
      return warmer_later[index_of(c)] ? std::max(quickest_init_ms, 0.0) : c->init_ms;
    };
    std::vector<Entrant*> ran;  // accepted, in the order of `in`
    std::vector<double> ran_init_ms, ran_median_ms;
    for (size_t i = 0; i < in.size(); ++i) {
      SelectionCandidate* c = in[i]->entry;
      if (!results[i].error.is_ok()) {
        set_text(c->reason, sizeof c->reason,
                 string_format("execute failed: %s", results[i].error.message()));
        continue;  // destroyed with the others below
      }
      record(c, results[i]);
      c->accepted = true;
      if (results[i].stopped || results[i].beaten) {
        add_reason(c, string_format("%s: stopped after %d timed run%s",
                                    results[i].stopped ? "clearly slower" : "slower in every run",
                                    results[i].runs, results[i].runs == 1 ? "" : "s"));
      }
      if (warmer_later[index_of(c)]) {
        add_reason(c, string_format("its init (cold, now in its cache) weighed as the quickest "
                                    "other's, %.0f ms",
                                    weighed_init_ms(c)));
      }
      ran.push_back(in[i]);
      ran_init_ms.push_back(weighed_init_ms(c));
      ran_median_ms.push_back(c->median_ms);
    }
    const int kept_index = keep_by_load(ran_init_ms, ran_median_ms, runs_per_load);
    Entrant* best = kept_index >= 0 ? ran[static_cast<size_t>(kept_index)] : nullptr;
    if (best != nullptr) {
      chosen = index_of(best->entry);
      adopt(&best->held);
      // Those with faster runs than the chosen lost on their longer inits: say by how much.
      const SelectionCandidate* b = best->entry;
      for (size_t i = 0; i < in.size(); ++i) {
        SelectionCandidate* c = in[i]->entry;
        if (!c->accepted || c == b || !replaces_fastest(c->median_ms, b->median_ms, false)) {
          continue;
        }
        const double extra_init_ms = weighed_init_ms(c) - weighed_init_ms(b);
        const double saved_ms = b->median_ms - c->median_ms;
        add_reason(c, string_format("not taken: its init took %.0f ms more (%.0f against %.0f "
                                    "for %s), repaid only after %.0f runs (more than %.0f)",
                                    extra_init_ms, weighed_init_ms(c), weighed_init_ms(b),
                                    b->backend, extra_init_ms / saved_ms, runs_per_load));
      }
    }
    for (Entrant* e : in) e->held.reset();  // the others go
  }

  // The init of `b`, the fastest so far (`kept`), made again on the loading thread with nothing
  // beside it, timed into b->alone_init_ms and destroyed; once, and only for an entrant's own
  // configuration (a variant's init was made alone already). An init that fails leaves it 0
  // and says so in b's reason: its first figure is weighed then.
  auto time_init_alone = [&](SelectionCandidate* b) {
    if (b->alone_init_ms > 0) return;
    const Entrant* owner = nullptr;
    for (const auto& e : entrants) {
      if (e->entry == b) owner = e.get();
    }
    if (owner == nullptr) return;
    PreInit again;
    init_timed(owner->name, owner->backend, owner->specs,
               std::make_unique<ResolvedOptions>(*owner->resolved), s, &again);
    inits_ms += again.init_ms;
    if (!again.made->ok()) {
      add_reason(
          b, string_format("its init made again alone failed: %s", again.made->status().message()));
      return;
    }
    KeptCandidate made;  // destroyed as it goes
    made.backend = owner->backend;
    made.handle = **again.made;
    b->alone_init_ms = std::max(again.init_ms, 1e-3);
    add_reason(b, string_format("its init made again alone: %.0f ms (%.0f as an entrant)",
                                again.init_ms, b->init_ms));
  };

  // 3. Each backend's option variants, one at a time, timed alternately with the fastest so
  // far; one that beats it by the variant margin replaces it.
  for (auto& e : entrants) {
    for (size_t t = 0; t < e->variants.size(); ++t) {
      SelectionCandidate* c = e->slots[t];
      if (c == nullptr) break;
      const Variant& v = e->variants[t];
      // A value the backend already derived for the option left at auto is the configuration
      // just measured (oneDNN's conv_algorithm=direct where no convolution suits Winograd).
      if (const DerivedValue* same = e->derived.find(v.key);
          same != nullptr && v.value == same->value) {
        set_text(c->reason, sizeof c->reason,
                 string_format("skipped: the resolved configuration (auto: %s)", same->value));
        continue;
      }
      if (!e->changes[t]) {
        set_text(c->reason, sizeof c->reason,
                 "skipped: the resolved configuration (the backend: no change here)");
        continue;
      }
      if (budget_spent()) {
        skipped_for_budget(c);
        continue;
      }
      // A trial that cannot end within what the budget has left is not begun: begun, it runs
      // to its end, and the budget is overrun by up to its whole length. ResNeXt-50 at two
      // threads, budget auto 226 ms of runs, about 210 spent when XNNPACK's num_threads=1
      // came up: begun, its warm-up and race took about 250 ms more (64 ms runs beside oneDNN's
      // 27), and the load outgrew the bound of issue 13 by 16-19 % in 2 of 5 repetitions of a
      // set run. The least a trial takes: its warm-up and kRaceLeastRuns timed runs, at its
      // backend's own speed as measured (a guess from below: its option may make it slower),
      // and as many of the fastest so far's; and, under a set budget, which counts inits too,
      // its init, as long as its backend's lowest.
      if (chosen >= 0 && e->entry != nullptr && e->entry->median_ms > 0 &&
          report.candidates[chosen].median_ms > 0) {
        double need = (1 + kRaceLeastRuns) * e->entry->median_ms +
                      kRaceLeastRuns * report.candidates[chosen].median_ms;
        if (!auto_budget) need += lowest_init_ms(*e->entry);
        const double left = budget_left_ms();
        if (need > left) {
          set_text(c->reason, sizeof c->reason,
                   auto_budget
                       ? string_format("skipped (budget auto: %.0f ms of runs, %.0f left; its "
                                       "warm-up and least race need about %.0f)",
                                       runs_budget_ms, std::max(left, 0.0), need)
                       : string_format("skipped (budget: %.0f of %g ms left; its init, warm-up "
                                       "and least race need about %.0f)",
                                       std::max(left, 0.0), options.selection_budget_ms, need));
          continue;
        }
      }
      auto trial = std::make_unique<ResolvedOptions>(*e->resolved);
      const Status st = apply_selected_options(e->name, c->options, trial.get());
      if (!st.is_ok()) {
        set_text(c->reason, sizeof c->reason, string_format("options: %s", st.message()));
        continue;
      }
      KeptCandidate held;
      if (!warm(e->name, e->backend, e->specs, std::move(trial), c, &held, nullptr)) {
        continue;
      }
      if (chosen < 0 || kept->handle == nullptr) {  // nothing to race against
        const std::vector<RaceResult> r =
            race(std::vector<Contender>{contender(&held)}, kRaceMinRuns, kRaceMaxRuns, clocks,
                 names, budget_spent, 0);
        if (!r[0].error.is_ok()) {
          set_text(c->reason, sizeof c->reason,
                   string_format("execute failed: %s", r[0].error.message()));
          continue;
        }
        record(c, r[0]);
        c->accepted = true;
        chosen = index_of(c);
        adopt(&held);
        continue;
      }
      SelectionCandidate* best = &report.candidates[chosen];
      // The variant (first) timed alternately with the fastest so far (`last_ran` as race()
      // takes it); empty, with c's reason and c not accepted, when a run failed: the fastest
      // so far ran before, so a failure now is the newcomer's to carry.
      auto race_the_fastest = [&](int last_ran) {
        std::vector<RaceResult> r =
            race(std::vector<Contender>{contender(&held), contender(kept)}, kRaceMinRuns,
                 kRaceMaxRuns, clocks, names, budget_spent, last_ran);
        if (r[0].error.is_ok() && r[1].error.is_ok()) return r;
        set_text(c->reason, sizeof c->reason,
                 string_format("execute failed: %s",
                               (!r[0].error.is_ok() ? r[0].error : r[1].error).message()));
        c->accepted = false;
        return std::vector<RaceResult>{};
      };
      const std::vector<RaceResult> r = race_the_fastest(0);
      if (r.empty()) continue;
      record(c, r[0]);
      c->accepted = true;
      const double before = best->median_ms;
      const double now = r[1].median_ms;
      if (r[1].disturbed_throughout) report.disturbed_measurements = 1;
      const std::string runs = r[0].runs == r[1].runs
                                   ? string_format("%d runs each", r[0].runs)
                                   : string_format("%d and %d runs", r[0].runs, r[1].runs);
      // The fastest so far read far slower beside the variant than in its own earlier race:
      // something the CPU clock does not see took the machine from its runs (SqueezeNet's
      // oneDNN at 2 threads once read 5.02 ms here against 2.14 before, and conv_algorithm=direct
      // at 2.48 was remembered; the harness then timed it 13 % slower than what it replaced). The
      // variant then replaces it only by beating its earlier figure too, which stays its figure.
      // Less inflated readings mislead as well: SqueezeNet's oneDNN at one thread read 4.51 ms
      // in its race and 6.17 beside conv_algorithm=direct, which read 4.95 and was remembered;
      // in the harness's rounds it ran 1.115x the configuration it replaced. So a variant must
      // always beat both figures of the fastest so far: a choice the cache keeps wants the
      // same answer from both races.
      const bool inflated = before > 0 && now > before * kInconsistentReadFactor;
      if (!inflated) best->median_ms = now;
      const bool beats_now = replaces_fastest(c->median_ms, now, true);
      const bool beats_before = before <= 0 || replaces_fastest(c->median_ms, before, true);
      // Faster runs, but each load from the selection cache pays the variant's init again: a
      // load with the runs the application makes per load (LoadOptions::selection_runs_per_load,
      // 100 by default) must take 3 % less with the variant than with the fastest, the init
      // and those runs together (the rule keep_by_load applies between backends), its runs
      // against the lower of the fastest's two figures (as it must beat both). ResNet-18's
      // conv_algorithm=winograd at two threads ran 7.86 ms against 8.11 and initialised in 203
      // ms against 115 (its weight transforms); chosen without a rule, every load from the
      // selection cache took about 2.4 times a fixed load. At one thread it ran 15.3 ms against
      // 17.0 and initialised in about 200 ms against 60: repaid after about 90 runs, it was
      // taken under the rule before this one (repaid within the runs per load), in 2 of 5
      // measuring loads of a set run, whose loads from the cache then took 176 and 201 ms against
      // a fixed load's 70, for a load with its 100 runs 1 % shorter.
      const double payback_runs = static_cast<double>(options.selection_runs_per_load);
      // An init cold and now cached (PreInit::warmer_later) on either side: not weighed.
      const bool weigh_inits = !warmer_later[index_of(c)] && !warmer_later[index_of(best)];
      // The variant's init was made on its own; the fastest's, when it is a backend as the load
      // resolved it, beside the other backend's init or as the first of the load, which read up
      // to four times its own: ResNet-18's oneDNN at one thread initialised in 111-397 ms beside
      // XNNPACK's and in about 60 alone, and conv_algorithm=winograd (about 250, its weight
      // transforms) looked free and was taken for 15.9 against 16.8 ms a run. So before its
      // init decides, the fastest's is made again on its own and timed (once a load; destroyed),
      // and the lower of its two figures is weighed: the host stretches an init as much as a
      // run (ResNet-18's oneDNN at two threads, inits one after the other: 115 ms as the
      // entrant, 191 made again), and a figure is never too low for that.
      if (weigh_inits && beats_now && beats_before) time_init_alone(best);
      const double best_init_ms = lowest_init_ms(*best);
      const double extra_init_ms = weigh_inits ? c->init_ms - best_init_ms : 0;
      const double lower_ms = before > 0 ? std::min(now, before) : now;
      const double best_load_ms = best_init_ms + payback_runs * lower_ms;
      const double variant_load_ms = best_init_ms + extra_init_ms + payback_runs * c->median_ms;
      const bool repaid = extra_init_ms <= 0 || variant_load_ms < best_load_ms * kVariantMargin;
      bool wins = beats_now && beats_before && repaid;
      std::string why = string_format(
          "alternately with %s%s%s%s: %.3g against %.3g ms, %s (it measured %.3g before)",
          best->backend, best->options[0] ? " [" : "", best->options, best->options[0] ? "]" : "",
          c->median_ms, now, runs.c_str(), before);
      // A narrow win is raced again, and stands only if the variant is faster there too: the
      // same two configurations read 0.97-1.17x each other from one measuring load to the next
      // on a busy host (MobileNetV3-Small's oneDNN at two threads against num_threads=1), and
      // a choice the cache keeps runs every time after. A clear win is not, nor one that is not
      // taken anyway; past the budget the second race still gives each two timed runs.
      if (wins && c->median_ms > lower_ms * kConfirmBelow) {
        const std::vector<RaceResult> again = race_the_fastest(-1);
        if (again.empty()) continue;
        if (again[0].disturbed_throughout || again[1].disturbed_throughout) {
          report.disturbed_measurements = 1;
        }
        wins = again[0].median_ms < again[1].median_ms;
        why += string_format("; within %.0f%%, raced again: %.3g against %.3g ms, %d and %d runs",
                             (1 - kConfirmBelow) * 100, again[0].median_ms, again[1].median_ms,
                             again[0].runs, again[1].runs);
        if (!wins) why += "; not taken: not faster the second time";
      }
      if (beats_now && !beats_before) {
        why += inflated ? string_format("; not taken: %s read %.3gx its earlier median here",
                                        best->backend, now / before)
                        : string_format("; not taken: not %.0f%% faster than its earlier %.3g ms",
                                        (1 - kVariantMargin) * 100, before);
      } else if (beats_now && !repaid) {
        why += string_format(
            "; not taken: its init took %.0f ms more (%.0f against %.0f%s): a load with its %.0f "
            "runs %.0f against %.0f ms, not %.0f%% shorter",
            extra_init_ms, c->init_ms, best_init_ms,
            best->alone_init_ms > 0 && best->alone_init_ms < best->init_ms ? ", made again alone"
                                                                           : "",
            payback_runs, variant_load_ms, best_load_ms, (1 - kVariantMargin) * 100);
      }
      set_text(c->reason, sizeof c->reason, why);
      if (wins) {
        chosen = index_of(c);
        adopt(&held);
      }
    }
  }

  if (chosen >= 0) report.candidates[chosen].chosen = true;
  std::string notes = together;
  if (auto_budget && runs_budget_ms >= 0) {  // what the budget was derived as
    notes += string_format("; budget auto: %.0f ms of runs (%g x %s's init", runs_budget_ms,
                           LoadOptions::kAutoBudgetRunsPerInit, first_init.c_str());
    const double left_out = first_init_ms - report.auto_budget_base_ms;
    if (left_out >= 0.5) {
      notes += string_format(" less %.0f ms of system time beyond its user time", left_out);
    }
    notes += ")";
  }
  set_text(report.notes, sizeof report.notes, notes);
  write_selection_summary(&report);
  return chosen;
}

namespace {

std::atomic<uint64_t> g_program_hashes{0};
std::atomic<int64_t> g_memo_min_age_ms{2000};

// The whole program's bytes, hashed.
uint64_t hash_program_bytes(const Program& program) {
  g_program_hashes.fetch_add(1);
  // In 256 KiB pieces, copied from the file into one buffer where the loader can (nothing of
  // the mapping is touched: each mapped page read costs a page fault, and MnasNet's 8.9 MB
  // took 5 ms mapped against 1.3 ms copied on a KVM guest). Else read in place, each piece
  // released after it is read: hashing a mapped program would otherwise make every weight
  // resident before any backend has packed them (ResNeXt-50: 100 MB more at the load's peak).
  // The hash is the same either way.
  constexpr size_t kPiece = size_t{256} << 10;
  const Span<const uint8_t> all = program.bytes();
  std::vector<uint8_t> buffer;
  bool copy = true;
  uint64_t h = 0;
  for (size_t at = 0; at < all.size(); at += kPiece) {
    const Span<const uint8_t> piece(all.data() + at, std::min(kPiece, all.size() - at));
    if (copy) {
      buffer.resize(piece.size());
      copy = program.read(at, Span<uint8_t>(buffer.data(), piece.size()));
    }
    if (copy) {
      h = hash64(buffer.data(), piece.size(), h);
    } else {
      h = hash64(piece.data(), piece.size(), h);
      program.release(piece);
    }
  }
  return hash64(&h, sizeof h, all.size());
}

// After a load wrote into the selection cache directory: its entries back within the load's
// bound (LoadOptions::selection_cache_max_kb).
void trim_after_write(const std::string& dir, const LoadOptions& options) {
  const CacheTrim trim = trim_selection_cache(dir, options.selection_cache_max_kb);
  if (trim.removed > 0 || trim.failed > 0) {
    TESSERA_LOG_INFO(
        "selection cache '%s': %zu least recently used entr%s removed (%llu -> %llu bytes, bound "
        "%lld KiB)%s",
        dir.c_str(), trim.removed, trim.removed == 1 ? "y" : "ies",
        static_cast<unsigned long long>(trim.bytes_before),
        static_cast<unsigned long long>(trim.bytes_after),
        static_cast<long long>(options.selection_cache_max_kb),
        trim.failed > 0 ? string_format("; %zu in use or not removable, kept", trim.failed).c_str()
                        : "");
  }
}

// The program's hash for the selection key. Hashing reads the whole file (ResNeXt-50's 100 MB:
// about 13 ms of a 90 ms load from the cache on a KVM guest), so for a program loaded from a
// file the hash is remembered in the selection cache directory, in an integrity-checked file
// named by the file's identity (device, inode, size, modification and status-change times). Any
// write to the file changes its status-change time, which no caller can set back. A file that
// changed within the last g_memo_min_age_ms is hashed but not remembered: a second change within
// the same timestamp tick would leave the identity as it was.
uint64_t program_hash(const Program& program, const std::string& dir, const LoadOptions& options) {
  FileIdentity id;
  if (dir.empty() || !program.file_identity(&id)) return hash_program_bytes(program);
  static_assert(sizeof(FileIdentity) == 5 * sizeof(uint64_t), "FileIdentity has no padding");
  const uint64_t name = fnv1a64(&id, sizeof id);
  IntegrityKey key{};
  std::memcpy(key.magic, "TSPHASH1", sizeof key.magic);
  key.content = name;
  const std::string path =
      dir + string_format("/%016llx.tphash", static_cast<unsigned long long>(name));
  Result<std::vector<uint8_t>> memo = read_integrity_file(path, key);
  if (memo.ok() && memo->size() == sizeof(uint64_t)) {
    uint64_t h;
    std::memcpy(&h, memo->data(), sizeof h);
    touch_cache_entry(path);  // used: the last the size bound removes
    return h;
  }
  if (!memo.ok() && memo.error() != Error::NotFound) {
    TESSERA_LOG_INFO("program hash memo '%s' unusable (%s): hashing the program", path.c_str(),
                     memo.status().message());
  }
  const uint64_t h = hash_program_bytes(program);
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  const int64_t now_ns = int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
  const int64_t last_change_ns = std::max(id.modified_ns, id.changed_ns);
  if (now_ns - last_change_ns >= g_memo_min_age_ms.load() * 1000000) {
    std::vector<uint8_t> payload(sizeof h);
    std::memcpy(payload.data(), &h, sizeof h);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    Status st = write_integrity_file(path, key, payload);
    if (!st.is_ok()) {
      TESSERA_LOG_INFO("program hash not remembered: %s", st.message());
    } else {
      trim_after_write(dir, options);
    }
  }
  return h;
}

// Everything a remembered choice depends on besides the machine (see SelectionKey). `dir` is
// the selection cache directory (selection_cache_dir of the options), where the program's hash
// is remembered.
SelectionKey selection_key(const Program& program, const fb::Method* method, const fb::Delegate* d,
                           std::string_view requested, Span<const CompileSpec> specs,
                           const LoadOptions& options, const std::string& dir, MethodState* s,
                           Span<const SymbolValue> symbols, const std::vector<std::string>& names) {
  SelectionKey key;
  key.set_device(s->device != nullptr ? *s->device : DeviceInfo::get());
  if (!s->has_program_hash) {
    s->program_hash = program_hash(program, dir, options);
    s->has_program_hash = true;
  }
  key.add("program", s->program_hash);
  key.add("method", method->name()->string_view());
  key.add("delegate", d->id()->string_view());
  key.add("backend", requested);
  for (const SymbolValue& v : symbols)
    key.add(string_format("dim.%.*s", static_cast<int>(v.name.size()), v.name.data()),
            std::to_string(v.value));
  // The policy as it is on an unloaded machine: threads that `auto` leaves to a busy neighbour
  // at one load would otherwise make a new key, and the next unloaded load measure again.
  key.add("policy",
          string_format("%s threads=%u yield_workers=%d", policy_name(s->policy->effective),
                        s->policy->unloaded_threads, s->policy->unloaded_yield_workers ? 1 : 0));
  const std::string budget = options.selection_budget_is_auto()
                                 ? std::string("auto")
                                 : string_format("%.17g", options.selection_budget_ms);
  // runs_per_load: the runs a load makes, over which a backend's or a variant's longer init is
  // weighed; the rules after it: a choice made for another count, or by the rules before (the
  // backends' inits not weighed; a variant's init weighed by the runs that repay it; a narrow
  // variant win not raced again), is not kept.
  key.add("selection",
          string_format("tolerance=%.17g budget_ms=%s lower_precision=%d runs_per_load=%lld "
                        "inits=backends,variants-by-load-alone narrow-variant-wins=raced-again",
                        options.selection_tolerance, budget.c_str(),
                        options.selection_lower_precision ? 1 : 0,
                        static_cast<long long>(options.selection_runs_per_load)));
  const Validation validation = options.lenient_options ? Validation::Lenient : Validation::Strict;
  for (const std::string& name : names) {
    // Each candidate's effective options (global, load and delegate scopes): a change of any
    // of them may change which is fastest.
    std::string text;
    Result<BackendInterface*> b = get_backend(name);
    if (!b.ok()) {
      text = "not registered";
    } else {
      auto resolved = std::make_unique<ResolvedOptions>();
      const Span<const CompileSpec> use = name == requested ? specs : Span<const CompileSpec>();
      Status st = resolve_options(name, **b, d->id()->string_view(), use, options.backend_options,
                                  options.delegate_options, validation, resolved.get());
      if (!st.is_ok()) {
        text = string_format("options error: %s", st.message());
      } else {
        char buf[512];
        for (size_t i = 0; i < resolved->size(); ++i) {
          const BackendOption& o = resolved->option(i);
          text += string_format("%s%.*s=%s", i ? " " : "", static_cast<int>(o.key().size()),
                                o.key().data(), o.format_value(buf, sizeof buf));
        }
      }
    }
    key.add("candidate." + name, text);
    if (b.ok()) key.add("build." + name, (*b)->build_id());
  }
  return key;
}

void say_fixed(DelegateInfo* info, const std::string& why) {
  set_text(info->selection.summary, sizeof info->selection.summary, "fixed: " + why);
}

}  // namespace

uint64_t program_hashes_computed() {
  return g_program_hashes.load();
}

int64_t set_program_hash_memo_min_age_ms(int64_t age_ms) {
  return g_memo_min_age_ms.exchange(age_ms);
}

int select_backend(const Program& program, const fb::Method* method, const fb::Instruction* ins,
                   const fb::Delegate* d, std::string_view requested, Span<const CompileSpec> specs,
                   const LoadOptions& options, const CpuPoolBackends& pools, MethodState* s,
                   Span<const SymbolValue> symbols, Span<EValue*> args, DelegateInfo* info,
                   KeptCandidate* kept) {
  kept->reset();
  const bool is_auto = options.selection == Selection::Auto;
  const bool selectable = d->candidates() != nullptr && d->candidates()->size() >= 2;
  if (options.selection == Selection::Fixed) return -1;
  if (is_auto && !selectable) {
    // Nothing to choose between: the report says why (it said nothing before, and a delegate
    // that was never measured looked like one whose measurement was lost).
    say_fixed(info, d->candidates() == nullptr || d->candidates()->size() == 0
                        ? std::string("the program records no other backend for it "
                                      "(compiled with --backends, or no other backend takes "
                                      "every node)")
                        : string_format("only '%s' takes every node of it (the one backend the "
                                        "compiler recorded)",
                                        d->candidates()->Get(0)->c_str()));
    return -1;
  }
  auto measure = [&]() {
    return measure_candidates(program, method, ins, d, requested, specs, options, pools, s, symbols,
                              args, info, kept);
  };
  const std::string dir = selection_cache_dir(options.selection_cache_dir);
  if (dir.empty()) {
    if (!is_auto) return measure();
    say_fixed(info, options.selection_cache_dir != nullptr
                        ? "the selection cache is disabled (selection_cache_dir is empty)"
                        : "no selection cache directory (neither XDG_CACHE_HOME nor HOME is set)");
    return -1;
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    TESSERA_LOG_WARNING("delegate '%s': cannot create the selection cache directory '%s' (%s)%s",
                        d->id()->c_str(), dir.c_str(), ec.message().c_str(),
                        is_auto ? ": running it on its program's backend" : ": not remembered");
    if (!is_auto) return measure();
    say_fixed(info, "cannot create the selection cache directory " + dir);
    return -1;
  }
  const std::vector<std::string> names = candidate_names(d, requested, options);
  const SelectionKey key =
      selection_key(program, method, d, requested, specs, options, dir, s, symbols, names);
  const std::string path = selection_cache_path(dir, key);
  // Held while measuring and writing: a second process or thread loading the same delegate
  // waits, then reads what the first wrote instead of measuring again.
  SelectionLock lock(path);
  if (!lock.locked()) {
    TESSERA_LOG_WARNING("delegate '%s': selection cache not locked (%s)", d->id()->c_str(),
                        lock.error().c_str());
  }
  int disturbed_before = 0;  // the remembered measurement was disturbed throughout
  if (is_auto) {
    SelectionReport cached;
    Result<std::string> hit = read_selection(path, key, &cached);
    if (hit.ok()) {
      // Still runnable here? (A backend may have been unregistered since.)
      Result<BackendInterface*> b = get_backend(*hit);
      char missing[128] = {};
      std::string stale;
      if (!b.ok()) {
        stale = string_format("backend '%s' is not registered", hit->c_str());
      } else if (!(*b)->is_available()) {
        stale = string_format("backend '%s' is not available", hit->c_str());
      } else if (!supports_all(**b, d->payload_nested_root(), missing, sizeof missing)) {
        stale = string_format("backend '%s' does not support %s", hit->c_str(), missing);
      } else {
        for (size_t i = 0; i < cached.num_candidates; ++i) {
          const SelectionCandidate& k = cached.candidates[i];
          if (!k.chosen || k.options[0] == '\0') continue;
          ResolvedOptions scratch;
          Status st = scratch.reset(*hit, d->id()->string_view(), (*b)->option_schema());
          if (st.is_ok()) st = apply_selected_options(*hit, k.options, &scratch);
          if (!st.is_ok()) stale = string_format("option %s: %s", k.options, st.message());
        }
      }
      const bool busy_now = s->policy->others_busy_cpus > 0;
      if (stale.empty() && cached.disturbed_measurements == 1 && !busy_now) {
        disturbed_before = 1;
        TESSERA_LOG_INFO(
            "delegate '%s': the remembered selection was measured while other processes had the "
            "CPU: measuring again",
            d->id()->c_str());
      } else if (stale.empty()) {
        if (cached.disturbed_measurements == 1) {
          TESSERA_LOG_INFO(
              "delegate '%s': the remembered selection was measured while other processes had "
              "the CPU, and they have %.1f CPUs now: used as it is",
              d->id()->c_str(), s->policy->others_busy_cpus);
        }
        info->selection = cached;
        for (size_t i = 0; i < cached.num_candidates; ++i) {
          if (cached.candidates[i].chosen) return static_cast<int>(i);
        }
      } else {
        TESSERA_LOG_WARNING(
            "delegate '%s': remembered selection in '%s' no longer applies (%s): "
            "measuring again",
            d->id()->c_str(), path.c_str(), stale.c_str());
      }
    } else if (hit.error() != Error::NotFound) {
      TESSERA_LOG_WARNING(
          "delegate '%s': selection cache entry '%s' is unusable (%s): measuring "
          "again",
          d->id()->c_str(), path.c_str(), hit.status().message());
    }
  }
  const int chosen = measure();
  if (chosen >= 0) {
    SelectionReport& r = info->selection;
    if (s->policy->others_busy_cpus > 0 && r.disturbed_measurements == 0) {
      // The candidates ran with the threads `auto` left free, not those the key names: it is
      // remembered like a disturbed measurement, which the next unloaded load replaces (a
      // remembered one that was disturbed is only measured again when this load is unloaded).
      r.disturbed_measurements = 1;
      TESSERA_LOG_WARNING(
          "delegate '%s': measured while other processes kept %.1f CPUs busy (%u of %u "
          "threads): the next load on an unloaded machine measures again",
          d->id()->c_str(), s->policy->others_busy_cpus, s->policy->threads,
          s->policy->unloaded_threads);
    } else if (r.disturbed_measurements > 0) {
      r.disturbed_measurements = disturbed_before + 1;
      TESSERA_LOG_WARNING(
          "delegate '%s': every timed run of a candidate was disturbed (other processes had the "
          "CPU)%s",
          d->id()->c_str(),
          r.disturbed_measurements == 1 ? ": the next load measures again"
                                        : ", twice in a row: remembered as it is");
    }
    Status st = write_selection(dir, path, key, info->selection);
    if (!st.is_ok()) {
      TESSERA_LOG_WARNING("delegate '%s': selection not remembered: %s", d->id()->c_str(),
                          st.message());
    } else {
      trim_after_write(dir, options);  // under the entry's lock: it stays
    }
  }
  return chosen;
}

void remember_selection(const Program& program, const fb::Method* method, const fb::Delegate* d,
                        const LoadOptions& options, MethodState* s, const SelectionReport& report) {
  const std::string dir = selection_cache_dir(options.selection_cache_dir);
  if (dir.empty()) return;
  const std::string_view requested = d->backend()->string_view();
  std::vector<CompileSpec> specs;
  if (d->compile_specs() != nullptr) {
    for (const auto* c : *d->compile_specs()) {
      specs.push_back({c->key()->c_str(), c->value()->c_str()});
    }
  }
  std::vector<SymbolValue> symbols;
  for (uint32_t i = 0; i < s->num_symbols; ++i) {
    symbols.push_back({method->symbols()->Get(i)->name()->string_view(), s->symbol_values[i]});
  }
  const std::vector<std::string> names = candidate_names(d, requested, options);
  const SelectionKey key =
      selection_key(program, method, d, requested, {specs.data(), specs.size()}, options, dir, s,
                    {symbols.data(), symbols.size()}, names);
  const std::string path = selection_cache_path(dir, key);
  SelectionLock lock(path);
  Status st = write_selection(dir, path, key, report);
  if (!st.is_ok()) {
    TESSERA_LOG_WARNING("delegate '%s': whole-method selection not remembered: %s",
                        d->id()->c_str(), st.message());
  } else {
    trim_after_write(dir, options);  // under the entry's lock: it stays
  }
}

}  // namespace tessera::internal
