// LoadOptions: what the application decides at load time: symbolic dim values (given, or taken
// from the shapes of the inputs it will pass), backend options per backend and per delegate,
// retargeting and an explicit fallback chain. Fixed capacity; no heap. The option maps are
// borrowed and must outlive the load_method() call only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "tessera/backend/name_limits.h"
#include "tessera/backend/policy.h"
#include "tessera/core/result.h"
#include "tessera/core/span.h"
#include "tessera/core/status.h"
#include "tessera/core/tensor.h"
#include "tessera/runtime/on_execute_failure.h"

namespace tessera {

/// Most delegates one method may have (the compiler partitions within it).
inline constexpr size_t kMaxDelegatesPerMethod = 64;

class LoadBackendOptionsMap;
class DelegateOptionsMap;
struct DeviceInfo;

/// How each delegate's backend is chosen at load.
enum class Selection : uint8_t {
  Auto,     // a delegate the compiler left selectable (compiled without --backends): the
            // remembered choice from the selection cache, else Measure and remember, when a
            // cache directory is usable, else Fixed; a delegate pinned to its backend: Fixed
  Fixed,    // the backend the program names (after retargets and the fallback chain)
  Measure,  // every candidate backend is initialised and timed on the delegate; the fastest
            // whose outputs match the program's backend within selection_tolerance runs it;
            // the choice is written to the selection cache (when usable), never read from it
};
/// "auto", "fixed", "measure".
const char* selection_name(Selection selection);
/// Parses a selection name; InvalidArgument listing the names otherwise.
Result<Selection> parse_selection(std::string_view name);

struct LoadOptions {
  static constexpr size_t kMaxDims = 16;
  static constexpr size_t kMaxRetargets = 8;
  static constexpr size_t kMaxFallback = 8;
  /// Storage of one name with its terminator: a backend name (fallback, retargets, selection
  /// candidates, startup backend), a dim symbol or an input name. Model names are their own
  /// limit, but every backend name must fit.
  static constexpr size_t kMaxName = 32;
  static_assert(kMaxName >= kMaxBackendNameLength + 1);
  static constexpr size_t kMaxInputShapes = 16;

  struct DimValue {
    char name[kMaxName];
    int64_t value;
  };
  /// The shape an input will have, by name (`index` is -1) or by position (`name` is empty).
  struct InputShape {
    char name[kMaxName];
    int64_t index;
    size_t rank;
    int64_t sizes[tessera::kMaxDims];
  };
  struct Retarget {
    char from[kMaxName];
    char to[kMaxName];
  };

  /// Gives symbol `name` (such as "batch") its value for this load. Checked against the
  /// program's bounds at load. Errors: InvalidArgument (empty/over-long name, duplicate, full).
  Status set_dim(std::string_view name, int64_t value);
  /// Declares the shape input `name` will have (the tensor later given to Method::set_input).
  /// At load, each symbolic dim the program's input has as a plain symbol ("batch" in [batch, 4])
  /// and that set_dim did not give takes its size from this shape, checked against the program's
  /// bounds; every size is then checked against the program's input (constants, expressions such
  /// as 2*batch, and the rank). A set_dim value, or another input, giving a symbol a different
  /// value is an error naming both. Errors here: InvalidArgument (empty or over-long name, a rank
  /// over tessera::kMaxDims (8), a negative size, the same input twice, more than kMaxInputShapes);
  /// on error nothing changes. An unknown input name fails at load (NotFound).
  Status set_input_shape(std::string_view name, Span<const int64_t> shape);
  Status set_input_shape(std::string_view name, std::initializer_list<int64_t> shape) {
    return set_input_shape(name, Span<const int64_t>(shape.begin(), shape.size()));
  }
  /// As above, for the input at position `index` of the method (0 for the first).
  Status set_input_shape(size_t index, Span<const int64_t> shape);
  Status set_input_shape(size_t index, std::initializer_list<int64_t> shape) {
    return set_input_shape(index, Span<const int64_t>(shape.begin(), shape.size()));
  }
  /// Runs delegates compiled for backend `from` on backend `to`.
  Status add_retarget(std::string_view from, std::string_view to);
  /// Backends to try, in order, when a delegate's backend is unavailable or its init fails.
  /// Parses a comma-separated list: "opencl,xnnpack,portable".
  Status set_fallback(std::string_view comma_separated);

  /// Value given for `name`, or false.
  bool find_dim(std::string_view name, int64_t* value) const;
  /// The backend delegates of `backend` run on (itself unless retargeted).
  std::string_view retarget_of(std::string_view backend) const;
  Span<const DimValue> dims() const { return {dims_, num_dims_}; }
  Span<const InputShape> input_shapes() const { return {input_shapes_, num_input_shapes_}; }
  size_t fallback_size() const { return num_fallback_; }
  std::string_view fallback(size_t i) const { return fallback_[i]; }

  /// Per-backend load options (OptionLevel::Load) and per-delegate options
  /// (OptionLevel::Delegate); may be null.
  const LoadBackendOptionsMap* backend_options = nullptr;
  const DelegateOptionsMap* delegate_options = nullptr;
  /// Unknown option keys warn and are skipped instead of failing the load (version skew).
  bool lenient_options = false;
  /// What this load optimises for; unset: default_policy() (initially Policy::Auto). Backends
  /// derive the options left at `auto` from it (see docs/options.md, "Policies").
  Policy policy = Policy::Auto;
  bool has_policy = false;
  /// Sets `policy` (and has_policy).
  void set_policy(Policy p) {
    policy = p;
    has_policy = true;
  }
  /// How delegates' backends are chosen (see Selection). Under Measure: a candidate whose
  /// outputs differ from the reference (the program's own backend) by more than
  /// `selection_tolerance` times max |reference| (float outputs; others must be equal) is
  /// rejected. Every backend listed (set_selection_candidates) or recorded by the compiler is
  /// measured; once the delegate's selection has spent its budget, each gets two timed runs,
  /// and other backends (every registered one, for a pinned delegate without a list) and option
  /// variants are skipped. The budget is `selection_budget_ms` of inits and runs together, or,
  /// with kSelectionBudgetAuto (the default), derived from the fixed load it replaces: the runs
  /// (everything but the candidates' inits) may take kAutoBudgetRunsPerInit times the first
  /// candidate's init (the program's own backend: what a fixed load spends on the delegate),
  /// less the system time its thread spent beyond its user time (internal::auto_budget_base_ms).
  Selection selection = Selection::Auto;
  double selection_tolerance = 1e-4;
  static constexpr double kSelectionBudgetAuto = -1.0;
  static constexpr double kAutoBudgetRunsPerInit = 2.0;
  double selection_budget_ms = kSelectionBudgetAuto;
  bool selection_budget_is_auto() const { return selection_budget_ms == kSelectionBudgetAuto; }
  /// InvalidArgument unless the value is a finite number >= 0 (the budget:
  /// kSelectionBudgetAuto too): what load_method checks of the two fields above, for front
  /// ends that check a value when it is given.
  static Status check_selection_tolerance(double tolerance);
  static Status check_selection_budget_ms(double ms);
  /// Under measuring, how many runs the application expects to make per load. Each load from
  /// the selection cache initialises the chosen configuration again, so the fastest backend is
  /// kept unless another one's init plus this many runs comes to at least 3% less (faster runs
  /// must repay a longer init within these runs), and an option variant whose init
  /// takes longer than the chosen configuration's must save, per run, at least the extra init
  /// divided by this, or it is not taken. 100 (the default) suits an application that loads
  /// often; a service that loads once and runs for hours sets far more (Winograd's weight
  /// transforms then pay), one that loads for a few runs fewer. Part of the selection key.
  static constexpr int64_t kSelectionRunsPerLoadDefault = 100;
  static constexpr int64_t kSelectionRunsPerLoadLimit = int64_t{1} << 40;
  int64_t selection_runs_per_load = kSelectionRunsPerLoadDefault;
  /// InvalidArgument unless 1 <= runs <= kSelectionRunsPerLoadLimit.
  static Status check_selection_runs_per_load(int64_t runs);
  /// Under measuring, backends' option values that lower precision (oneDNN precision=bf16) are
  /// candidates too; they must still match within selection_tolerance, so raise it with this
  /// (bf16 keeps about 3 significant digits: 1e-2 relative to max |reference| is typical).
  bool selection_lower_precision = false;
  /// Under Measure, the backends to try besides the program's own (comma-separated,
  /// "xnnpack,onednn"); empty: every registered backend that is available. Errors:
  /// InvalidArgument (an empty or over-long name, more than kMaxFallback); on error nothing
  /// changes. An unknown name fails the load (OptionUnknownBackend).
  Status set_selection_candidates(std::string_view comma_separated);
  size_t selection_candidates_size() const { return num_selection_candidates_; }
  std::string_view selection_candidate(size_t i) const { return selection_candidates_[i]; }
  /// Where measured choices are remembered (see Selection). Null: $XDG_CACHE_HOME/tessera/
  /// selection, else $HOME/.cache/tessera/selection; an empty string: no cache (Auto then runs
  /// every delegate on its program's backend). Created when missing. A directory that cannot be
  /// created or written, or a damaged or foreign entry, is a warning and the delegate is
  /// measured again (Auto) or not remembered (Measure); the load does not fail for it.
  /// Borrowed: must outlive the load_method() call.
  const char* selection_cache_dir = nullptr;
  /// Size bound of the selection cache directory's entries (the remembered choices, `.tsel`,
  /// and the program hash memos, `.tphash`) in KiB; 0: none. After a load writes an entry, the
  /// least recently used (written or read) are removed until the entries fit; an entry another
  /// load is measuring or reading (its lock held) stays. Every load sharing the directory
  /// applies its own bound when it writes.
  static constexpr int64_t kSelectionCacheMaxKbDefault = 16384;
  static constexpr int64_t kSelectionCacheMaxKbLimit = int64_t{1} << 30;  // 1 TiB
  int64_t selection_cache_max_kb = kSelectionCacheMaxKbDefault;
  /// InvalidArgument unless 0 <= kb <= kSelectionCacheMaxKbLimit.
  static Status check_selection_cache_max_kb(int64_t kb);

  /// The machine the policy is decided on; null: this machine now (DeviceInfo::get() with its
  /// power, thermal and load state re-read). Tests and simulations pass a fixture's. Borrowed:
  /// must outlive the Method.
  const DeviceInfo* device_info = nullptr;

  /// Runs delegates whose backend would build device code at init (an OpenCL delegate whose
  /// programs are not in its program cache: BackendInterface::init_would_be_cold) on this CPU
  /// backend at first: load_method initialises the delegate on it and returns, the delegate's own
  /// backend initialises on a background thread, and the delegate moves to it at the start of
  /// the first execute after it is ready (never during an execute; Method::wait_for_startup
  /// waits for it). A background init that fails leaves the delegate on the startup backend
  /// with a warning and the reason in DelegateInfo::startup. With a warm cache the startup
  /// backend is not used. `name`: a registered backend ("xnnpack", "onednn"), "auto" (the
  /// fastest CPU backend a measured selection of the delegate found, else the first of onednn,
  /// xnnpack, portable that can run it), or "" (off, the default). The startup backend gets its
  /// global and load options; delegate options are for the delegate's own backend. Errors:
  /// InvalidArgument (a name over kMaxName - 1 characters); an unknown backend fails the load
  /// (OptionUnknownBackend). On error nothing changes.
  Status set_startup_backend(std::string_view name);
  /// The startup backend: "" (off), "auto" or a backend name.
  std::string_view startup_backend() const { return startup_backend_; }

  /// What execute does when a delegate's backend fails (see OnExecuteFailure). Fallback moves
  /// the delegate along the fallback chain given by set_fallback (nothing to move to without
  /// one), with the backend and delegate options of this load.
  OnExecuteFailure on_execute_failure = OnExecuteFailure::Fail;

 private:
  DimValue dims_[kMaxDims] = {};
  size_t num_dims_ = 0;
  InputShape input_shapes_[kMaxInputShapes] = {};
  size_t num_input_shapes_ = 0;
  Retarget retargets_[kMaxRetargets] = {};
  size_t num_retargets_ = 0;
  char fallback_[kMaxFallback][kMaxName] = {};
  size_t num_fallback_ = 0;
  char selection_candidates_[kMaxFallback][kMaxName] = {};
  size_t num_selection_candidates_ = 0;
  char startup_backend_[kMaxName] = {};
};

}  // namespace tessera
