// Option resolution: the effective options of one delegate, from every scope, lowest precedence
// first: schema default < compile spec < global < load (per backend) < delegate (per instance).
// Execute-scoped values are layered on per call by BackendExecutionContext.
#pragma once

#include <string>
#include <string_view>

#include "tessera/backend/compile_spec.h"
#include "tessera/backend/interface.h"
#include "tessera/backend/option_schema.h"
#include "tessera/backend/options_map.h"
#include "tessera/backend/resolved_options.h"
#include "tessera/core/span.h"
#include "tessera/core/status.h"

namespace tessera {

/// Resolves the options of delegate `delegate_id` run by `backend` (registered as
/// `backend_name`; global values are read from the registry's store in one consistent
/// snapshot). Every value is validated against the backend's schema at its scope before it is
/// stored; compile spec strings are parsed. Errors: as validate_option/parse_option_value
/// (unknown keys are skipped with a warning under Validation::Lenient); InvalidState if an
/// init-only option would differ from the value locked when the backend initialised.
/// @param load       per-backend load options; may be null
/// @param delegates  per-delegate load options, looked up by `delegate_id`; may be null
/// On error `*out` is unspecified.
Status resolve_options(std::string_view backend_name, const BackendInterface& backend,
                       std::string_view delegate_id, Span<const CompileSpec> compile_specs,
                       const LoadBackendOptionsMap* load, const DelegateOptionsMap* delegates,
                       Validation validation, ResolvedOptions* out);

/// Checks a whole LoadBackendOptionsMap once per load, including backends the Method does not
/// use: every backend must be registered (OptionUnknownBackend with a suggestion) and every
/// option valid at Load scope. Lenient mode warns about and skips unknown backends and keys.
Status check_load_options(const LoadBackendOptionsMap& load, Validation validation);

/// A delegate of the Method being loaded: its id and the backend that will run it.
struct DelegateTarget {
  std::string_view id;
  std::string_view backend;
};

/// Checks a DelegateOptionsMap once per load: every id must name one of `delegates` (NotFound
/// listing them, with a suggestion) and every option be valid at Delegate scope for that
/// delegate's backend. Lenient mode warns about and skips unknown ids and keys.
Status check_delegate_options(const DelegateOptionsMap& map, Span<const DelegateTarget> delegates,
                              Validation validation);

/// One line per option: "xnnpack#0  num_threads = 4  (load (--option))", the origin in
/// parentheses when the value has one. For tools (--explain-options).
std::string explain_options(const ResolvedOptions& options);

}  // namespace tessera
