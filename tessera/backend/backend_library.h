// Backend libraries loaded at run time (plug-ins): load_backend_library, TESSERA_BACKEND_PATH, and
// the entry symbol that marks a shared library as a Tessera backend library.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/result.h"
#include "tessera/core/status.h"

namespace tessera {

/// The version of the interface between libtessera and backend libraries (BackendInterface, the
/// contexts, the registrar). Bumped when any of them changes incompatibly; a backend library
/// built for another version is refused by load_backend_library. 2: BackendInterface gained
/// virtual functions after 1 (variant_changes, park_idle_workers, runs_on_calling_thread,
/// init_beside_other_backends), which moved its vtable.
inline constexpr uint32_t kBackendAbiVersion = 2;

/// The symbol every backend library exports (TESSERA_DEFINE_BACKEND_LIBRARY): a function
/// returning the kBackendAbiVersion the library was built with.
inline constexpr const char* kBackendLibraryEntrySymbol = "tessera_backend_library_abi_version";

/// Loads the backend library at `path` (a shared library built against this Tessera, e.g.
/// libtessera_opencl.so or an application's own backend) and registers the backends its
/// TESSERA_REGISTER_BACKEND lines declare. Returns their names; empty if the library was already
/// loaded (linked into the program, or loaded before). All or nothing: on error no backend of the
/// library is registered. Thread-safe.
/// Errors: NotFound (no such file), InvalidArgument (empty path or a directory), AccessFailed (the
/// dynamic loader refused it: not a shared library, a missing dependency; its message follows),
/// NotSupported (not a Tessera backend library: no entry symbol, or it registers no backend),
/// DelegateInvalidCompatibility (built for another kBackendAbiVersion), AlreadyExists (a backend of
/// that name is registered already).
Result<std::vector<std::string>> load_backend_library(std::string_view path);

/// Loads every backend library (files named libtessera_<name>.so) in the directories of
/// `directories`, a ':'-separated list like TESSERA_BACKEND_PATH, in file-name order. Empty
/// entries are skipped. Tries every file; returns the first error (NotFound for a directory that
/// does not exist), or the names of the backends registered.
Result<std::vector<std::string>> load_backend_libraries(std::string_view directories);

/// The environment variable listing directories of backend libraries. They are loaded by the
/// first lookup in the registry (get_backend, registered_backends, loading a method); a library
/// that fails to load is logged as an error and skipped.
inline constexpr const char* kBackendPathVariable = "TESSERA_BACKEND_PATH";

}  // namespace tessera

/// Once in every backend library, at namespace scope of one of its .cpp files: exports the entry
/// symbol load_backend_library looks for. (Tessera's own backend libraries get it from
/// tessera/backend/backend_library_entry.cpp.) Weak, so that static archives of several backends
/// can be linked into one program.
#define TESSERA_DEFINE_BACKEND_LIBRARY()                           \
  extern "C" __attribute__((visibility("default"), weak)) uint32_t \
  tessera_backend_library_abi_version() {                          \
    return ::tessera::kBackendAbiVersion;                          \
  }
