// The backend registry: backends by name ("xnnpack", "opencl", ...). Thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/backend/interface.h"
#include "tessera/backend/name_limits.h"
#include "tessera/core/result.h"
#include "tessera/core/status.h"

namespace tessera {

inline constexpr size_t kMaxBackends = 32;

/// Registers `backend` under `name`; the registry owns it. The name is 1 to 31 characters of
/// letters, digits, '_' and '-'. The backend's schema is checked (check_schema). Errors:
/// InvalidArgument (name or schema), AlreadyExists (name taken), MemoryAllocationFailed
/// (kMaxBackends reached). On error the backend is destroyed.
Status register_backend(std::string_view name, std::unique_ptr<BackendInterface> backend);

/// As above, but borrowed: `backend` must outlive its registration (until unregister_backend or
/// process exit). For an application's own configured instance.
Status register_backend(std::string_view name, BackendInterface* backend);

/// Removes a backend and its global options. NotFound if absent. Meant for tests and plug-in
/// unloading: the caller guarantees no Method still uses the backend.
Status unregister_backend(std::string_view name);

/// The backend registered as `name`. NotFound listing the registered names, with a
/// did-you-mean suggestion. The pointer stays valid while the backend is registered.
Result<BackendInterface*> get_backend(std::string_view name);

/// Registered names, sorted.
std::vector<std::string> registered_backends();

/// Registers a backend when constructed; used by TESSERA_REGISTER_BACKEND. A failure is logged
/// (no exception at static initialisation) and kept in status(). While load_backend_library
/// (tessera/backend/backend_library.h) loads a library, the registrars it runs only record
/// their backend; the loader registers it once the library passed its checks.
class BackendRegistrar {
 public:
  using Factory = std::unique_ptr<BackendInterface> (*)();

  /// `name` must be a string literal (or otherwise outlive the process); `factory` creates the
  /// backend when it is registered.
  BackendRegistrar(const char* name, Factory factory);
  BackendRegistrar(const char* name, std::unique_ptr<BackendInterface> backend);
  const Status& status() const { return status_; }

 private:
  Status status_;
};

}  // namespace tessera

/// At namespace scope in the backend's .cpp: TESSERA_REGISTER_BACKEND("xnnpack", XnnpackBackend);
/// registers a default-constructed instance when the library is loaded (linked, or loaded by
/// load_backend_library).
#define TESSERA_REGISTER_BACKEND(name, Class)                                                  \
  static ::tessera::BackendRegistrar TESSERA_CONCAT_(tessera_backend_registrar_, __COUNTER__)( \
      name,                                                                                    \
      []() -> std::unique_ptr<::tessera::BackendInterface> { return std::make_unique<Class>(); })
