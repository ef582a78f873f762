// tessera-run's option flags and reports: the backend-option front ends (flags, TOML file,
// TESSERA_OPTIONS), the schema table (--list-options) and per-delegate reports.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "tessera/backend/execute_options.h"
#include "tessera/backend/options_map.h"
#include "tessera/core/status.h"
#include "tessera/runtime/load_options.h"
#include "tools/common/json_output.h"

namespace CLI {
class App;
}

namespace tessera {
class Method;
}

namespace tessera::tools {

/// What the options flags produce; owns the maps LoadOptions points to.
class RunOptionsState {
 public:
  const LoadOptions& load_options() const { return load_; }
  const ExecuteOptions& execute_options() const { return execute_; }

  LoadOptions load_;
  LoadBackendOptionsMap backend_options_;
  DelegateOptionsMap delegate_options_;
  ExecuteOptions execute_;
  std::string selection_cache_dir_;  // what load_.selection_cache_dir points at, when set
};

struct RunOptionsCli {
  std::vector<std::string> load, global, delegate, execute, dims, retarget;
  std::string options_file, fallback, policy;
  std::string select;             // --select: auto, fixed or measure
  std::string select_candidates;  // --select-candidates: comma-separated backends
  std::string select_budget_ms;   // --select-budget-ms: "auto" or ms; empty: the default
  double select_tolerance = -1;   // --select-tolerance; < 0: the LoadOptions default
  std::string select_cache;       // --select-cache: the selection cache directory ("" disables)
  bool has_select_cache = false;
  int64_t select_cache_max_kb = -1;     // --select-cache-max-kb; < 0: the LoadOptions default
  int64_t select_runs_per_load = 0;     // --select-runs-per-load; 0: the LoadOptions default
  bool select_lower_precision = false;  // --select-lower-precision
  std::string on_execute_failure;  // --on-execute-failure: fail or fallback
  std::string startup_backend;     // --startup-backend: a backend, auto, or "" (off)
  bool list_options = false, explain_options = false, lenient = false, device_info = false;

  void add_to(CLI::App& app);
  /// Parses every flag, the options file and TESSERA_OPTIONS; sets global options. On error
  /// nothing global has changed.
  Status apply(RunOptionsState* state) const;
};

/// Every registered backend's schema, one aligned entry per option (key; type, default,
/// range or choices, scopes, init-only; doc), wrapped at `width` columns.
void print_option_schemas(FILE* out, size_t width);
/// The same as JSON: {"backends": [{name, available, unavailable_reason (null when available),
/// options: [{key, type, default, range, scopes: [...], init_only, doc}]}]}.
Json option_schemas_json();
/// One block per delegate: backend, requested backend, why it moved, and (with `explain`) each
/// effective option with its source and origin ("load (options.toml:3)"), and for a value the
/// backend derived, the resolved value and why; a key `execute` sets for the delegate's backend
/// shows that per-call value ("execute (--execute-option)").
void print_delegates(const Method& method, bool explain, FILE* out,
                     const ExecuteOptions& execute = ExecuteOptions::none());
/// The JSON array of delegates: id, backend, requested_backend, nodes, reason, selection {mode,
/// cached, candidates [{backend, median_ms, runs, accepted, chosen, reason}]}, startup (null
/// unless a startup backend served it: {backend, target, state, reason, executes {<backend>:
/// count}, switched_at_execute, switched_after_ms, build_ms, failure}), startup_reason (why a
/// startup backend was or was not used; "" with none asked for), options [{key,
/// value, source, origin (the front end, file and line, or null), and for a value the backend
/// derived: resolved, reason}], as print_delegates.
Json delegates_json(const Method& method, const ExecuteOptions& execute = ExecuteOptions::none());
/// The load's policy decision, as a line of text and as a JSON object.
void print_policy(const Method& method, FILE* out);
Json policy_json(const Method& method);

}  // namespace tessera::tools
