#include "tools/tessera-run/run_report.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tessera/backend/derived_values.h"
#include "tessera/backend/global_options.h"
#include "tessera/backend/option_parser.h"
#include "tessera/backend/policy.h"
#include "tessera/backend/registry.h"
#include "tessera/backend/resolution.h"
#include "tessera/backend/resolved_options.h"
#include "tessera/runtime/delegate_info.h"
#include "tessera/runtime/method.h"
#include "tools/common/terminal.h"

namespace tessera::tools {
namespace {

std::string value_string(const BackendOption& o) {
  char buf[320];
  return o.format_value(buf, sizeof buf);
}

std::string spec_default(const OptionSpec& s) { return value_string(s.default_option()); }

std::string spec_range(const OptionSpec& s) {
  switch (s.type) {
    case OptionType::Int: return std::to_string(s.min_int) + ".." + std::to_string(s.max_int);
    case OptionType::Double: {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%g..%g", s.min_double, s.max_double);
      return buf;
    }
    case OptionType::Enum: {
      std::string out;
      for (size_t i = 0; i < s.choices.size(); ++i) out += (i ? "|" : "") + std::string(s.choices[i]);
      return out;
    }
    case OptionType::String: return "<= " + std::to_string(s.max_length) + " chars";
    case OptionType::Bool: return "true|false";
  }
  return "";
}

// What a delegate's option `k` is in each execute call: `execute`'s value if it sets the key for
// the delegate's backend, else the load-time one.
struct PerCallOption {
  const BackendOption* option;
  OptionLevel source;
};

PerCallOption per_call(const DelegateInfo& d, size_t k, const ExecuteOptions& execute) {
  PerCallOption p{&d.options->option(k), d.options->source(k)};
  for (const BackendOption& e : execute.get_options(d.backend)) {
    if (e.key() == p.option->key()) p = {&e, OptionLevel::Execute};
  }
  return p;
}

}  // namespace

void RunOptionsCli::add_to(CLI::App& app) {
  app.add_option("--option", load, "BACKEND.KEY=VALUE at load scope (per backend); repeatable");
  app.add_option("--global-option", global, "BACKEND.KEY=VALUE at global scope; repeatable");
  app.add_option("--delegate-option", delegate, "DELEGATE_ID.KEY=VALUE (e.g. xnnpack#0.num_threads=1)");
  app.add_option("--execute-option", execute, "BACKEND.KEY=VALUE for every execute call");
  app.add_option("--options-file", options_file, "TOML file: [global.B] [load.B] [delegate.\"ID\"] [execute.B]");
  app.add_option("--dim", dims,
                 "NAME=VALUE for a symbolic dim (e.g. batch=4); repeatable (default: from the "
                 "--input files' shapes)");
  app.add_option(
      "--fallback", fallback,
      "Comma-separated backends to try when a delegate's fails (default: none, the load fails)");
  app.add_option("--on-execute-failure", on_execute_failure,
                 "fail (default) or fallback: move a delegate whose backend fails while running "
                 "to the next backend of --fallback and retry it once");
  app.add_option("--startup-backend", startup_backend,
                 "Run delegates whose backend would compile device code at load (an OpenCL "
                 "delegate not in its program cache) on this CPU backend (xnnpack, onednn, or "
                 "auto) while that compiles in the background; they move over between two "
                 "executes once it is ready");
  app.add_option("--retarget", retarget, "FROM=TO: run delegates compiled for FROM on TO");
  app.add_flag("--lenient-options", lenient, "Warn about and skip unknown option keys");
  app.add_flag("--list-options", list_options,
               "Print every registered backend's option schema (with --json: as JSON) and exit");
  app.add_flag("--explain-options", explain_options,
               "Print each delegate's effective options, their sources and the values derived "
               "for options left at auto");
  app.add_option("--policy", policy,
                 "Load policy: auto (default), latency, balanced or power_saver; backends derive "
                 "the options left at auto from it");
  app.add_option("--select", select,
                 "How each delegate's backend is chosen: auto (default: on a program compiled "
                 "without --backends, the choice remembered in the selection cache, else measure "
                 "and remember it; a program compiled with --backends runs them as fixed), fixed "
                 "(the program's), or measure (every backend that can take the delegate is run "
                 "at load, checked against the program's backend, the fastest kept and "
                 "remembered)");
  app.add_option("--select-candidates", select_candidates,
                 "With --select measure: the backends to try besides the program's "
                 "(comma-separated; default every available one)");
  app.add_option("--select-budget-ms", select_budget_ms,
                 "With --select measure: time per delegate for trying candidates, inits and "
                 "runs, in ms; or auto (the default): the runs may take twice the first "
                 "candidate's init, which is what a fixed load spends");
  app.add_option("--select-tolerance", select_tolerance,
                 "With --select measure: largest accepted output difference, relative to the "
                 "reference's max |value| (default 1e-4)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--select-runs-per-load", select_runs_per_load,
                 "When measuring: how many runs the application makes per load (default 100); "
                 "the fastest backend is kept unless another one's init plus this many runs comes "
                 "to at least 3% less, and an option variant whose init takes longer than the chosen configuration's must repay the "
                 "difference within them, by what it saves per run")
      ->check(CLI::Range(int64_t{1}, LoadOptions::kSelectionRunsPerLoadLimit));
  app.add_flag("--select-lower-precision", select_lower_precision,
               "When measuring: also try option values that lower precision (oneDNN "
               "precision=bf16); they must still pass --select-tolerance, so raise it (bf16: "
               "about 1e-2)");
  app.add_option("--select-cache", select_cache,
                 "Directory of the selection cache (default $XDG_CACHE_HOME/tessera/selection, "
                 "else ~/.cache/tessera/selection); an empty value disables it")
      ->each([this](const std::string&) { has_select_cache = true; });
  app.add_option("--select-cache-max-kb", select_cache_max_kb,
                 "Size bound of the selection cache's entries in KiB (default 16384; 0: none): "
                 "after a load writes one, the least recently used are removed until they fit")
      ->check(CLI::Range(int64_t{0}, LoadOptions::kSelectionCacheMaxKbLimit));
  app.add_flag("--device-info", device_info,
               "Print what Tessera detects on this machine (with --json: as JSON) and exit");
}

Status RunOptionsCli::apply(RunOptionsState* state) const {
  const Validation validation = lenient ? Validation::Lenient : Validation::Strict;
  ParsedOptions parsed;
  // Lowest priority first: the environment, then the file, then flags.
  if (const char* env = std::getenv("TESSERA_OPTIONS"); env != nullptr && *env != '\0') {
    TESSERA_RETURN_IF_ERROR(parse_options_env(env, validation, &parsed));
  }
  if (!options_file.empty()) {
    TESSERA_RETURN_IF_ERROR(parse_options_file(options_file, validation, &parsed));
  }
  for (const std::string& s : global) {
    TESSERA_RETURN_IF_ERROR(
        parse_option_assignment(s, OptionLevel::Global, validation, "--global-option", &parsed));
  }
  for (const std::string& s : load) {
    TESSERA_RETURN_IF_ERROR(
        parse_option_assignment(s, OptionLevel::Load, validation, "--option", &parsed));
  }
  for (const std::string& s : delegate) {
    TESSERA_RETURN_IF_ERROR(parse_option_assignment(s, OptionLevel::Delegate, validation,
                                                    "--delegate-option", &parsed));
  }
  for (const std::string& s : execute) {
    TESSERA_RETURN_IF_ERROR(
        parse_option_assignment(s, OptionLevel::Execute, validation, "--execute-option", &parsed));
  }
  for (const std::string& d : dims) {
    size_t eq = d.find('=');
    char* end = nullptr;
    long long v = eq == std::string::npos ? 0 : std::strtoll(d.c_str() + eq + 1, &end, 10);
    if (eq == std::string::npos || eq == 0 || end == d.c_str() + eq + 1 || *end != '\0') {
      return Status::error(Error::InvalidArgument, "--dim '%s' is not NAME=INTEGER", d.c_str());
    }
    TESSERA_RETURN_IF_ERROR(state->load_.set_dim(std::string_view(d).substr(0, eq), v));
  }
  for (const std::string& r : retarget) {
    size_t eq = r.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == r.size()) {
      return Status::error(Error::InvalidArgument, "--retarget '%s' is not FROM=TO", r.c_str());
    }
    TESSERA_ASSIGN_OR_RETURN(BackendInterface * to, get_backend(std::string_view(r).substr(eq + 1)));
    (void)to;
    TESSERA_RETURN_IF_ERROR(state->load_.add_retarget(std::string_view(r).substr(0, eq),
                                                      std::string_view(r).substr(eq + 1)));
  }
  if (!fallback.empty()) TESSERA_RETURN_IF_ERROR(state->load_.set_fallback(fallback));
  if (!on_execute_failure.empty()) {
    Result<OnExecuteFailure> v = parse_on_execute_failure(on_execute_failure);
    if (!v.ok()) return v.status().with_prefix("--on-execute-failure");
    state->load_.on_execute_failure = *v;
  }
  if (!startup_backend.empty()) {
    if (startup_backend != "auto") {
      Result<BackendInterface*> b = get_backend(startup_backend);
      if (!b.ok()) return b.status().with_prefix("--startup-backend");
    }
    Status st = state->load_.set_startup_backend(startup_backend);
    if (!st.is_ok()) return st.with_prefix("--startup-backend");
  }
  if (!policy.empty()) {
    Result<Policy> p = parse_policy(policy);
    if (!p.ok()) return p.status().with_prefix("--policy");
    state->load_.set_policy(*p);
  }
  if (!select.empty()) {
    Result<Selection> sel = parse_selection(select);
    if (!sel.ok()) return sel.status().with_prefix("--select");
    state->load_.selection = *sel;
  }
  if (!select_candidates.empty()) {
    Status st = state->load_.set_selection_candidates(select_candidates);
    if (!st.is_ok()) return st.with_prefix("--select-candidates");
  }
  if (select_budget_ms == "auto") {
    state->load_.selection_budget_ms = LoadOptions::kSelectionBudgetAuto;
  } else if (!select_budget_ms.empty()) {
    double ms = 0;
    size_t used = 0;
    try {
      ms = std::stod(select_budget_ms, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != select_budget_ms.size() || !(ms >= 0) || std::isinf(ms)) {
      return Status::error(Error::InvalidArgument,
                           "--select-budget-ms: '%s' is neither auto nor a number of ms >= 0",
                           select_budget_ms.c_str());
    }
    state->load_.selection_budget_ms = ms;
  }
  if (select_tolerance >= 0) state->load_.selection_tolerance = select_tolerance;
  state->load_.selection_lower_precision = select_lower_precision;
  if (select_cache_max_kb >= 0) state->load_.selection_cache_max_kb = select_cache_max_kb;
  if (select_runs_per_load > 0) state->load_.selection_runs_per_load = select_runs_per_load;
  if (has_select_cache) {
    state->selection_cache_dir_ = select_cache;
    state->load_.selection_cache_dir = state->selection_cache_dir_.c_str();
  }
  TESSERA_RETURN_IF_ERROR(parsed.to_load_maps(&state->backend_options_, &state->delegate_options_));
  TESSERA_RETURN_IF_ERROR(parsed.to_execute_options(&state->execute_));
  TESSERA_RETURN_IF_ERROR(parsed.apply_global(validation));
  state->load_.backend_options = &state->backend_options_;
  state->load_.delegate_options = &state->delegate_options_;
  state->load_.lenient_options = lenient;
  return Status::ok();
}

void print_option_schemas(FILE* out, size_t width) {
  for (const std::string& name : registered_backends()) {
    auto b = get_backend(name);
    if (!b.ok()) continue;
    std::string text = name;
    if (!(*b)->is_available()) {
      const char* why = (*b)->unavailable_reason();
      const std::string note = std::string("(not available on this machine") +
                               (why && why[0] ? ": " : "") + (why ? why : "") + ")";
      text += "  ";
      append_wrapped(note, text.size(), 4, width, &text);
    }
    text += '\n';
    Span<const OptionSpec> schema = (*b)->option_schema();
    if (schema.empty()) text += "  (no options)\n";
    // Aligned columns: the key, then its type, default, range and scopes, then the doc, both
    // wrapped in the second column; a key too long for the first column gets a line of its own.
    size_t longest = 0;
    for (const OptionSpec& s : schema) longest = std::max(longest, std::string_view(s.key).size());
    const size_t column = std::min<size_t>(2 + longest + 2, width / 3);
    for (const OptionSpec& s : schema) {
      text += "  ";
      text += s.key;
      if (2 + std::string_view(s.key).size() + 2 <= column) {
        text.append(column - 2 - std::string_view(s.key).size(), ' ');
      } else {
        text += '\n';
        text.append(column, ' ');
      }
      char scopes[96];
      format_scopes(s.scopes, scopes, sizeof scopes);
      std::string summary = std::string(option_type_name(s.type)) + ", default " + spec_default(s);
      if (s.type != OptionType::Bool) summary += ", " + spec_range(s);
      summary += "; scopes: " + std::string(scopes) + (s.is_init_only ? "; init-only" : "");
      append_wrapped(summary, column, column, width, &text);
      text += '\n';
      if (s.doc != nullptr && s.doc[0] != '\0') {
        text.append(column, ' ');
        append_wrapped(s.doc, column, column, width, &text);
        text += '\n';
      }
    }
    text += '\n';
    std::fputs(text.c_str(), out);
  }
}

Json option_schemas_json() {
  Json backends = Json::array();
  for (const std::string& name : registered_backends()) {
    auto b = get_backend(name);
    if (!b.ok()) continue;
    const bool available = (*b)->is_available();
    const char* why = available ? nullptr : (*b)->unavailable_reason();
    Json options = Json::array();
    for (const OptionSpec& s : (*b)->option_schema()) {
      Json scopes = Json::array();
      for (OptionLevel scope : kScopeLevels) {
        if (s.scopes.has(scope)) scopes.push_back(option_level_name(scope));
      }
      options.push_back({{"key", s.key},
                         {"type", option_type_name(s.type)},
                         {"default", spec_default(s)},
                         {"range", spec_range(s)},
                         {"scopes", std::move(scopes)},
                         {"init_only", s.is_init_only},
                         {"doc", s.doc != nullptr ? s.doc : ""}});
    }
    backends.push_back({{"name", name},
                        {"available", available},
                        {"unavailable_reason", available ? Json(nullptr) : Json(why ? why : "")},
                        {"options", std::move(options)}});
  }
  return {{"backends", std::move(backends)}};
}

namespace {

// "whole method: mixed 4.1 ms, onednn 3.6 ms, xnnpack skipped (budget ...) -> onednn (why)"
void print_whole_method(const MethodSelection& m, bool cached, FILE* out) {
  if (m.mixed_runs > 0) {
    std::fprintf(out, "whole method: mixed %.3g ms", m.mixed_ms);
  } else {
    std::fprintf(out, "whole method: mixed (not timed)");
  }
  for (size_t u = 0; u < m.num_uniform; ++u) {
    const UniformAssignment& a = m.uniform[u];
    if (a.runs > 0) {
      std::fprintf(out, ", %s %.3g ms", a.backend, a.ms);
    } else {
      std::fprintf(out, ", %s %s", a.backend, a.reason);
    }
  }
  std::fprintf(out, " -> %s (%s)%s\n", m.chosen, m.reason,
               cached ? " (remembered: read from the selection cache)" : "");
}

}  // namespace

void print_delegates(const Method& method, bool explain, FILE* out, const ExecuteOptions& execute) {
  // The whole-method check is the same for every delegate: said once, before them.
  for (size_t i = 0; explain && i < method.num_delegates(); ++i) {
    const SelectionReport& r = method.delegate_info(i).selection;
    if (r.method.checked) {
      print_whole_method(r.method, r.cached, out);
      break;
    }
  }
  for (size_t i = 0; i < method.num_delegates(); ++i) {
    const DelegateInfo& d = method.delegate_info(i);
    std::fprintf(out, "delegate %s: %zu node(s) on '%s'", d.id, d.num_nodes, d.backend);
    if (std::string_view(d.backend) != d.requested_backend) {
      std::fprintf(out, " (compiled for '%s')", d.requested_backend);
    }
    std::fprintf(out, "\n");
    if (d.reason[0] != '\0') std::fprintf(out, "  why: %s\n", d.reason);
    const StartupReport& st = d.startup;
    if (st.backend[0] != '\0') {
      std::fprintf(out, "  startup: %llu execute(s) on '%s', %llu on '%s'; ",
                   static_cast<unsigned long long>(st.startup_executes), st.backend,
                   static_cast<unsigned long long>(st.target_executes), st.target);
      if (std::strcmp(st.state, "switched") == 0) {
        std::fprintf(out, "switched before execute %lld, %.1f ms after load (init %.1f ms)\n",
                     static_cast<long long>(st.switched_at_execute), st.switched_after_ms,
                     st.build_ms);
      } else if (std::strcmp(st.state, "failed") == 0) {
        std::fprintf(out, "'%s' init failed: %s\n", st.target, st.failure);
      } else {
        std::fprintf(out, "'%s' still initialising\n", st.target);
      }
    } else if (explain && st.reason[0] != '\0') {
      std::fprintf(out, "  startup backend %s\n", st.reason);
    }
    if (explain && d.selection.summary[0] != '\0') {
      std::fprintf(out, "  selection: %s%s\n", d.selection.summary,
                   d.selection.cached ? " (remembered: read from the selection cache)" : "");
      for (size_t c = 0; c < d.selection.num_candidates; ++c) {
        const SelectionCandidate& k = d.selection.candidates[c];
        if (!k.accepted) {
          std::fprintf(out, "    %s%s%s%s: %s\n", k.backend, k.options[0] ? " [" : "", k.options,
                       k.options[0] ? "]" : "", k.reason);
        }
      }
    }
    if (explain && d.options != nullptr) {
      for (size_t k = 0; k < d.options->size(); ++k) {
        PerCallOption p = per_call(d, k, execute);
        const char* key = d.options->spec(k).key;
        char source[96];
        format_option_source(p.source, p.option->origin(), source, sizeof source);
        const DerivedValue* derived = d.derived != nullptr ? d.derived->find(key) : nullptr;
        if (derived != nullptr) {
          std::fprintf(out, "  %-24s = %-16s (%s; requested %s, %s)\n", key, derived->value,
                       derived->reason, value_string(*p.option).c_str(), source);
        } else {
          std::fprintf(out, "  %-24s = %-16s (%s)\n", key, value_string(*p.option).c_str(), source);
        }
      }
      // Derived values that are not options (xnnpack's thread_pool).
      for (size_t k = 0; d.derived != nullptr && k < d.derived->size(); ++k) {
        const DerivedValue& v = (*d.derived)[k];
        if (d.options->find(v.key) < 0) {
          std::fprintf(out, "  %-24s = %-16s (derived: %s)\n", v.key, v.value, v.reason);
        }
      }
    }
  }
}

Json delegates_json(const Method& method, const ExecuteOptions& execute) {
  Json delegates = Json::array();
  for (size_t i = 0; i < method.num_delegates(); ++i) {
    const DelegateInfo& d = method.delegate_info(i);
    Json candidates = Json::array();
    for (size_t c = 0; c < d.selection.num_candidates; ++c) {
      const SelectionCandidate& k = d.selection.candidates[c];
      Json options = Json::object();
      if (const char* eq = std::strchr(k.options, '=')) {
        options[std::string(k.options, eq)] = eq + 1;
      }
      candidates.push_back({{"backend", k.backend},
                            {"options", std::move(options)},
                            {"median_ms", k.runs > 0 ? Json(k.median_ms) : Json(nullptr)},
                            {"runs", k.runs},
                            {"disturbed_runs", k.disturbed_runs},
                            {"init_ms", k.init_ms},
                            {"alone_init_ms", k.alone_init_ms},
                            {"accepted", k.accepted},
                            {"chosen", k.chosen},
                            {"reason", k.reason}});
    }
    Json whole = nullptr;
    if (d.selection.method.checked) {
      const MethodSelection& m = d.selection.method;
      Json uniform = Json::array();
      for (size_t u = 0; u < m.num_uniform; ++u) {
        const UniformAssignment& a = m.uniform[u];
        uniform.push_back({{"backend", a.backend},
                           {"ms", a.runs > 0 ? Json(a.ms) : Json(nullptr)},
                           {"runs", a.runs},
                           {"reason", a.reason}});
      }
      whole = {
          {"mixed_ms", m.mixed_ms},  {"mixed_runs", m.mixed_runs}, {"uniform", std::move(uniform)},
          {"chosen", m.chosen},      {"reason", m.reason},         {"budget_cut", m.budget_cut},
          {"reinit_ms", m.reinit_ms}};
    }
    Json options = Json::array();
    if (d.options != nullptr) {
      for (size_t k = 0; k < d.options->size(); ++k) {
        PerCallOption p = per_call(d, k, execute);
        Json o = {
            {"key", d.options->spec(k).key},
            {"value", value_string(*p.option)},
            {"source", option_level_name(p.source)},
            {"origin", p.option->origin().empty() ? Json(nullptr) : Json(p.option->origin())}};
        if (d.derived != nullptr) {
          if (const DerivedValue* derived = d.derived->find(d.options->spec(k).key)) {
            o["resolved"] = derived->value;
            o["reason"] = derived->reason;
          }
        }
        options.push_back(std::move(o));
      }
    }
    // Derived values that are not options (xnnpack's thread_pool).
    Json derived = Json::array();
    for (size_t k = 0; d.derived != nullptr && k < d.derived->size(); ++k) {
      const DerivedValue& v = (*d.derived)[k];
      if (d.options == nullptr || d.options->find(v.key) < 0) {
        derived.push_back({{"key", v.key}, {"value", v.value}, {"reason", v.reason}});
      }
    }
    Json startup = nullptr;
    if (d.startup.backend[0] != '\0') {
      const StartupReport& st = d.startup;
      Json executes = Json::object();
      executes[st.backend] = st.startup_executes;
      executes[st.target] = st.target_executes;
      startup = {{"backend", st.backend},
                 {"target", st.target},
                 {"state", st.state},
                 {"reason", st.reason},
                 {"executes", std::move(executes)},
                 {"switched_at_execute",
                  st.switched_at_execute >= 0 ? Json(st.switched_at_execute) : Json(nullptr)},
                 {"switched_after_ms",
                  st.switched_at_execute >= 0 ? Json(st.switched_after_ms) : Json(nullptr)},
                 {"build_ms", st.build_ms > 0 ? Json(st.build_ms) : Json(nullptr)},
                 {"failure", st.failure[0] != '\0' ? Json(st.failure) : Json(nullptr)}};
    }
    delegates.push_back({{"id", d.id},
                         {"backend", d.backend},
                         {"requested_backend", d.requested_backend},
                         {"nodes", d.num_nodes},
                         {"reason", d.reason},
                         {"execute_fallbacks", d.execute_fallbacks},
                         {"execute_fallback_reason", d.execute_fallback_reason},
                         {"selection",
                          {{"mode", d.selection.mode},
                           {"summary", d.selection.summary},
                           {"cached", d.selection.cached},
                           {"disturbed_measurements", d.selection.disturbed_measurements},
                           {"candidates", std::move(candidates)},
                           {"method", std::move(whole)}}},
                         {"startup", std::move(startup)},
                         {"startup_reason", d.startup.reason},
                         {"options", std::move(options)},
                         {"derived", std::move(derived)}});
  }
  return delegates;
}

void print_policy(const Method& method, FILE* out) {
  const PolicyDecision& p = method.policy();
  std::fprintf(out, "policy   %s (%s); threads %u (%s), workers %s%s\n", policy_name(p.effective),
               p.reason, p.threads, p.threads_reason,
               p.yield_workers ? "sleep between runs" : "spin between runs",
               p.expensive_load_transforms ? "" : ", no load-time-expensive transforms");
}

Json policy_json(const Method& method) {
  const PolicyDecision& p = method.policy();
  return {{"requested", policy_name(p.requested)},
          {"effective", policy_name(p.effective)},
          {"reason", p.reason},
          {"threads", p.threads},
          {"threads_reason", p.threads_reason},
          {"yield_workers", p.yield_workers},
          {"expensive_load_transforms", p.expensive_load_transforms}};
}

}  // namespace tessera::tools
