// Internal: loading, running and destroying a Method's delegates, and the execute loop.
#pragma once

#include <cstddef>
#include <string_view>

#include "tessera/core/status.h"
#include "tessera/ir/schema.h"
#include "tessera/runtime/method_state.h"

namespace tessera {
class Program;
class ExecuteOptions;
class ProfileBuffer;
struct LoadOptions;
}  // namespace tessera

namespace tessera::internal {

/// The distinct backends, retargets applied, that a Method's delegates are initialised on and
/// that run CPU thread pools of their own (BackendInterface::uses_cpu_thread_pool). Names are
/// borrowed from the program and the LoadOptions.
struct CpuPoolBackends {
  static constexpr size_t kMax = 8;
  std::string_view names[kMax];
  size_t size = 0;
};
CpuPoolBackends cpu_pool_backends(const fb::Method* method, const LoadOptions& options);

/// Picks the backend for delegate instruction `ins` (retarget, fallback chain), resolves its
/// options, and initialises it into `*out`, telling it which other backends of `pools` share
/// the CPUs with it. On failure nothing stays initialised.
Status load_delegate(const Program& program, const fb::Method* method, const fb::Instruction* ins,
                     const LoadOptions& options, const CpuPoolBackends& pools, MethodState* state,
                     DelegateStep* out);

void destroy_delegate(DelegateStep* step);

/// Checks the load options that concern the whole method (load map, delegate map, fallback
/// chain) once, before any delegate is initialised.
Status check_method_options(const fb::Method* method, const LoadOptions& options);

/// Runs every step of the chain. `options` and `profile` may be null. No heap allocation.
Status execute_steps(MethodState* state, const ExecuteOptions* options, ProfileBuffer* profile);

/// Builds the value of method value `v` (resolved sizes, data in the arena or the constants).
Status make_value(const fb::Value* v, const Program& program, Span<const int64_t> symbols,
                  uint8_t* arena, EValue* out);

}  // namespace tessera::internal
