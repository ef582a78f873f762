// The whole-method check of a measured selection (see method_selection.h).
#include "tessera/runtime/method_selection.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tessera/backend/derived_values.h"
#include "tessera/backend/registry.h"
#include "tessera/backend/resolution.h"
#include "tessera/backend/resolved_options.h"
#include "tessera/core/log.h"
#include "tessera/core/string_format.h"
#include "tessera/core/trace.h"
#include "tessera/runtime/delegate_recovery.h"
#include "tessera/runtime/delegate_runner.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method_state.h"
#include "tessera/runtime/program.h"

namespace tessera::internal {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kTimedRuns = 5;  // as a delegate's candidates

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

void set_text(char* dst, size_t cap, const std::string& text) {
  std::snprintf(dst, cap, "%s", text.c_str());
}

// What a step runs: its backend, handle, options and name.
struct Installed {
  const BackendInterface* backend = nullptr;
  DelegateHandle* handle = nullptr;
  const ResolvedOptions* options = nullptr;
  const DerivedValues* derived = nullptr;
  char name[32] = {};
};

Installed installed(const DelegateStep& step) {
  Installed x;
  x.backend = step.backend;
  x.handle = step.handle;
  x.options = step.options;
  x.derived = step.info->derived;
  set_text(x.name, sizeof x.name, step.info->backend);
  return x;
}

void install(DelegateStep* step, const Installed& x) {
  install_delegate(step, x.backend, x.handle, x.name, x.options, x.derived);
}

void destroy(const Installed& x) {
  if (x.backend != nullptr && x.handle != nullptr) x.backend->destroy(x.handle);
}

// A delegate the load did not measure (a pinned one under auto: one candidate): it stays on
// its backend, which a uniform assignment must therefore be.
constexpr int kPinned = -2;

bool measured(const DelegateInfo& info) {
  return std::strcmp(info.selection.mode, "measure") == 0;
}

// The entry of `backend` in a delegate's candidates that its measurement would have kept: the
// fastest accepted, a variant only when it wins by the margin. -1 when none was accepted; a
// delegate not measured: kPinned when it runs on `backend`, else -1.
int entry_of(const DelegateInfo& info, const char* backend) {
  if (!measured(info)) return std::strcmp(info.backend, backend) == 0 ? kPinned : -1;
  const SelectionReport& r = info.selection;
  int best = -1;
  for (size_t i = 0; i < r.num_candidates; ++i) {
    const SelectionCandidate& c = r.candidates[i];
    if (!c.accepted || std::strcmp(c.backend, backend) != 0) continue;
    if (best < 0 ||
        replaces_fastest(c.median_ms, r.candidates[best].median_ms, c.options[0] != 0)) {
      best = static_cast<int>(i);
    }
  }
  return best;
}

// The entry a delegate runs now: its chosen candidate (-1: none), or kPinned.
int chosen_entry(const DelegateInfo& info) {
  if (!measured(info)) return kPinned;
  const SelectionReport& r = info.selection;
  for (size_t i = 0; i < r.num_candidates; ++i) {
    if (r.candidates[i].chosen) return static_cast<int>(i);
  }
  return -1;
}

// The method's delegate that `step` runs (its id names it in the method's delegate table).
const fb::Delegate* delegate_of(const fb::Method* m, const DelegateStep& step) {
  for (uint32_t j = 0; m->delegates() != nullptr && j < m->delegates()->size(); ++j) {
    if (m->delegates()->Get(j)->id()->string_view() == step.info->id) return m->delegates()->Get(j);
  }
  return nullptr;
}

// Median of up to kTimedRuns undisturbed executes (RunTimer) after a warm-up; fewer (at least
// one) once the budget is `spent`. In a running trace, one span named `label`.
Status time_method(MethodState* s, const std::vector<std::string>& backends,
                   const std::function<bool()>& spent, std::string_view label, double* median,
                   int* runs) {
  const TraceSpan span("select", label, "the whole method: a warm-up and timed runs");
  park_candidate_pools(backends);
  TESSERA_RETURN_IF_ERROR(execute_steps(s, nullptr, nullptr));  // warm-up
  bool on_calling_thread = true;                                // every backend the method runs on
  for (const std::string& name : backends) {
    Result<BackendInterface*> b = get_backend(name);
    on_calling_thread = on_calling_thread && b.ok() && (*b)->runs_on_calling_thread();
  }
  RunTimer timer(kTimedRuns, selection_clocks(), on_calling_thread);
  while (timer.wants_more()) {
    TESSERA_RETURN_IF_ERROR(timer.time([s] { return execute_steps(s, nullptr, nullptr); }));
    if (spent()) break;
  }
  *median = timer.median();
  *runs = static_cast<int>(timer.kept().size());
  return Status::ok();
}

}  // namespace

void check_whole_method(const Program& program, const LoadOptions& options, MethodState* s) {
  const uint32_t n = s->num_delegates;
  if (options.selection == Selection::Fixed || n < 2) return;
  bool mixed = false;
  const DelegateInfo* first_measured = nullptr;
  for (uint32_t k = 0; k < n; ++k) {
    const DelegateStep& step = s->delegates[k];
    const DelegateInfo& info = *step.info;
    // Only a load that measured (a cached load runs the remembered choice: none of its
    // delegates may be cached) and runs each delegate as chosen (no startup backend standing
    // in, no measurement that chose nothing).
    if (info.selection.cached || step.startup != nullptr || chosen_entry(info) == -1) return;
    if (measured(info) && first_measured == nullptr) first_measured = &info;
    mixed |= std::strcmp(info.backend, s->delegates[0].info->backend) != 0;
  }
  // Nothing measured, or per-delegate choices that agree: nothing to decide.
  if (first_measured == nullptr || !mixed) return;

  // Uniform assignments: backends accepted for every delegate (a pinned delegate's own), in
  // the order of the first measured delegate's candidates.
  std::vector<std::string> uniform, all;
  const SelectionReport& first = first_measured->selection;
  for (size_t i = 0; i < first.num_candidates; ++i) {
    const std::string name = first.candidates[i].backend;
    if (std::find(all.begin(), all.end(), name) == all.end()) all.push_back(name);
    if (!first.candidates[i].accepted ||
        std::find(uniform.begin(), uniform.end(), name) != uniform.end()) {
      continue;
    }
    bool everywhere = true;
    for (uint32_t k = 0; k < n && everywhere; ++k) {
      everywhere = entry_of(*s->delegates[k].info, name.c_str()) != -1;
    }
    if (everywhere) uniform.push_back(name);
  }
  const size_t untried = uniform.size() > MethodSelection::kMaxUniform
                             ? uniform.size() - MethodSelection::kMaxUniform
                             : 0;
  uniform.resize(uniform.size() - untried);
  for (uint32_t k = 0; k < n; ++k) {
    std::string backend = s->delegates[k].info->backend;
    if (std::find(all.begin(), all.end(), backend) == all.end()) all.push_back(backend);
  }

  MethodSelection result;
  result.checked = true;
  std::vector<int> current(n);  // the candidate entry each delegate runs
  for (uint32_t k = 0; k < n; ++k) current[k] = chosen_entry(*s->delegates[k].info);

  // The selection's deterministic data in the method's inputs (nothing has run yet at load).
  const fb::Method* m = s->method;
  for (uint32_t i = 0; m->inputs() != nullptr && i < m->inputs()->size(); ++i) {
    const uint32_t v = m->inputs()->Get(i);
    if (m->values()->Get(v)->constant() < 0 && s->values[v].is_tensor()) {
      fill_deterministic(&s->values[v].to_tensor(), i);
    }
  }

  // The check's budget: set, its inits and runs together; auto, its runs (the time outside its
  // re-inits), kAutoBudgetRunsPerInit x what a fixed load spends on the method's delegates (each
  // delegate's measurement's auto budget base: the first init it made, the program's own
  // backend's, less the system time beyond its user time).
  const bool auto_budget = options.selection_budget_is_auto();
  double runs_budget_ms = 0;
  if (auto_budget) {
    for (uint32_t k = 0; k < n; ++k) {
      runs_budget_ms +=
          LoadOptions::kAutoBudgetRunsPerInit * s->delegates[k].info->selection.auto_budget_base_ms;
    }
  }
  const Clock::time_point start = Clock::now();
  auto spent = [&]() {
    const double ms = ms_between(start, Clock::now());
    return auto_budget ? ms - result.reinit_ms >= runs_budget_ms
                       : ms >= options.selection_budget_ms;
  };
  const std::string budget_text =
      auto_budget ? string_format("budget auto: %.0f ms of runs spent", runs_budget_ms)
                  : string_format("budget: %.0f ms spent", options.selection_budget_ms);
  std::string why;
  // Without a uniform assignment there is nothing to compare the mix with: no run.
  Status st = uniform.empty() ? Status::ok()
                              : time_method(s, all, spent, "select method as chosen per delegate",
                                            &result.mixed_ms, &result.mixed_runs);
  std::string best = "mixed";
  double best_ms = result.mixed_ms;
  std::vector<std::string> cut;
  if (!st.is_ok()) {
    why = string_format("the mix failed to execute (%s): kept without comparing", st.message());
    uniform.clear();
  }
  const Validation validation = options.lenient_options ? Validation::Lenient : Validation::Strict;
  bool stop = false;
  for (const std::string& name : uniform) {
    UniformAssignment& u = result.uniform[result.num_uniform++];
    set_text(u.backend, sizeof u.backend, name);
    if (stop) {
      set_text(u.reason, sizeof u.reason, "not tried (an earlier init failed fatally)");
      continue;
    }
    if (spent()) {
      set_text(u.reason, sizeof u.reason, string_format("skipped (%s)", budget_text.c_str()));
      result.budget_cut = true;
      cut.push_back(name);
      continue;
    }
    // Each delegate not already on this backend's entry initialised on it, beside what runs
    // it now (kept until the timing decides). Every delegate will be on `name`: no other CPU
    // pool shares the CPUs with it, which an empty pool list says to init_on.
    std::vector<Installed> fresh(n);
    std::vector<bool> changed(n, false);
    // On the heap while on trial; copied into the method allocator if they win (a losing
    // assignment leaves nothing there).
    std::vector<std::unique_ptr<ResolvedOptions>> trial_options(n);
    std::vector<std::unique_ptr<DerivedValues>> trial_derived(n);
    std::string failure;
    const Clock::time_point init_start = Clock::now();
    for (uint32_t k = 0; k < n && failure.empty(); ++k) {
      DelegateStep& step = s->delegates[k];
      const SelectionReport& r = step.info->selection;
      const int e = entry_of(*step.info, name.c_str());
      if (e == current[k]) continue;  // already runs it (or pinned to it)
      const fb::Delegate* delegate = delegate_of(m, step);
      if (delegate == nullptr) {
        failure = string_format("delegate '%s' not found in the method", step.info->id);
        break;
      }
      const bool own = name == delegate->backend()->string_view();
      std::vector<CompileSpec> specs;
      if (own && delegate->compile_specs() != nullptr) {
        for (const auto* c : *delegate->compile_specs()) {
          specs.push_back({c->key()->c_str(), c->value()->c_str()});
        }
      }
      std::vector<SymbolValue> symbols;
      for (uint32_t i = 0; i < s->num_symbols; ++i) {
        symbols.push_back({m->symbols()->Get(i)->name()->string_view(), s->symbol_values[i]});
      }
      trial_options[k] = std::make_unique<ResolvedOptions>();
      trial_derived[k] = std::make_unique<DerivedValues>();
      ResolvedOptions* resolved = trial_options[k].get();
      DerivedValues* derived = trial_derived[k].get();
      Result<BackendInterface*> b = get_backend(name);
      if (!b.ok()) {
        failure = b.status().message();
        break;
      }
      Status ost =
          resolve_options(name, **b, delegate->id()->string_view(), {specs.data(), specs.size()},
                          options.backend_options, options.delegate_options, validation, resolved);
      if (ost.is_ok() && r.candidates[e].options[0] != '\0') {
        ost = apply_selected_options(name, r.candidates[e].options, resolved);
      }
      if (!ost.is_ok()) {
        failure = string_format("options on delegate '%s': %s", step.info->id, ost.message());
        break;
      }
      const DelegateSource src{&program,          m,
                               delegate,          {specs.data(), specs.size()},
                               CpuPoolBackends{}, {symbols.data(), symbols.size()}};
      BackendInterface* backend = nullptr;
      bool fatal = false;
      Result<DelegateHandle*> handle =
          init_delegate_on(s, src, name.c_str(), own, resolved, derived, &backend, &fatal);
      if (!handle.ok()) {
        failure = string_format("delegate '%s': %s", step.info->id, handle.status().message());
        stop = fatal;
        break;
      }
      fresh[k] = {backend, *handle, resolved, derived, {}};
      set_text(fresh[k].name, sizeof fresh[k].name, name);
      changed[k] = true;
    }
    result.reinit_ms += ms_between(init_start, Clock::now());
    if (failure.empty()) {
      std::vector<Installed> old(n);
      for (uint32_t k = 0; k < n; ++k) {
        if (!changed[k]) continue;
        old[k] = installed(s->delegates[k]);
        install(&s->delegates[k], fresh[k]);
      }
      st = time_method(s, all, spent, "select method on " + name, &u.ms, &u.runs);
      bool wins = st.is_ok() && replaces_fastest(u.ms, best_ms, true);
      if (!st.is_ok()) failure = string_format("execute failed: %s", st.message());
      // A winner's options and derived values move into the method allocator, which the
      // delegates keep for their life; all of them or none.
      for (uint32_t k = 0; wins && k < n; ++k) {
        if (!changed[k]) continue;
        fresh[k].options = s->allocator->make<ResolvedOptions>(*trial_options[k]);
        fresh[k].derived = s->allocator->make<DerivedValues>(*trial_derived[k]);
        if (fresh[k].options == nullptr || fresh[k].derived == nullptr) {
          failure = string_format("method allocator exhausted keeping %s on delegate '%s'",
                                  name.c_str(), s->delegates[k].info->id);
          wins = false;
        }
      }
      for (uint32_t k = 0; k < n; ++k) {
        if (!changed[k]) continue;
        if (wins) {
          install(&s->delegates[k], fresh[k]);
          destroy(old[k]);
          current[k] = entry_of(*s->delegates[k].info, name.c_str());
        } else {
          install(&s->delegates[k], old[k]);
          destroy(fresh[k]);
        }
      }
      if (wins) {
        best = name;
        best_ms = u.ms;
      }
    } else {
      for (uint32_t k = 0; k < n; ++k) {
        if (changed[k]) destroy(fresh[k]);
      }
    }
    if (!failure.empty()) {
      u.ms = 0;
      u.runs = 0;
      set_text(u.reason, sizeof u.reason, failure);
    }
  }

  // The one-line why.
  set_text(result.chosen, sizeof result.chosen, best);
  if (best != "mixed") {
    why = string_format("switching cost %.3g ms: %s %.3g ms beats mixed %.3g ms by more than 3%%",
                        result.mixed_ms - best_ms, best.c_str(), best_ms, result.mixed_ms);
  } else if (why.empty()) {
    const UniformAssignment* fastest = nullptr;
    for (size_t i = 0; i < result.num_uniform; ++i) {
      const UniformAssignment& u = result.uniform[i];
      if (u.runs > 0 && (fastest == nullptr || u.ms < fastest->ms)) fastest = &u;
    }
    if (fastest == nullptr) {
      why = uniform.empty() ? "no backend was accepted for every delegate"
                            : "no uniform assignment ran";
    } else if (fastest->ms < result.mixed_ms) {
      why = string_format("%s %.3g ms is within 3%% of mixed %.3g ms: the mix stays",
                          fastest->backend, fastest->ms, result.mixed_ms);
    } else {
      why = string_format("the mix is fastest: %s for every delegate is %.3g ms slower",
                          fastest->backend, fastest->ms - result.mixed_ms);
    }
  }
  if (!cut.empty()) {
    std::string names;
    for (const std::string& c : cut) names += (names.empty() ? "" : ", ") + c;
    why += string_format("; %s, %s not timed", budget_text.c_str(), names.c_str());
  }
  if (untried > 0) {
    why += string_format(
        "; %zu more backend(s) accepted for every delegate not tried (the report "
        "holds %zu)",
        untried, MethodSelection::kMaxUniform);
  }
  set_text(result.reason, sizeof result.reason, why);

  // Every delegate reports the check; under a uniform winner its candidates' chosen flag moves.
  for (uint32_t k = 0; k < n; ++k) {
    DelegateInfo* info = s->delegates[k].info;
    SelectionReport& r = info->selection;
    r.method = result;
    if (best != "mixed" && measured(*info)) {
      const int e = current[k];
      if (e >= 0 && static_cast<size_t>(e) < r.num_candidates && !r.candidates[e].chosen) {
        // Its own reason says how it did in this delegate's race; say what chose it instead.
        SelectionCandidate& c = r.candidates[e];
        const std::string own = c.reason;
        set_text(c.reason, sizeof c.reason,
                 string_format("chosen by the whole-method check (%s for every delegate)%s%s",
                               result.chosen, own.empty() ? "" : "; alone: ", own.c_str()));
      }
      for (size_t i = 0; i < r.num_candidates; ++i) r.candidates[i].chosen = int(i) == e;
      write_selection_summary(&r);  // the candidates' text again, then the same notes
      const size_t len = std::strlen(info->reason);
      std::snprintf(info->reason + len, sizeof info->reason - len, "%swhole method: %s",
                    len ? "; " : "", result.reason);
    }
  }
  TESSERA_LOG_INFO("method '%s': whole method: mixed %.3g ms -> %s (%s)", m->name()->c_str(),
                   result.mixed_ms, result.chosen, result.reason);
  for (uint32_t k = 0; k < n; ++k) {
    if (!measured(*s->delegates[k].info)) continue;  // nothing remembered for a pinned one
    if (const fb::Delegate* d = delegate_of(m, s->delegates[k])) {
      remember_selection(program, m, d, options, s, s->delegates[k].info->selection);
    }
  }
}

}  // namespace tessera::internal
