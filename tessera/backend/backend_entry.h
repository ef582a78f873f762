// Internal: the registry's record of one backend, shared by the registry, the global option
// store and option resolution. Not part of the public API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "tessera/backend/interface.h"
#include "tessera/backend/lifecycle.h"
#include "tessera/backend/name_limits.h"
#include "tessera/backend/option_schema.h"
#include "tessera/backend/option_value.h"
#include "tessera/backend/registry.h"
#include "tessera/backend/resolved_options.h"

namespace tessera::detail {

struct BackendEntry {
  std::string_view name() const { return {name_storage, name_length}; }

  char name_storage[kMaxBackendNameLength + 1] = {};
  size_t name_length = 0;
  BackendInterface* backend = nullptr;
  std::unique_ptr<BackendInterface> owned;
  Span<const OptionSpec> schema;  // cached at registration

  // Guards everything below. Held while a backend's set_option/get_option hook runs and while a
  // load copies the global values, so each load sees all of one set_option call or none of it.
  std::mutex mutex;
  BackendLifecycle lifecycle = BackendLifecycle::Registered;
  uint64_t version = 0;  // incremented by every successful set_option
  size_t num_globals = 0;
  BackendOption globals[kMaxSchemaOptions];
  char lock_reason[160] = {};
  size_t num_locked = 0;
  BackendOption locked[kMaxSchemaOptions];             // init-only values at the time of locking
  OptionLevel locked_source[kMaxSchemaOptions] = {};   // where each locked value came from
};

/// A registration recorded while load_backend_library loads a library: `factory` or `instance`.
struct StagedBackend {
  const char* name;
  BackendRegistrar::Factory factory;
  std::unique_ptr<BackendInterface> instance;
};

/// From now on, BackendRegistrar objects constructed on this thread append to `staging` instead
/// of registering (nullptr: register again). Returns the previous value. For the loader.
std::vector<StagedBackend>* stage_registrations(std::vector<StagedBackend>* staging);

/// Defined beside the portable backend's registrar (portable_backend.cpp) and called by the
/// registry, so that a program linking a static libtessera.a keeps that object, and the
/// registrar with it, without linking the archive whole.
void portable_backend_linked();

/// Loads the libraries of TESSERA_BACKEND_PATH the first time it is called (backend_library.cpp).
/// Called by every registry lookup; does nothing when called again, or from inside that loading.
void load_backend_path_once();

/// The entry for `name`, or null. Keeps the entry alive even if unregistered meanwhile.
std::shared_ptr<BackendEntry> find_backend_entry(std::string_view name);

/// "unknown backend 'xnnpak' (did you mean 'xnnpack'?; registered: ...)" with `code`.
Status unknown_backend_status(std::string_view name, Error code);

/// The locked value of init-only key `key`, or null; its source in `*source` if not null.
/// Caller holds entry.mutex.
const BackendOption* locked_value(const BackendEntry& entry, std::string_view key,
                                  OptionLevel* source = nullptr);

/// The InvalidState error for changing init-only `spec` to `requested` after locking. Caller
/// holds entry.mutex.
Status init_only_locked_status(const BackendEntry& entry, const OptionSpec& spec,
                               const BackendOption& requested, const char* where);

}  // namespace tessera::detail
