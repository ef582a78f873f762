// Global (per backend) options and the backend lifecycle.
//
// Order an application follows:
//   1. register backends (static registration does this when the library loads);
//   2. set_option(backend, ...) for global values, including init-only ones (platform, device);
//   3. load Methods: each load takes a consistent snapshot of the global values; the backend's
//      first init creates its shared state and locks its init-only options;
//   4. afterwards set_option may still change other global options from any thread (they apply
//      to later loads, and the backend's set_option hook may apply them live); changing an
//      init-only option then fails with InvalidState.
#pragma once

#include <string_view>

#include "tessera/backend/lifecycle.h"
#include "tessera/backend/option_schema.h"
#include "tessera/backend/option_value.h"
#include "tessera/backend/resolved_options.h"
#include "tessera/core/result.h"
#include "tessera/core/span.h"
#include "tessera/core/status.h"

namespace tessera {

/// Sets global options of `backend`, all or nothing. Every option is validated at Global scope
/// first (errors as validate_option; OptionUnknownBackend for an unknown backend); then the
/// backend's set_option hook sees the accepted set and may reject it; then the values are
/// stored. Setting an init-only option to a value other than its locked one after the backend
/// initialised fails with InvalidState (setting the same value is a no-op). Thread-safe.
Status set_option(std::string_view backend, Span<const BackendOption> options,
                  Validation validation = Validation::Strict);

/// Fills each option's value (the keys are given) with the stored global value, or the schema
/// default if none was set, then lets the backend's get_option hook overwrite them. Errors:
/// OptionUnknownBackend, OptionUnknownKey (nothing is written then). Thread-safe.
Status get_option(std::string_view backend, Span<BackendOption> options);

/// Marks `backend` initialised: its init-only options are locked at their values in
/// `effective` (a delegate's resolved options), or at the global/default values if null.
/// `reason` appears in later InvalidState errors. Idempotent: the first call wins.
Status mark_backend_initialized(std::string_view backend, std::string_view reason,
                                const ResolvedOptions* effective = nullptr);

/// Where `backend` is in its lifecycle. NotFound for an unknown backend.
Result<BackendLifecycle> backend_lifecycle(std::string_view backend);

/// Forgets the global options of `backend` and returns it to Registered (unlocking init-only
/// options). For tests, and for applications that tore down every Method using the backend.
Status reset_backend_options(std::string_view backend);

}  // namespace tessera
