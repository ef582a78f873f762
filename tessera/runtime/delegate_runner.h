// Internal: loading, running and destroying a Method's delegates, and the execute loop.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/backend/context.h"
#include "tessera/backend/derived_values.h"
#include "tessera/backend/interface.h"
#include "tessera/backend/resolved_options.h"
#include "tessera/core/result.h"
#include "tessera/core/status.h"
#include "tessera/ir/schema.h"
#include "tessera/runtime/method_state.h"

namespace tessera {
class Program;
class ExecuteOptions;
class ProfileBuffer;
class ResolvedOptions;
class DerivedValues;
struct LoadOptions;
}  // namespace tessera

namespace tessera::internal {

/// The distinct backends, retargets applied, that a Method's delegates are initialised on and
/// that run CPU thread pools of their own (BackendInterface::uses_cpu_thread_pool), with how
/// many delegates run on each. Names are borrowed from the program, the LoadOptions and the
/// DelegateInfos of the load.
struct CpuPoolBackends {
  static constexpr size_t kMax = 8;
  std::string_view names[kMax];
  uint32_t delegates[kMax] = {};  // never 0 for a listed name
  size_t size = 0;

  /// These less one delegate on `backend`: the pools of a delegate's fellow delegates, which
  /// are what it shares the CPUs with (a Method of one delegate shares them with none, whatever
  /// backend a selection measures on it).
  CpuPoolBackends without(std::string_view backend) const;
  /// One delegate planned for `from` runs on `to` (a selection or fallback moved it).
  void move(std::string_view from, std::string_view to);
};
CpuPoolBackends cpu_pool_backends(const fb::Method* method, const LoadOptions& options);

/// A measured selection's winner, still initialised: the load adopts it instead of
/// initialising the same backend with the same options again. Destroys what it holds unless
/// released.
struct KeptCandidate {
  KeptCandidate() = default;
  KeptCandidate(const KeptCandidate&) = delete;
  KeptCandidate& operator=(const KeptCandidate&) = delete;
  ~KeptCandidate() { reset(); }
  /// Destroys the delegate held, if any.
  void reset();

  BackendInterface* backend = nullptr;
  DelegateHandle* handle = nullptr;
  int candidate = -1;                        // its index in DelegateInfo::selection
  std::unique_ptr<ResolvedOptions> options;  // what it was initialised with
  std::unique_ptr<DerivedValues> derived;    // what its init reported
  // A timed run right after its warm-up (see Contender::first_wall_ms); negative: none.
  double first_wall_ms = -1, first_cpu_ms = -1;
};

/// Picks the backend for delegate instruction `ins` (retarget, fallback chain), resolves its
/// options, and initialises it into `*out`, telling it which other backends of `pools` share
/// the CPUs with it. On failure nothing stays initialised.
Status load_delegate(const Program& program, const fb::Method* method, const fb::Instruction* ins,
                     const LoadOptions& options, const CpuPoolBackends& pools, MethodState* state,
                     DelegateStep* out);

void destroy_delegate(DelegateStep* step);

/// Destroys `step`'s handle and its background init, if any (a load failing after the step was
/// initialised but before it was counted in `state`).
void destroy_delegates_of_step(MethodState* state, DelegateStep* step);

/// Destroys every delegate of `state`, first waiting for background inits to end
/// (LoadOptions::startup_backend).
void destroy_delegates(MethodState* state);

/// Moves the delegates whose background init has finished to their own backend (or records its
/// failure); with `wait`, first waits for the pending ones, up to `timeout_ms` in all (< 0: no
/// limit). Returns true when none is pending any more. The Method's thread, between executes.
bool apply_startup_switches(MethodState* state, bool wait, double timeout_ms);

/// Whether `backend` can run every node of `graph`; on the first it cannot, its description
/// ("op 'Relu' (node 'relu0')") in `missing`.
bool supports_all(const BackendInterface& backend, const fb::Graph* graph, char* missing,
                  size_t cap);

/// `b`->init_would_be_cold for delegate `d` with the already resolved `resolved` options, asked
/// with the context init would get (the program's constants readable, never released; no
/// method allocator).
Result<bool> ask_init_would_be_cold(const Program& program, const fb::Method* method,
                                    const fb::Delegate* d, const BackendInterface& b,
                                    Span<const CompileSpec> specs, ResolvedOptions* resolved,
                                    const MethodState& s, Span<const SymbolValue> symbols);

/// Initialises backend `b` (registered as `name`) on delegate `d` with the already resolved
/// `resolved` options; `derived` receives what it derives. On success the backend's init-only
/// options are locked. A failed init returns its error; a failure to lock them (fatal: no other
/// backend should be tried) sets *fatal.
Result<DelegateHandle*> init_on(const Program& program, const fb::Method* method,
                                const fb::Delegate* d, std::string_view name, BackendInterface* b,
                                Span<const CompileSpec> specs, const CpuPoolBackends& pools,
                                MethodState* s, Span<const SymbolValue> symbols,
                                ResolvedOptions* resolved, DerivedValues* derived, bool* fatal);

/// Whether a candidate measured at `ms` replaces the fastest so far (`best_ms`). A variant (one
/// option value changed from what the load resolved) must be at least 3% faster: closer is the
/// noise of five timed runs, and a variant may cost load time the measurement does not see.
bool replaces_fastest(double ms, double best_ms, bool variant);

/// Of backends measured with these inits and run medians (each accepted; the same length), the
/// index of the one the delegate keeps: the fastest runs (the first of equals), unless another
/// one's init plus `runs_per_load` runs comes to at least 3% less than the fastest's (the load's
/// noise: one init reading and a few runs each), then the least of those. Empty: -1.
int keep_by_load(Span<const double> init_ms, Span<const double> median_ms, double runs_per_load);

/// Whether a candidate whose timed runs so far took `times` is clearly slower than the fastest
/// so far (`best_ms`, its median): two runs or more, the quickest above 1.25x that median. One
/// run never is (a single run twice as slow as the ones around it happens, and would decide a
/// choice the cache then keeps). Its remaining timed runs are skipped (the first, measuring
/// load pays for them).
bool clearly_slower(const std::vector<double>& times, double best_ms);

/// The clocks a selection times runs with, in ms: wall time, and the CPU time of the calling
/// thread (nullptr when not known: then no run is taken for disturbed).
struct RunClocks {
  double (*wall_ms)() = nullptr;
  double (*thread_cpu_ms)() = nullptr;
  /// The calling thread's user and system CPU time apart (nullptr when not known: then the
  /// auto budget's base is the first init's wall time; see auto_budget_base_ms).
  double (*thread_user_ms)() = nullptr;
  double (*thread_sys_ms)() = nullptr;
};

/// The auto selection budget's base (LoadOptions::kAutoBudgetRunsPerInit times it): the first
/// candidate's init, `wall_ms`, less the system time its thread spent beyond its user time.
/// That excess is the host's, not the work's: GoogLeNet's oneDNN init at one thread spent 28-35
/// ms of system time beside 75-111 ms of user time in most loads, and 110-123 ms beside 83-84
/// in the loads it read 210-232 ms (the same page faults, each slower), when a budget twice
/// that let the runs outgrow what a fixed load spends. An init that waits (asleep, on a device)
/// keeps its wall time; so does one with either time unknown (negative). Never below its user
/// time, never above `wall_ms`.
double auto_budget_base_ms(double wall_ms, double user_ms, double sys_ms);

/// The clocks measure_candidates and the whole-method check use: steady_clock and
/// CLOCK_THREAD_CPUTIME_ID, unless a test set others.
RunClocks selection_clocks();

/// Tests: times selections with `clocks` from now on (a default RunClocks restores the real
/// ones). Not for use while a load is measuring in another thread.
void set_selection_clocks(RunClocks clocks);

/// How many times a load has hashed a whole program for its selection key (the rest read the
/// hash from the selection cache's memo of that file). Tests.
uint64_t program_hashes_computed();

/// How many races (race()) have begun in this process. Tests: a stub backend that reads it can
/// run at one speed in one race and at another in the next.
uint64_t races_begun();

/// Tests: a program file's hash is remembered only when the file last changed at least
/// `age_ms` before it was hashed (default 2000: a change within the same timestamp tick would
/// otherwise go unseen). Returns the previous value.
int64_t set_program_hash_memo_min_age_ms(int64_t age_ms);

/// The timed runs of one candidate (or of one whole-method assignment). A run during which the
/// calling thread was off its CPU noticeably (another process took the CPU, or the host took
/// the virtual CPU) is disturbed: it is left out of the median and another run is timed in its
/// place, up to twice the number wanted. "Noticeably" is measured from zero when the backend
/// runs on the calling thread (BackendInterface::runs_on_calling_thread: that thread does the
/// work of a one-thread run and its share of a pooled one, busy), else from the least disturbed
/// run so far (a thread that waits asleep for a device is off its CPU in every run). When every
/// run was disturbed (a process that kept the CPU for all of them), the least disturbed ones are
/// used and disturbed_throughout() says so. A preempted worker of a pooled run is not seen, nor
/// contention that slows the thread while it runs (a busy hyperthread sibling, the memory bus).
class RunTimer {
 public:
  RunTimer(int wanted, RunClocks clocks, bool on_calling_thread = false)
      : wanted_(wanted), clocks_(clocks), on_calling_thread_(on_calling_thread) {}

  /// Times one call of `run` (Status()); a failed run is not recorded, and its error returned.
  template <class Run>
  Status time(Run&& run) {
    double wall = 0, cpu = 0;
    Status st = time_once(clocks_, run, &wall, &cpu);
    if (st.is_ok()) add(wall, cpu);
    return st;
  }
  /// One call of `run` on `clocks`: its wall ms, and the thread's CPU ms over it (negative
  /// without a CPU clock).
  template <class Run>
  static Status time_once(RunClocks clocks, Run&& run, double* wall_ms, double* cpu_ms) {
    auto cpu = [&clocks] { return clocks.thread_cpu_ms ? clocks.thread_cpu_ms() : 0.0; };
    const double c0 = cpu();
    const double w0 = clocks.wall_ms();
    Status st = run();
    const double w1 = clocks.wall_ms();
    const double c1 = cpu();
    *wall_ms = w1 - w0;
    *cpu_ms = clocks.thread_cpu_ms ? c1 - c0 : -1;
    return st;
  }

  /// Records a run of `wall_ms` during which the thread ran `cpu_ms` (negative: not known).
  void add(double wall_ms, double cpu_ms);
  /// Fewer undisturbed runs than wanted, and attempts left.
  bool wants_more() const;
  /// The undisturbed runs' times, sorted.
  std::vector<double> kept() const;
  /// Their median (0 before any run).
  double median() const;
  int attempts() const { return static_cast<int>(runs_.size()); }
  /// Runs disturbed (all of them when disturbed_throughout()).
  int disturbed() const;
  /// Runs were timed, and every one was disturbed (measured from zero): kept() holds the least
  /// disturbed ones.
  bool disturbed_throughout() const;

  /// Off-CPU time beyond the least disturbed run's that makes a run disturbed: 0.05 ms or 5% of
  /// the run, whichever is more.
  static bool is_disturbed(double wall_ms, double off_ms, double least_off_ms);

 private:
  struct Run {
    double wall_ms, off_ms;
  };
  double cpu_ms() const { return clocks_.thread_cpu_ms ? clocks_.thread_cpu_ms() : 0; }
  double least_off() const;
  // What off-CPU time is measured from: 0 on the calling thread, else the least disturbed run.
  double strict_baseline() const { return on_calling_thread_ ? 0.0 : least_off(); }
  int clean_runs() const;  // not disturbed from strict_baseline()

  int wanted_;
  RunClocks clocks_;
  bool on_calling_thread_;
  std::vector<Run> runs_;
};

/// One contender of race(): a run of an initialised candidate on the delegate's arguments.
struct Contender {
  std::function<Status()> run;
  bool on_calling_thread = false;  // BackendInterface::runs_on_calling_thread()
  /// A timed run it made before the race, right after its own warm-up (so with its caches as
  /// its own run left them): wall ms (negative: none) and the thread's CPU ms over it (negative:
  /// not known). When every contender has one, race() counts them as its first round.
  double first_wall_ms = -1, first_cpu_ms = -1;
  /// The backend whose run it is: its pool is not parked before its own runs
  /// (park_candidate_pools). Null: every pool is parked.
  const BackendInterface* backend = nullptr;
};

/// What race() measured of one contender.
struct RaceResult {
  double median_ms = 0;  // of its undisturbed timed runs (0: none)
  int runs = 0;          // its undisturbed timed runs
  int disturbed = 0;     // its disturbed ones (RunTimer)
  bool disturbed_throughout = false;
  bool stopped = false;         // clearly slower than the fastest: not timed further
  bool beaten = false;          // its quickest run slower than the fastest's slowest
  Status error = Status::ok();  // a run failed: out of the race from then on
};

/// Times `contenders` in rounds of one timed run each, the order rotating by one every round
/// (with two, which goes first alternates), parking the thread pools of `names` before every
/// run, so that all see the same machine: a slowdown that comes and goes during one contender's
/// runs no longer decides. Each timed run follows an untimed one of the same contender (unless
/// its own run was the last, as `last_ran`, an index or -1, says of the first), so that it
/// finds the caches as a delegate run over and over does, not as another candidate left them.
/// From the second round on, where the quickest timed run of every contender still racing took
/// kLongRunMs or more, there is no untimed run: refilling the caches is then a few percent of a
/// run, and the rotation gives each about the same share of timed runs after another's.
/// The first round starts with `last_ran` when given; when every contender brought a timed run
/// made right after its warm-up (Contender::first_wall_ms), those are the first round, and the
/// race starts at the second (the untimed run that the first round's second contender would
/// need is saved). After each timed run, on undisturbed runs only
/// (RunTimer), a contender leaves the race when it is clearly slower than the fastest so far
/// (clearly_slower: `stopped`), or when both have `min_runs` and its quickest run is slower than
/// the fastest's slowest (`beaten`); the fastest leaves once nobody is left to race it (its one
/// undisturbed run is enough then; a lone contender, that raced nobody, `min_runs`). Otherwise each
/// goes on to `max_runs` undisturbed runs (disturbed ones are timed again, up to `min_runs` more
/// attempts). A failed run takes its contender out with the error. The race ends when none is
/// left or `budget_spent` says so after a round from the second on (so each has two timed runs:
/// one can be an outlier).
constexpr double kLongRunMs = 10.0;
std::vector<RaceResult> race(const std::vector<Contender>& contenders, int min_runs, int max_runs,
                             RunClocks clocks, const std::vector<std::string>& names,
                             const std::function<bool()>& budget_spent, int last_ran);

/// LoadOptions::selection == Measure, for delegate `d` compiled for `requested`: initialises
/// `requested` and every candidate backend that can take the delegate, runs each on
/// deterministic inputs (the delegate's non-constant inputs are overwritten; nothing has run
/// yet at load), compares its outputs with the first that ran (the reference, normally
/// `requested`), times those accepted against each other (race(): alternately, three to six
/// runs each), then each backend's option variants one at a time against the fastest so far
/// (race() of the two), and destroys every one but the fastest accepted, which
/// it hands over in `kept` (so the load does not initialise it a second time). Every accepted
/// backend is initialised at once while they race. Fills info->selection and
/// returns the index there of the fastest accepted candidate, or -1 when none ran (the caller
/// then loads `requested` as usual, which reports its error).
int measure_candidates(const Program& program, const fb::Method* method, const fb::Instruction* ins,
                       const fb::Delegate* d, std::string_view requested,
                       Span<const CompileSpec> specs, const LoadOptions& options,
                       const CpuPoolBackends& pools, MethodState* s,
                       Span<const SymbolValue> symbols, Span<EValue*> args, DelegateInfo* info,
                       KeptCandidate* kept);

/// LoadOptions::selection for delegate `d` (see Selection): under Fixed, or Auto on a delegate
/// without recorded candidates, returns -1 (run `requested`). Otherwise the remembered choice
/// (Auto, from the selection cache) or measure_candidates (then written to the cache); returns
/// the index in info->selection of the chosen candidate, or -1. Cache problems are warnings.
/// After a measurement, `kept` holds the chosen candidate's initialised delegate.
int select_backend(const Program& program, const fb::Method* method, const fb::Instruction* ins,
                   const fb::Delegate* d, std::string_view requested, Span<const CompileSpec> specs,
                   const LoadOptions& options, const CpuPoolBackends& pools, MethodState* s,
                   Span<const SymbolValue> symbols, Span<EValue*> args, DelegateInfo* info,
                   KeptCandidate* kept);

/// Rewrites report->summary ("measured: onednn 2.1 ms (chosen), xnnpack 3.0 ms; portable
/// rejected") from its candidates, then its notes.
void write_selection_summary(SelectionReport* report);

/// Writes `report` (a selection the whole-method check changed) to the selection cache entry of
/// delegate `d`, under the key select_backend used. Nothing when the cache is disabled; a failed
/// write is a warning.
void remember_selection(const Program& program, const fb::Method* method, const fb::Delegate* d,
                        const LoadOptions& options, MethodState* s, const SelectionReport& report);

/// Fills `t` with deterministic data: float32 in [-1, 1) from `seed`, other types zero (a safe
/// index for gathers). What a selection measures on.
void fill_deterministic(Tensor* t, uint32_t seed);

/// Parks the idle workers of every backend in `names` that runs a CPU pool (BackendInterface::
/// park_idle_workers) but `next`, the one about to run: those a previous candidate left
/// busy-waiting would otherwise take the CPUs of the one measured next (XNNPACK's spin for tens
/// of milliseconds after a run, libgomp's for about 5 ms after each oneDNN run at two threads),
/// and a 2-thread candidate measured right after another backend's would look slower than it
/// is. `next`'s own workers stay as its last run left them, as they are for runs in a loop.
void park_candidate_pools(const std::vector<std::string>& names,
                          const BackendInterface* next = nullptr);

/// Sets one option ("KEY=VALUE", a selection candidate's `options`) on `resolved`, with source
/// Selection. Errors as parse_option_value, or OptionUnknownKey.
Status apply_selected_options(std::string_view backend, const char* text,
                              ResolvedOptions* resolved);

/// Checks the load options that concern the whole method (load map, delegate map, fallback
/// chain) once, before any delegate is initialised.
Status check_method_options(const fb::Method* method, const LoadOptions& options);

/// Runs every step of the chain. `options` and `profile` may be null. No heap allocation.
Status execute_steps(MethodState* state, const ExecuteOptions* options, ProfileBuffer* profile);

/// Builds the value of method value `v` (resolved sizes, data in the arena or the constants).
Status make_value(const fb::Value* v, const Program& program, Span<const int64_t> symbols,
                  uint8_t* arena, EValue* out);

}  // namespace tessera::internal
