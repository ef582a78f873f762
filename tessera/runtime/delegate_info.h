// DelegateInfo: what the runtime did with one delegate at load: which backend runs it, which
// was asked for, why it moved, and its effective options with the scope each came from.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera {

class ResolvedOptions;
class DerivedValues;

/// One backend tried by a measured selection.
struct SelectionCandidate {
  char backend[32] = {};
  /// The option value tried on top of the load's ("num_threads=1", "precision=bf16"); empty:
  /// the backend with the load's options as resolved.
  char options[64] = {};
  double median_ms = 0;   // of the timed runs; 0 when it did not run
  /// Timed runs the median is of: those not disturbed (RunTimer; all of them when every run
  /// was disturbed). Fewer than wanted when the candidate was clearly slower (its reason says
  /// so) or the budget was spent.
  int runs = 0;
  /// Timed runs left out because the measuring thread was off its CPU during them (another
  /// process or the host took it); each was timed again, up to twice the runs wanted.
  int disturbed_runs = 0;
  /// Time to initialise this candidate (this backend with these options) on the delegate, in
  /// ms; 0 when it was not initialised (skipped, unsupported).
  double init_ms = 0;
  /// Its init made again on its own, in ms, to weigh a variant's longer init against: its first
  /// (init_ms) was an entrant's, beside another backend's init or the first of the load, and
  /// read up to four times a fixed load's (ResNet-18's oneDNN at one thread: 111-397 ms beside
  /// XNNPACK's, about 60 alone); the lower of the two is weighed. 0 when it was not made again.
  double alone_init_ms = 0;
  bool accepted = false;  // ran, and its outputs matched the reference within the tolerance
  bool chosen = false;
  /// Why it was rejected or skipped ("outputs differ: max |diff| 0.5 > 1e-4 x max |ref| 2");
  /// for an accepted candidate, empty, or "reference" for the one the others were compared to.
  char reason[256] = {};
};

/// One backend for every delegate, timed by the whole-method check (MethodSelection).
struct UniformAssignment {
  char backend[32] = {};
  double ms = 0;  // median of Method::execute; 0 when it did not run
  int runs = 0;
  /// Empty when it ran; else why not ("skipped (budget: 300 ms spent)", "init failed on ...").
  char reason[160] = {};
};

/// The whole-method check of a measured selection: when the per-delegate choices put a method's
/// delegates on different backends, the whole method is timed with that mix and with each
/// backend accepted for every delegate, so the cost of handing over between backends is seen.
/// The same for every delegate of the method. `checked` false: no check (one delegate, choices
/// that agree, or a cached selection made without one).
struct MethodSelection {
  static constexpr size_t kMaxUniform = 6;
  bool checked = false;
  double mixed_ms = 0;  // median of Method::execute with the per-delegate choices
  int mixed_runs = 0;
  UniformAssignment uniform[kMaxUniform];
  size_t num_uniform = 0;
  /// "mixed" or the backend that now runs every delegate.
  char chosen[32] = {};
  /// Why: "switching cost 0.5 ms: onednn 3.6 ms beats mixed 4.1 ms by more than 3%", "the mix
  /// is fastest: ...", or what cut the check short (the budget, the mix failing to run).
  char reason[256] = {};
  /// The selection budget ran out before every uniform assignment was timed.
  bool budget_cut = false;
  /// Time spent initialising delegates on the uniform backends for the check, in ms.
  double reinit_ms = 0;
};

/// How a delegate's backend was chosen (LoadOptions::selection).
struct SelectionReport {
  static constexpr size_t kMaxCandidates = 12;
  char mode[8] = "fixed";  // "fixed" or "measure" (also for a choice read from the cache)
  /// The choice was read from the selection cache (measured by an earlier load); the
  /// candidates and summary are those of that measurement.
  bool cached = false;
  SelectionCandidate candidates[kMaxCandidates];
  size_t num_candidates = 0;
  /// One line for people: "measured: onednn 2.10 ms (chosen), xnnpack 3.02 ms; portable
  /// rejected (outputs differ ...)". Under fixed: empty, or why auto did not measure
  /// ("fixed: the selection cache is disabled ...").
  char summary[320] = {};
  /// What the measurement adds after the candidates in `summary`, each from its "; ": "; onednn
  /// and xnnpack initialised at once", "; budget auto: 792 ms of runs (2 x onednn's init)".
  /// Kept apart so that a rewrite of the summary from the candidates (the whole-method check)
  /// keeps them; empty when there are none, and for a cached selection written before they
  /// were kept (its summary has them).
  char notes[160] = {};
  /// Under the auto budget, its base: the first candidate's init in ms, less the system time
  /// its thread spent beyond its user time (internal::auto_budget_base_ms); the runs may take
  /// LoadOptions::kAutoBudgetRunsPerInit times it. 0 otherwise, and for a cached selection.
  double auto_budget_base_ms = 0;
  /// The whole-method check (measured loads of methods with two or more delegates); a cached
  /// selection carries the one it was made with.
  MethodSelection method;
  /// Measurements in a row, this one included, in which every timed run of some candidate was
  /// disturbed (RunTimer: another process kept the CPU), or that ran while the `auto` policy
  /// left CPUs to other processes (1); 0 for a clean one. The selection cache keeps it, and a
  /// load that reads an entry with 1 measures again instead, unless other processes keep CPUs
  /// busy at that load too (once: an entry with 2 stands, so that a machine that stays busy
  /// does not measure at every load).
  int disturbed_measurements = 0;
};

/// What happened to a delegate started on a startup backend (LoadOptions::startup_backend)
/// while its own backend initialised in the background. Updated by execute and
/// Method::wait_for_startup on the Method's thread, never behind the application's back.
struct StartupReport {
  /// The startup backend that ran the first executes; empty when none was used (the option is
  /// off, or the delegate's own backend had what it needed cached).
  char backend[32] = {};
  char target[32] = {};  // the delegate's own backend, initialised in the background
  /// "building", "switched" (now on `target`) or "failed" (stays on `backend`; see `failure`).
  char state[16] = {};
  /// Why `backend` was chosen ("auto: measured fastest CPU backend ...") or why none was.
  char reason[160] = {};
  uint64_t startup_executes = 0;  // executes served by `backend`
  uint64_t target_executes = 0;   // executes served by `target` after the switch
  /// When the switch happened: the 0-based number of the first execute served by `target`
  /// (-1 while not switched) and milliseconds after the background init started (at load).
  int64_t switched_at_execute = -1;
  double switched_after_ms = 0;
  /// How long the background init took (0 while building).
  double build_ms = 0;
  /// Why the background init failed ("failed" only).
  char failure[320] = {};
};

struct DelegateInfo {
  char id[64] = {};                 // e.g. "xnnpack#0"
  char backend[32] = {};            // the backend that runs it
  char requested_backend[32] = {};  // the backend the program names
  /// Empty when the requested backend runs it; else why it moved (retarget, or each fallback
  /// step with the error that caused it).
  char reason[512] = {};
  /// Effective options of the backend that runs it; in the method allocator.
  const ResolvedOptions* options = nullptr;
  /// The values the backend derived for options left at `auto`, with reasons; in the method
  /// allocator. Never null after a successful load.
  const DerivedValues* derived = nullptr;
  size_t num_nodes = 0;
  SelectionReport selection;
  /// Under LoadOptions::on_execute_failure == Fallback: how many times a failing execute moved
  /// this delegate to the next backend of the fallback chain, and why the latest move (or the
  /// latest failed attempt at one) happened: "'xnnpack' execute failed: ...; moved to 'portable'
  /// and retried". Each move is also appended to `reason`.
  int execute_fallbacks = 0;
  char execute_fallback_reason[384] = {};
  /// LoadOptions::startup_backend: which backend served which executes, and the switch.
  StartupReport startup;
};

}  // namespace tessera
