// Internal: recovery from a backend failing during execute (LoadOptions::on_execute_failure ==
// OnExecuteFailure::Fallback). At load, what re-initialising a delegate needs later is copied
// into the method allocator (the load options are only borrowed for the load); at execute, a
// failed delegate moves to the next backend of its fallback chain and runs once more.
#pragma once

#include <cstdint>
#include <string_view>

#include "tessera/backend/compile_spec.h"
#include "tessera/backend/context.h"
#include "tessera/core/span.h"
#include "tessera/core/status.h"
#include "tessera/runtime/delegate_runner.h"
#include "tessera/runtime/method_state.h"

namespace tessera {
class Program;
class ExecuteOptions;
class ProfileBuffer;
class ResolvedOptions;
class DerivedValues;
struct LoadOptions;
}  // namespace tessera

namespace tessera::internal {

struct RecoveryCandidate {
  char backend[32];
  ResolvedOptions* options;  // resolved at load, against that backend's schema
  DerivedValues* derived;
  bool compile_specs;  // the backend the program was compiled for: its specs apply
};

/// Everything a delegate needs to be initialised again, in the method allocator.
struct RecoveryPlan {
  const Program* program;  // a copy of the Program (it only views the loader's bytes)
  const fb::Method* method;
  const fb::Delegate* delegate;
  const CompileSpec* specs;
  uint32_t num_specs;
  CpuPoolBackends pools;  // names copied into the allocator
  const SymbolValue* symbols;
  uint32_t num_symbols;
  RecoveryCandidate* candidates;  // the fallback chain after the backend the delegate runs on
  uint32_t num_candidates;
  uint32_t next;  // the first candidate not tried yet
};

/// What initialising one delegate again needs; every pointer borrowed for the call.
struct DelegateSource {
  const Program* program;
  const fb::Method* method;
  const fb::Delegate* delegate;
  Span<const CompileSpec> specs;  // the delegate's compile specs (for its own backend only)
  CpuPoolBackends pools;          // the method's CPU pools as they will be
  Span<const SymbolValue> symbols;
};

/// Initialises `src.delegate` on backend `name` with the already resolved `options` once it is
/// registered, available and supports every node (`compile_specs`: src.specs apply). Touches no
/// step. On success `*backend` is the backend. Errors say why in words that name the backend
/// ("'onednn' is not available on this machine", "'xnnpack' init failed: ..."); `*fatal` as
/// init_on (no other backend should be tried).
Result<DelegateHandle*> init_delegate_on(MethodState* state, const DelegateSource& src,
                                         const char* name, bool compile_specs,
                                         ResolvedOptions* options, DerivedValues* derived,
                                         BackendInterface** backend, bool* fatal);

/// Makes `step` (and its DelegateInfo) run `handle` on `backend`, registered as `name`, with
/// `options` and `derived` (owned by the caller, must outlive the step). The handle the step had
/// is not destroyed: the caller owns it from now on.
void install_delegate(DelegateStep* step, const BackendInterface* backend, DelegateHandle* handle,
                      const char* name, const ResolvedOptions* options,
                      const DerivedValues* derived);

/// Builds `step`'s recovery plan from `remaining`, the backends after the one it was initialised
/// on. Resolves each one's options now (an option error fails the load, as at init).
/// Errors: MemoryAllocationFailed, option errors naming the delegate and backend.
Status make_recovery_plan(const Program& program, const fb::Method* method,
                          const fb::Delegate* delegate, Span<const std::string_view> remaining,
                          Span<const CompileSpec> specs, const LoadOptions& options,
                          const CpuPoolBackends& pools, MethodState* state,
                          Span<const SymbolValue> symbols, DelegateStep* step);

/// Called when `step` (instruction `instruction`) failed with `failure`: moves it to the next
/// candidate that is available, supports its ops and initialises, destroys the old handle, and
/// runs it once more. Returns the retry's status, or, when no candidate is left, `failure`
/// prefixed as execute does. Allocates only here, never on a call that does not fail.
Status recover_and_retry(MethodState* state, uint32_t instruction, DelegateStep* step,
                         const ExecuteOptions* options, ProfileBuffer* profile,
                         const Status& failure);

}  // namespace tessera::internal
