#include "tools/tessera-run/run_report.h"

#include <CLI/CLI.hpp>

#include <cstdlib>
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
#include "tools/common/json_writer.h"

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
  OptionSource source;
};

PerCallOption per_call(const DelegateInfo& d, size_t k, const ExecuteOptions& execute) {
  PerCallOption p{&d.options->option(k), d.options->source(k)};
  for (const BackendOption& e : execute.get_options(d.backend)) {
    if (e.key() == p.option->key()) p = {&e, OptionSource::Execute};
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
  app.add_option("--dim", dims, "NAME=VALUE for a symbolic dim (e.g. batch=4); repeatable");
  app.add_option("--fallback", fallback, "Comma-separated backends to try when a delegate's fails");
  app.add_option("--on-execute-failure", on_execute_failure,
                 "fail (default) or fallback: move a delegate whose backend fails while running "
                 "to the next backend of --fallback and retry it once");
  app.add_option("--retarget", retarget, "FROM=TO: run delegates compiled for FROM on TO");
  app.add_flag("--lenient-options", lenient, "Warn about and skip unknown option keys");
  app.add_flag("--list-options", list_options, "Print every registered backend's option schema");
  app.add_flag("--explain-options", explain_options,
               "Print each delegate's effective options, their sources and the values derived "
               "for options left at auto");
  app.add_option("--policy", policy,
                 "Load policy: auto (default), latency, balanced or power_saver; backends derive "
                 "the options left at auto from it");
  app.add_option("--select", select,
                 "How each delegate's backend is chosen: auto (default; as fixed until a "
                 "selection cache exists), fixed (the program's), or measure (every backend "
                 "that can take the delegate is run at load, checked against the program's "
                 "backend, and the fastest kept)");
  app.add_option("--select-candidates", select_candidates,
                 "With --select measure: the backends to try besides the program's "
                 "(comma-separated; default every available one)");
  app.add_option("--select-budget-ms", select_budget_ms,
                 "With --select measure: time per delegate for trying candidates (default 300)")
      ->check(CLI::Range(0.0, 1e9));
  app.add_option("--select-tolerance", select_tolerance,
                 "With --select measure: largest accepted output difference, relative to the "
                 "reference's max |value| (default 1e-4)")
      ->check(CLI::Range(0.0, 1.0));
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
    TESSERA_RETURN_IF_ERROR(parse_option_assignment(s, OptionScope::Global, validation, "--global-option", &parsed));
  }
  for (const std::string& s : load) {
    TESSERA_RETURN_IF_ERROR(parse_option_assignment(s, OptionScope::Load, validation, "--option", &parsed));
  }
  for (const std::string& s : delegate) {
    TESSERA_RETURN_IF_ERROR(parse_option_assignment(s, OptionScope::Delegate, validation, "--delegate-option", &parsed));
  }
  for (const std::string& s : execute) {
    TESSERA_RETURN_IF_ERROR(parse_option_assignment(s, OptionScope::Execute, validation, "--execute-option", &parsed));
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
  if (select_budget_ms >= 0) state->load_.selection_budget_ms = select_budget_ms;
  if (select_tolerance >= 0) state->load_.selection_tolerance = select_tolerance;
  TESSERA_RETURN_IF_ERROR(parsed.to_load_maps(&state->backend_options_, &state->delegate_options_));
  TESSERA_RETURN_IF_ERROR(parsed.to_execute_options(&state->execute_));
  TESSERA_RETURN_IF_ERROR(parsed.apply_global(validation));
  state->load_.backend_options = &state->backend_options_;
  state->load_.delegate_options = &state->delegate_options_;
  state->load_.lenient_options = lenient;
  return Status::ok();
}

void print_option_schemas(FILE* out) {
  for (const std::string& name : registered_backends()) {
    auto b = get_backend(name);
    if (!b.ok()) continue;
    if ((*b)->is_available()) {
      std::fprintf(out, "%s\n", name.c_str());
    } else {
      const char* why = (*b)->unavailable_reason();
      std::fprintf(out, "%s  (not available on this machine%s%s)\n", name.c_str(),
                   why && why[0] ? ": " : "", why && why[0] ? why : "");
    }
    Span<const OptionSpec> schema = (*b)->option_schema();
    if (schema.empty()) {
      std::fprintf(out, "  (no options)\n\n");
      continue;
    }
    std::fprintf(out, "  %-26s %-7s %-12s %-28s %-34s %s\n", "key", "type", "default", "range/choices", "scopes", "doc");
    for (const OptionSpec& s : schema) {
      char scopes[96];
      format_scopes(s.scopes, scopes, sizeof scopes);
      std::string sc = scopes;
      if (s.is_init_only) sc += " (init-only)";
      std::fprintf(out, "  %-26s %-7s %-12s %-28s %-34s %s\n", s.key, option_type_name(s.type),
                   spec_default(s).c_str(), spec_range(s).c_str(), sc.c_str(), s.doc);
    }
    std::fprintf(out, "\n");
  }
}

void print_delegates(const Method& method, bool explain, FILE* out, const ExecuteOptions& execute) {
  for (size_t i = 0; i < method.num_delegates(); ++i) {
    const DelegateInfo& d = method.delegate_info(i);
    std::fprintf(out, "delegate %s: %zu node(s) on '%s'", d.id, d.num_nodes, d.backend);
    if (std::string_view(d.backend) != d.requested_backend) {
      std::fprintf(out, " (compiled for '%s')", d.requested_backend);
    }
    std::fprintf(out, "\n");
    if (d.reason[0] != '\0') std::fprintf(out, "  why: %s\n", d.reason);
    if (explain && d.selection.summary[0] != '\0') {
      std::fprintf(out, "  selection: %s\n", d.selection.summary);
      for (size_t c = 0; c < d.selection.num_candidates; ++c) {
        const SelectionCandidate& k = d.selection.candidates[c];
        if (!k.accepted) std::fprintf(out, "    %s: %s\n", k.backend, k.reason);
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
    }
  }
}

void write_delegates_json(const Method& method, JsonWriter& w, const ExecuteOptions& execute) {
  w.begin_array();
  for (size_t i = 0; i < method.num_delegates(); ++i) {
    const DelegateInfo& d = method.delegate_info(i);
    w.begin_object();
    w.key("id").value(d.id);
    w.key("backend").value(d.backend);
    w.key("requested_backend").value(d.requested_backend);
    w.key("nodes").value(static_cast<long long>(d.num_nodes));
    w.key("reason").value(d.reason);
    w.key("execute_fallbacks").value(static_cast<long long>(d.execute_fallbacks));
    w.key("execute_fallback_reason").value(d.execute_fallback_reason);
    w.key("selection").begin_object();
    w.key("mode").value(d.selection.mode);
    w.key("cached").value(d.selection.cached);
    w.key("candidates").begin_array();
    for (size_t c = 0; c < d.selection.num_candidates; ++c) {
      const SelectionCandidate& k = d.selection.candidates[c];
      w.begin_object();
      w.key("backend").value(k.backend);
      if (k.runs > 0) {
        w.key("median_ms").value(k.median_ms);
      } else {
        w.key("median_ms").null();
      }
      w.key("runs").value(k.runs);
      w.key("accepted").value(k.accepted);
      w.key("chosen").value(k.chosen);
      w.key("reason").value(k.reason);
      w.end_object();
    }
    w.end_array();
    w.end_object();
    w.key("options").begin_array();
    if (d.options != nullptr) {
      for (size_t k = 0; k < d.options->size(); ++k) {
        PerCallOption p = per_call(d, k, execute);
        w.begin_object();
        w.key("key").value(d.options->spec(k).key);
        w.key("value").value(value_string(*p.option));
        w.key("source").value(option_source_name(p.source));
        if (p.option->origin().empty()) {
          w.key("origin").null();
        } else {
          w.key("origin").value(p.option->origin());
        }
        if (d.derived != nullptr) {
          if (const DerivedValue* derived = d.derived->find(d.options->spec(k).key)) {
            w.key("resolved").value(derived->value);
            w.key("reason").value(derived->reason);
          }
        }
        w.end_object();
      }
    }
    w.end_array();
    w.end_object();
  }
  w.end_array();
}

void print_policy(const Method& method, FILE* out) {
  const PolicyDecision& p = method.policy();
  std::fprintf(out, "policy   %s (%s); threads %u (%s), workers %s%s\n", policy_name(p.effective),
               p.reason, p.threads, p.threads_reason,
               p.yield_workers ? "sleep between runs" : "spin between runs",
               p.expensive_load_transforms ? "" : ", no load-time-expensive transforms");
}

void write_policy_json(const Method& method, JsonWriter& w) {
  const PolicyDecision& p = method.policy();
  w.begin_object();
  w.key("requested").value(policy_name(p.requested));
  w.key("effective").value(policy_name(p.effective));
  w.key("reason").value(p.reason);
  w.key("threads").value(static_cast<long long>(p.threads));
  w.key("threads_reason").value(p.threads_reason);
  w.key("yield_workers").value(p.yield_workers);
  w.key("expensive_load_transforms").value(p.expensive_load_transforms);
  w.end_object();
}

}  // namespace tessera::tools
