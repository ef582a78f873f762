// Internal: LoadOptions::startup_backend. A delegate whose backend would initialise cold
// (BackendInterface::init_would_be_cold) is initialised on a startup backend at load, while its
// own backend initialises on a background thread; execute moves it over once that is ready.
#pragma once

#include <cstdint>
#include <string_view>

#include "tessera/backend/compile_spec.h"
#include "tessera/backend/context.h"
#include "tessera/backend/interface.h"
#include "tessera/core/span.h"
#include "tessera/core/status.h"
#include "tessera/runtime/delegate_runner.h"
#include "tessera/runtime/method_state.h"

namespace tessera {
class Program;
class ResolvedOptions;
class DerivedValues;
struct LoadOptions;
}  // namespace tessera

namespace tessera::internal {

/// One background init (opaque outside startup_build.cpp). Owned by its DelegateStep.
struct StartupBuild;

/// What begin_startup started: the delegate on the startup backend, and the background init.
struct StartupStart {
  BackendInterface* backend = nullptr;  // null: no startup backend is used; init as usual
  DelegateHandle* handle = nullptr;
  ResolvedOptions* options = nullptr;  // the startup backend's, in the method allocator
  DerivedValues* derived = nullptr;
  StartupBuild* build = nullptr;
};

/// LoadOptions::startup_backend for delegate `d`, about to be initialised on `target` (registered
/// as `target_name`) with its options `target_options` already resolved. Resolves the startup
/// backend's options (an option error fails the load), then asks `target` whether its init would
/// be cold. If so, initialises the delegate on the startup backend and starts `target`'s init on
/// a background thread, which then runs the delegate once on scratch copies of `args` (its
/// inputs and outputs; the arena stays the Method thread's) before it counts as ready, filling
/// `*out`. Otherwise (warm, or the startup backend cannot take the
/// delegate) leaves `out->backend` null and says why in info->startup.reason.
Status begin_startup(const Program& program, const fb::Method* method, const fb::Delegate* d,
                     std::string_view target_name, BackendInterface* target,
                     Span<const CompileSpec> specs, const LoadOptions& options,
                     const CpuPoolBackends& pools, MethodState* state,
                     Span<const SymbolValue> symbols, Span<EValue*> args,
                     ResolvedOptions* target_options, DerivedValues* target_derived,
                     DelegateInfo* info, StartupStart* out);

/// Moves `step` to its background-initialised backend if that init has finished (with `wait`:
/// after waiting for it up to `timeout_ms`, < 0 = no limit), or records its failure. Call on the
/// Method's thread between executes. Returns true once nothing is pending for the step (the
/// call that finds it so decrements state->startup_pending).
bool poll_startup(MethodState* state, DelegateStep* step, bool wait, double timeout_ms);

/// Waits for the background init to end (it cannot be interrupted) and releases everything the
/// build holds, destroying a handle it made that was never switched to. Call after the step's
/// own handle is destroyed: a switched-to handle may keep memory of the build's allocator.
void join_startup(StartupBuild* build);
void free_startup(StartupBuild* build);

}  // namespace tessera::internal
