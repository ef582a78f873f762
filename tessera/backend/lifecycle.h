// BackendLifecycle: registered -> configured (global options set) -> initialised (shared state
// created; init-only options are locked from then on).
#pragma once

#include <cstdint>

namespace tessera {

enum class BackendLifecycle : uint8_t { Registered, Configured, Initialized };

/// Lower-case name: "registered", "configured", "initialized".
const char* backend_lifecycle_name(BackendLifecycle state);

}  // namespace tessera
