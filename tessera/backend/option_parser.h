// String front ends for options (tools and applications): "backend.key=value" assignments, the
// TESSERA_OPTIONS environment variable and TOML files. Values are typed and validated by the
// registered backend's schema; errors give the source, line and column:
//   options.toml:3:14: xnnpack: option 'num_threads' expects int, got string "four"
//   TESSERA_OPTIONS:1:23: opencl: option 'device_type' = 'tpu' is not one of: cpu, gpu
// Every parsed option carries its origin (BackendOption::origin): the source name for flags and
// variables ("--option", "TESSERA_OPTIONS"), the file and line for TOML ("options.toml:3"), so
// reports can say which front end set a value.
// Heap use is fine here: this is configuration, not the execute path.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tessera/backend/execute_options.h"
#include "tessera/backend/option_schema.h"
#include "tessera/backend/option_value.h"
#include "tessera/backend/options_map.h"
#include "tessera/core/status.h"

namespace tessera {

/// Options for one target: a backend name, or a delegate id for the delegate scope.
struct ParsedOptionList {
  std::string target;
  std::vector<BackendOption> options;  // distinct keys; a later value replaced an earlier one
};

/// Options collected from front ends, by scope. Merging several sources in order (file, then
/// environment, then flags) lets later ones override earlier ones key by key.
struct ParsedOptions {
  std::vector<ParsedOptionList> global;
  std::vector<ParsedOptionList> load;
  std::vector<ParsedOptionList> delegate;  // by delegate id ("xnnpack#0")
  std::vector<ParsedOptionList> execute;

  bool empty() const;
  /// Adds (or replaces) one option of `target` at `scope` (Global, Load, Delegate or Execute).
  void add(OptionLevel scope, std::string_view target, const BackendOption& option);
  /// Merges `later` into this; its values win.
  void merge(const ParsedOptions& later);

  /// Calls set_option(backend, ...) for every global list, after validating all of them first
  /// so a bad value in one backend's list changes nothing. Each backend's set is atomic; a
  /// later backend's hook veto or init-only lock can still stop after earlier backends applied.
  Status apply_global(Validation validation = Validation::Strict) const;
  /// Copies the load lists into `out` (errors: capacity, as LoadBackendOptionsMap).
  Status to_load_map(LoadBackendOptionsMap* out) const;
  Status to_delegate_map(DelegateOptionsMap* out) const;
  /// Both of the above.
  Status to_load_maps(LoadBackendOptionsMap* load, DelegateOptionsMap* delegates) const;
  /// Copies the execute lists into `out`, checked against the schemas at execute scope.
  Status to_execute_options(ExecuteOptions* out) const;
};

/// Parses one "backend.key=value" (or "<delegate id>.key=value") at `scope` into `out`. At Load
/// scope a target containing '#' ("xnnpack#0") is a delegate id and goes to the delegate scope.
/// `source` names the input in error messages ("--option", "TESSERA_OPTIONS") and is the
/// option's origin label (its end, if longer than kMaxOptionOriginLength).
/// Errors: OptionParseError (syntax), OptionUnknownBackend, and the validate_option errors;
/// unknown backends and keys warn and are skipped under Validation::Lenient. On error `out` is
/// unchanged.
Status parse_option_assignment(std::string_view text, OptionLevel scope, Validation validation,
                               std::string_view source, ParsedOptions* out);

/// Parses a ';'-separated list of assignments (the TESSERA_OPTIONS syntax). A value may be
/// double-quoted to contain ';'. Empty entries are ignored. All or nothing.
Status parse_option_list(std::string_view text, OptionLevel scope, Validation validation,
                         std::string_view source, ParsedOptions* out);

/// Parses `value`, the text of the TESSERA_OPTIONS variable, as a load-scope list (errors say
/// "TESSERA_OPTIONS:1:<col>").
Status parse_options_env(std::string_view value, Validation validation, ParsedOptions* out);

/// Reads environment variable `variable` and parses it like parse_options_env; unset or empty
/// is not an error.
Status parse_options_from_environment(Validation validation, ParsedOptions* out,
                                      const char* variable = "TESSERA_OPTIONS");

/// Parses TOML text with tables [global.<backend>], [load.<backend>], [delegate."<id>"] and
/// [execute.<backend>]. TOML types must match the schema (an integer is accepted for a double
/// option; an enum is a string naming a choice). `source_name` prefixes error positions; each
/// option's origin is "<source_name>:<line of its key>". All or nothing.
Status parse_options_toml(std::string_view text, std::string_view source_name,
                          Validation validation, ParsedOptions* out);

/// Reads and parses a TOML file; NotFound/AccessFailed if it cannot be read.
Status parse_options_file(const std::string& path, Validation validation, ParsedOptions* out);

}  // namespace tessera
