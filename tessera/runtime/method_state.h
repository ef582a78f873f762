// Internal layout of a loaded Method. Everything lives in the method allocator.
#pragma once

#include <cstdint>

#include "tessera/backend/policy.h"
#include "tessera/core/evalue.h"
#include "tessera/core/memory_manager.h"
#include "tessera/kernels/portable/kernel.h"
#include "tessera/runtime/delegate_info.h"

namespace tessera {
class BackendInterface;
class ResolvedOptions;
struct DelegateHandle;
}  // namespace tessera

namespace tessera::internal {

struct RecoveryPlan;  // delegate_recovery.h
struct StartupBuild;  // startup_build.h

struct KernelStep {
  portable::PreparedKernel kernel;
  const Tensor* const* inputs;
  Tensor* const* outputs;
  uint32_t num_inputs;
  uint32_t num_outputs;
  const fb::Node* node;
};

struct DelegateStep {
  const BackendInterface* backend;
  DelegateHandle* handle;
  EValue** args;  // inputs then outputs
  uint32_t num_args;
  DelegateInfo* info;
  const ResolvedOptions* options;
  bool has_execute_keys;  // the backend's schema declares execute-scoped keys
  RecoveryPlan* recovery;  // on_execute_failure == Fallback only; else null
  /// LoadOptions::startup_backend: the delegate's own backend initialising in the background
  /// while `backend` is the startup backend; heap-owned (free_startup); else null.
  StartupBuild* startup;
};

struct Step {
  bool is_delegate;
  uint32_t index;  // into kernels or delegates
};

struct MethodState {
  const fb::Method* method;
  MemoryAllocator* allocator;
  EValue* values;
  uint32_t num_values;
  Step* steps;
  uint32_t num_steps;
  KernelStep* kernels;
  uint32_t num_kernels;
  DelegateStep* delegates;
  uint32_t num_delegates;
  int64_t* symbol_values;
  uint32_t num_symbols;
  uint8_t* arena;
  uint64_t arena_size;
  PolicyDecision* policy;    // decided once for the load
  const DeviceInfo* device;  // the machine it was decided on (null: DeviceInfo::get())
  uint64_t program_hash;     // hash64 of the program's bytes, once the selection cache needs it
  bool has_program_hash;
  uint32_t startup_pending;  // delegates whose background init is not handled yet
  uint64_t instance;         // BackendInitContext::method_instance of this load (never 0)
};

}  // namespace tessera::internal
