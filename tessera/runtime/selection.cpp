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
#include <memory>
#include <string>
#include <vector>

#include "tessera/backend/context.h"
#include "tessera/backend/derived_values.h"
#include "tessera/backend/device_info.h"
#include "tessera/backend/integrity_file.h"
#include "tessera/backend/option_schema.h"
#include "tessera/backend/policy.h"
#include "tessera/backend/registry.h"
#include "tessera/backend/resolution.h"
#include "tessera/backend/resolved_options.h"
#include "tessera/core/log.h"
#include "tessera/core/string_format.h"
#include "tessera/ir/schema.h"
#include "tessera/runtime/delegate_runner.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method_state.h"
#include "tessera/runtime/program.h"
#include "tessera/runtime/selection_cache.h"

namespace tessera::internal {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kTimedRuns = 5;
// See replaces_fastest: Winograd's weight transform took MobileNetV2's cached load from 66 to
// 161 ms for a "win" within the noise.
constexpr double kVariantMargin = 0.97;
// See head_to_head: candidates whose medians are this close are timed again, alternately.
constexpr double kHeadToHeadRange = 1.5;
constexpr int kHeadToHeadPairs = 3;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

void set_text(char* dst, size_t cap, const std::string& text) {
  std::snprintf(dst, cap, "%s", text.c_str());
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
  const int threads = resolved.find("num_threads");
  if (b.uses_cpu_thread_pool() && policy.threads > 1 && threads >= 0 &&
      resolved.spec(static_cast<size_t>(threads)).type == OptionType::Int &&
      applicable("num_threads", "1")) {
    out.push_back({"num_threads", "1"});
  }
  return out;
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

void park_candidate_pools(const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    Result<BackendInterface*> b = get_backend(n);
    if (b.ok() && (*b)->uses_cpu_thread_pool()) (*b)->park_idle_workers();
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
  std::string summary = "measured:";
  for (size_t i = 0; i < accepted.size(); ++i) {
    summary += string_format("%s %s%s%s%s %.3g ms%s", i ? "," : "", accepted[i]->backend,
                             accepted[i]->options[0] ? " [" : "", accepted[i]->options,
                             accepted[i]->options[0] ? "]" : "", accepted[i]->median_ms,
                             accepted[i]->chosen ? " (chosen)" : "");
  }
  if (accepted.empty()) summary += " nothing ran";
  for (size_t i = 0; i < rest.size(); ++i) {
    summary += string_format(
        "%s %s%s%s%s %s", i ? "," : ";", rest[i]->backend, rest[i]->options[0] ? " [" : "",
        rest[i]->options, rest[i]->options[0] ? "]" : "",
        std::strncmp(rest[i]->reason, "skipped", 7) == 0 ? rest[i]->reason : "rejected");
  }
  set_text(report->summary, sizeof report->summary, summary);
}

bool within_head_to_head_range(double a_ms, double b_ms) {
  const double lo = std::min(a_ms, b_ms), hi = std::max(a_ms, b_ms);
  return lo > 0 && hi < lo * kHeadToHeadRange;
}

Status head_to_head(const Contender& best, const Contender& other, RunClocks clocks,
                    const std::vector<std::string>& names,
                    const std::function<bool()>& budget_spent, SelectionCandidate* best_entry,
                    SelectionCandidate* other_entry) {
  // Each candidate was timed alone, at its own moment of the load: a burst of work elsewhere on
  // the machine that slows one of them without taking its thread off the CPU (another vCPU of
  // the host on the same core, memory bandwidth) is not seen by RunTimer, and decides the
  // choice (RegNetY-400MF's oneDNN read at 10.1 ms against 6.3). Run alternately, the two see
  // the same machine; which goes first alternates too.
  RunTimer a(kHeadToHeadPairs, clocks, best.on_calling_thread);
  RunTimer b(kHeadToHeadPairs, clocks, other.on_calling_thread);
  int pairs = 0;
  for (; pairs < kHeadToHeadPairs; ++pairs) {
    if (pairs > 0 && budget_spent()) break;
    for (int k = 0; k < 2; ++k) {
      const bool best_now = (k == 0) == (pairs % 2 == 1);
      park_candidate_pools(names);
      const Status st = best_now ? a.time(best.run) : b.time(other.run);
      if (!st.is_ok()) return st;
    }
  }
  const double alone_best = best_entry->median_ms, alone_other = other_entry->median_ms;
  best_entry->median_ms = a.median();
  other_entry->median_ms = b.median();
  std::string text = other_entry->reason;
  if (!text.empty()) text += "; ";
  text += string_format(
      "head to head with %s%s%s%s: %.3g against %.3g ms in %d alternating pairs (alone: %.3g "
      "against %.3g)",
      best_entry->backend, best_entry->options[0] ? " [" : "", best_entry->options,
      best_entry->options[0] ? "]" : "", other_entry->median_ms, best_entry->median_ms, pairs,
      alone_other, alone_best);
  set_text(other_entry->reason, sizeof other_entry->reason, text);
  return Status::ok();
}

bool replaces_fastest(double ms, double best_ms, bool variant) {
  return ms < best_ms * (variant ? kVariantMargin : 1.0);
}

bool clearly_slower(const std::vector<double>& times, double best_ms) {
  if (times.empty()) return false;
  const double quickest = *std::min_element(times.begin(), times.end());
  return quickest > best_ms * (times.size() >= 2 ? 1.25 : 1.5);
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

std::atomic<double (*)()> g_wall_clock{nullptr};
std::atomic<double (*)()> g_cpu_clock{nullptr};
std::atomic<bool> g_clocks_replaced{false};

}  // namespace

RunClocks selection_clocks() {
  if (!g_clocks_replaced.load()) return RunClocks{steady_ms, thread_cpu_ms};
  return RunClocks{g_wall_clock.load(), g_cpu_clock.load()};
}

void set_selection_clocks(RunClocks clocks) {
  const bool replaced = clocks.wall_ms != nullptr;
  g_wall_clock.store(clocks.wall_ms);
  g_cpu_clock.store(clocks.thread_cpu_ms);
  g_clocks_replaced.store(replaced);
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

int measure_candidates(const Program& program, const fb::Method* method, const fb::Instruction* ins,
                       const fb::Delegate* d, std::string_view requested,
                       Span<const CompileSpec> specs, const LoadOptions& options,
                       const CpuPoolBackends& pools, MethodState* s,
                       Span<const SymbolValue> symbols, Span<EValue*> args, DelegateInfo* info,
                       KeptCandidate* kept) {
  kept->reset();
  SelectionReport& report = info->selection;
  std::snprintf(report.mode, sizeof report.mode, "%s", "measure");
  const fb::Graph* graph = d->payload_nested_root();
  const uint32_t num_inputs = ins->inputs() ? ins->inputs()->size() : 0;
  const Validation validation = options.lenient_options ? Validation::Lenient : Validation::Strict;

  const std::vector<std::string> names = candidate_names(d, requested, options);

  const RunClocks clocks = selection_clocks();
  const Clock::time_point start = Clock::now();
  auto budget_spent = [&]() {
    return ms_between(start, Clock::now()) >= options.selection_budget_ms;
  };
  Outputs reference;
  bool have_reference = false;
  int chosen = -1;
  auto next_candidate = [&](const std::string& backend) -> SelectionCandidate* {
    if (report.num_candidates == SelectionReport::kMaxCandidates) return nullptr;
    SelectionCandidate* c = &report.candidates[report.num_candidates++];
    set_text(c->backend, sizeof c->backend, backend);
    return c;
  };
  // Backends the application listed or the compiler recorded are each measured (after the
  // budget is spent, with one timed run); the budget cuts the others (every registered backend,
  // for a pinned delegate without a list) and the option variants.
  const bool listed = options.selection_candidates_size() > 0 ||
                      (d->candidates() != nullptr && d->candidates()->size() > 0);
  // The program's own backend (requested, first in `names`) runs first, once: its outputs are the
  // reference every other candidate is checked against. When there are others, its timed runs
  // (after a second warm-up) and its option variants come after theirs, so that when it is the
  // slower one its timing stops after two runs (clearly_slower) instead of taking the budget
  // the others then lack: GoogLeNet's program backend, xnnpack, took five timed runs of 30 ms,
  // and oneDNN, measured next, got one.
  struct Deferred {
    BackendInterface* backend = nullptr;
    KeptCandidate held;  // its initialised delegate, when the reference run succeeded
    std::unique_ptr<ResolvedOptions> resolved;
    std::vector<Variant> variants;
    std::vector<SelectionCandidate*> slots;  // its variants' report entries, kept in order
  } deferred;
  const bool defer = names.size() > 1;
  for (size_t pass = 0; pass <= names.size(); ++pass) {
    const bool resume = pass == names.size();  // the deferred backend's timing and variants
    if (resume && deferred.backend == nullptr) break;
    const std::string& name = names[resume ? 0 : pass];
    const bool is_requested = name == requested;
    const Span<const CompileSpec> use_specs = is_requested ? specs : Span<const CompileSpec>();
    const bool reference_only = defer && pass == 0;
    BackendInterface* b = nullptr;
    std::unique_ptr<ResolvedOptions> resolved;
    std::vector<Variant> variants;
    SelectionCandidate* c = nullptr;
    if (resume) {
      b = deferred.backend;
      resolved = std::move(deferred.resolved);
      variants = std::move(deferred.variants);
    } else {
      c = next_candidate(name);
      if (c == nullptr) break;
      if (!is_requested && !listed && budget_spent()) {
        set_text(c->reason, sizeof c->reason,
                 string_format("skipped (budget: %.0f ms spent)", options.selection_budget_ms));
        continue;
      }
      Result<BackendInterface*> backend = get_backend(name);
      if (!backend.ok()) {
        set_text(c->reason, sizeof c->reason, backend.status().message());
        continue;
      }
      b = *backend;
      if (!b->is_available()) {
        set_text(c->reason, sizeof c->reason, "not available on this machine");
        continue;
      }
      char missing[128];
      if (!supports_all(*b, graph, missing, sizeof missing)) {
        set_text(c->reason, sizeof c->reason, string_format("does not support %s", missing));
        continue;
      }
      resolved = std::make_unique<ResolvedOptions>();
      const Status st =
          resolve_options(name, *b, d->id()->string_view(), use_specs, options.backend_options,
                          options.delegate_options, validation, resolved.get());
      if (!st.is_ok()) {
        set_text(c->reason, sizeof c->reason, string_format("options: %s", st.message()));
        continue;
      }
      // The backend as resolved, then each of its variants (one option value changed).
      variants = variants_for(*b, *resolved, options, *s->policy);
      if (reference_only) {  // resumed after the others, whatever its reference run gives
        deferred.backend = b;
        deferred.resolved = std::make_unique<ResolvedOptions>(*resolved);
        deferred.variants = variants;
      }
    }
    DerivedValues resolved_derived;  // what the backend as resolved derived for options at auto
    std::vector<char> changes(variants.size(), 1);  // variant_changes, asked of the resolved one
    if (resume && deferred.held.handle != nullptr) {
      resolved_derived = *deferred.held.derived;
      for (size_t k = 0; k < variants.size(); ++k) {
        changes[k] =
            b->variant_changes(deferred.held.handle, variants[k].key, variants[k].value) ? 1 : 0;
      }
    }
    for (size_t t = 0; t <= variants.size(); ++t) {
      if (t > 0) {
        if (reference_only) {  // reserve its place in the report; measured when resumed
          c = next_candidate(name);
          deferred.slots.push_back(c);
          if (c != nullptr)
            set_text(c->options, sizeof c->options,
                     variants[t - 1].key + "=" + variants[t - 1].value);
          continue;
        }
        c = resume ? deferred.slots[t - 1] : next_candidate(name);
        if (c == nullptr) break;
        const Variant& v = variants[t - 1];
        set_text(c->options, sizeof c->options, v.key + "=" + v.value);
        // A value the backend already derived for the option left at auto is the configuration
        // just measured (oneDNN's conv_algorithm=direct where no convolution suits Winograd).
        if (const DerivedValue* same = resolved_derived.find(v.key);
            same != nullptr && v.value == same->value) {
          set_text(c->reason, sizeof c->reason,
                   string_format("skipped: the resolved configuration (auto: %s)", same->value));
          continue;
        }
        if (!changes[t - 1]) {
          set_text(c->reason, sizeof c->reason,
                   "skipped: the resolved configuration (the backend: no change here)");
          continue;
        }
        if (budget_spent()) {
          set_text(c->reason, sizeof c->reason,
                   string_format("skipped (budget: %.0f ms spent)", options.selection_budget_ms));
          continue;
        }
      }
      std::unique_ptr<ResolvedOptions> trial;
      std::unique_ptr<DerivedValues> derived;
      DelegateHandle* handle = nullptr;
      std::string why;
      bool ran = false;  // the deferred backend, resumed: its reference run is behind it
      RunTimer warm(1, clocks, b->runs_on_calling_thread());  // the resumed one's 2nd warm-up
      bool timed_by_warmup = false;
      if (resume && t == 0) {
        if (deferred.held.handle == nullptr) continue;  // its reference run failed: reported
        c = &report.candidates[deferred.held.candidate];
        handle = deferred.held.handle;
        trial = std::move(deferred.held.options);
        derived = std::move(deferred.held.derived);
        ran = true;
        deferred.held.handle = nullptr;  // owned here from now on
        deferred.held.reset();
      } else {
        trial = std::make_unique<ResolvedOptions>(*resolved);
        if (t > 0) {
          const Status st = apply_selected_options(name, c->options, trial.get());
          if (!st.is_ok()) {
            set_text(c->reason, sizeof c->reason, string_format("options: %s", st.message()));
            continue;
          }
        }
        derived = std::make_unique<DerivedValues>();
        bool fatal = false;
        const Clock::time_point init_start = Clock::now();
        Result<DelegateHandle*> made = init_on(program, method, d, name, b, use_specs, pools, s,
                                               symbols, trial.get(), derived.get(), &fatal);
        c->init_ms = ms_between(init_start, Clock::now());
        if (!made.ok()) {
          set_text(c->reason, sizeof c->reason,
                   string_format("init failed: %s", made.status().message()));
          continue;
        }
        handle = *made;
        if (t == 0) {
          resolved_derived = *derived;
          for (size_t k = 0; k < variants.size(); ++k) {
            changes[k] = b->variant_changes(handle, variants[k].key, variants[k].value) ? 1 : 0;
          }
        }
      }
      auto run = [&]() {
        BackendExecutionContext ctx(trial.get());
        ctx.set_delegate_id(info->id);
        return b->execute(ctx, handle, args);
      };
      if (!ran) {
        fill_inputs(method, ins, args);
        park_candidate_pools(names);
        const Status st = run();  // also the warm-up
        if (!st.is_ok()) {
          why = string_format("execute failed: %s", st.message());
        } else if (!have_reference) {
          reference = copy_outputs(args, num_inputs);
          have_reference = true;
          set_text(c->reason, sizeof c->reason, "reference");
          // Timed after the others, unless its init and this run have spent the budget (a
          // large model): then it gets its one timed run now, right after its warm-up.
          if (reference_only && !budget_spent()) {
            deferred.held.backend = b;
            deferred.held.handle = handle;
            deferred.held.candidate = static_cast<int>(c - report.candidates);
            deferred.held.options = std::move(trial);
            deferred.held.derived = std::move(derived);
            continue;
          }
        } else {
          why = compare(reference, copy_outputs(args, num_inputs), args, num_inputs,
                        options.selection_tolerance);
        }
      } else {
        // Resumed: warmed up again, since the candidates measured in between ran on the same
        // CPUs, caches and pools (their runs are not its steady state). With the budget spent
        // it would get one timed run; when this second warm-up is already clearly slower than
        // the fastest (a one-run margin of 1.5x, wider than what cold caches add), it stands
        // for that run: ResNeXt-50's xnnpack took 93 ms more to say so again.
        fill_inputs(method, ins, args);
        park_candidate_pools(names);
        const bool spent = budget_spent();
        const Status st = warm.time(run);
        if (!st.is_ok()) {
          why = string_format("execute failed: %s", st.message());
        } else if (spent && chosen >= 0 &&
                   clearly_slower(warm.kept(), report.candidates[chosen].median_ms)) {
          timed_by_warmup = true;
          set_text(c->reason, sizeof c->reason,
                   "reference; timed by its second warm-up (budget spent, clearly slower)");
        }
      }
      if (why.empty()) {
        RunTimer timer(kTimedRuns, clocks, b->runs_on_calling_thread());
        while (!timed_by_warmup && timer.wants_more()) {
          const Status st = timer.time(run);
          if (!st.is_ok()) {
            why = string_format("execute failed: %s", st.message());
            break;
          }
          if (budget_spent()) break;
          if (chosen >= 0 && clearly_slower(timer.kept(), report.candidates[chosen].median_ms))
            break;
        }
        if (why.empty()) {
          const RunTimer& used = timed_by_warmup ? warm : timer;
          c->runs = static_cast<int>(used.kept().size());
          c->median_ms = used.median();
          c->disturbed_runs = used.disturbed();
          if (used.disturbed_throughout()) report.disturbed_measurements = 1;
          c->accepted = true;
          const int index = static_cast<int>(c - report.candidates);
          if (chosen >= 0 && kept->handle != nullptr && !timed_by_warmup && !budget_spent() &&
              within_head_to_head_range(c->median_ms, report.candidates[chosen].median_ms)) {
            auto run_kept = [&]() {
              BackendExecutionContext ctx(kept->options.get());
              ctx.set_delegate_id(info->id);
              return kept->backend->execute(ctx, kept->handle, args);
            };
            const Status st =
                head_to_head(Contender{run_kept, kept->backend->runs_on_calling_thread()},
                             Contender{run, b->runs_on_calling_thread()}, clocks, names,
                             budget_spent, &report.candidates[chosen], c);
            if (!st.is_ok()) {  // not expected (both ran before): the newcomer goes
              set_text(c->reason, sizeof c->reason,
                       string_format("execute failed head to head: %s", st.message()));
              c->accepted = false;
              b->destroy(handle);
              continue;
            }
          }
          if (chosen < 0 ||
              replaces_fastest(c->median_ms, report.candidates[chosen].median_ms, t > 0)) {
            chosen = index;
            // The fastest so far stays initialised; the one it beat goes.
            kept->reset();
            kept->backend = b;
            kept->handle = handle;
            kept->candidate = index;
            kept->options = std::move(trial);
            kept->derived = std::move(derived);
            continue;
          }
        }
      }
      if (!why.empty()) set_text(c->reason, sizeof c->reason, why);
      b->destroy(handle);
    }
  }

  if (chosen >= 0) report.candidates[chosen].chosen = true;
  write_selection_summary(&report);
  return chosen;
}

namespace {

// Everything a remembered choice depends on besides the machine (see SelectionKey).
SelectionKey selection_key(const Program& program, const fb::Method* method, const fb::Delegate* d,
                           std::string_view requested, Span<const CompileSpec> specs,
                           const LoadOptions& options, MethodState* s,
                           Span<const SymbolValue> symbols, const std::vector<std::string>& names) {
  SelectionKey key;
  key.set_device(s->device != nullptr ? *s->device : DeviceInfo::get());
  if (!s->has_program_hash) {
    // In 4 MiB pieces, each released after it is read: hashing a mapped program would
    // otherwise make every weight resident before any backend has packed them (ResNeXt-50:
    // 100 MB more at the load's peak).
    constexpr size_t kPiece = size_t{4} << 20;
    const Span<const uint8_t> all = program.bytes();
    uint64_t h = 0;
    for (size_t at = 0; at < all.size(); at += kPiece) {
      const Span<const uint8_t> piece(all.data() + at, std::min(kPiece, all.size() - at));
      h = hash64(piece.data(), piece.size(), h);
      program.release(piece);
    }
    s->program_hash = hash64(&h, sizeof h, all.size());
    s->has_program_hash = true;
  }
  key.add("program", s->program_hash);
  key.add("method", method->name()->string_view());
  key.add("delegate", d->id()->string_view());
  key.add("backend", requested);
  for (const SymbolValue& v : symbols)
    key.add(string_format("dim.%.*s", static_cast<int>(v.name.size()), v.name.data()),
            std::to_string(v.value));
  key.add("policy",
          string_format("%s threads=%u yield_workers=%d", policy_name(s->policy->effective),
                        s->policy->threads, s->policy->yield_workers ? 1 : 0));
  key.add("selection", string_format("tolerance=%.17g budget_ms=%.17g lower_precision=%d",
                                     options.selection_tolerance, options.selection_budget_ms,
                                     options.selection_lower_precision ? 1 : 0));
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

int select_backend(const Program& program, const fb::Method* method, const fb::Instruction* ins,
                   const fb::Delegate* d, std::string_view requested, Span<const CompileSpec> specs,
                   const LoadOptions& options, const CpuPoolBackends& pools, MethodState* s,
                   Span<const SymbolValue> symbols, Span<EValue*> args, DelegateInfo* info,
                   KeptCandidate* kept) {
  kept->reset();
  const bool is_auto = options.selection == Selection::Auto;
  const bool selectable = d->candidates() != nullptr && d->candidates()->size() >= 2;
  if (options.selection == Selection::Fixed || (is_auto && !selectable)) return -1;
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
      selection_key(program, method, d, requested, specs, options, s, symbols, names);
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
      if (stale.empty() && cached.disturbed_measurements == 1) {
        disturbed_before = 1;
        TESSERA_LOG_INFO(
            "delegate '%s': the remembered selection was measured while other processes had the "
            "CPU: measuring again",
            d->id()->c_str());
      } else if (stale.empty()) {
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
    if (r.disturbed_measurements > 0) {
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
      selection_key(program, method, d, requested, {specs.data(), specs.size()}, options, s,
                    {symbols.data(), symbols.size()}, names);
  const std::string path = selection_cache_path(dir, key);
  SelectionLock lock(path);
  Status st = write_selection(dir, path, key, report);
  if (!st.is_ok()) {
    TESSERA_LOG_WARNING("delegate '%s': whole-method selection not remembered: %s",
                        d->id()->c_str(), st.message());
  }
}

}  // namespace tessera::internal
