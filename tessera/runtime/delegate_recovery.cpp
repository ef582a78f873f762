#include "tessera/runtime/delegate_recovery.h"

#include <cstdio>
#include <cstring>
#include <new>

#include "tessera/backend/derived_values.h"
#include "tessera/backend/execute_options.h"
#include "tessera/backend/registry.h"
#include "tessera/backend/resolution.h"
#include "tessera/backend/resolved_options.h"
#include "tessera/core/log.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/on_execute_failure.h"
#include "tessera/runtime/program.h"

namespace tessera {

const char* on_execute_failure_name(OnExecuteFailure value) {
  return value == OnExecuteFailure::Fallback ? "fallback" : "fail";
}

Result<OnExecuteFailure> parse_on_execute_failure(std::string_view name) {
  for (OnExecuteFailure v : {OnExecuteFailure::Fail, OnExecuteFailure::Fallback}) {
    if (name == on_execute_failure_name(v)) return v;
  }
  return Status::error(Error::InvalidArgument,
                       "unknown on_execute_failure '%.*s' (expected fail or fallback)",
                       static_cast<int>(name.size() > 64 ? 64 : name.size()), name.data());
}

}  // namespace tessera

namespace tessera::internal {
namespace {

void copy_str(char* dst, size_t cap, std::string_view src) {
  size_t n = src.size() < cap - 1 ? src.size() : cap - 1;
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

// Appends "; "-separated text to `dst` (truncates when full).
void append(char* dst, size_t cap, const char* text) {
  size_t len = std::strlen(dst);
  if (len + 3 >= cap) return;
  if (len) {
    std::memcpy(dst + len, "; ", 3);
    len += 2;
  }
  copy_str(dst + len, cap - len, text);
}

Status no_memory(const fb::Delegate* d) {
  return Status::error(Error::MemoryAllocationFailed,
                       "method allocator exhausted preparing delegate '%s' for "
                       "on_execute_failure=fallback",
                       d->id()->c_str());
}

}  // namespace

Status make_recovery_plan(const Program& program, const fb::Method* method,
                          const fb::Delegate* delegate, Span<const std::string_view> remaining,
                          Span<const CompileSpec> specs, const LoadOptions& options,
                          const CpuPoolBackends& pools, MethodState* s,
                          Span<const SymbolValue> symbols, DelegateStep* step) {
  MemoryAllocator& alloc = *s->allocator;
  RecoveryPlan* plan = alloc.make<RecoveryPlan>();
  if (plan == nullptr) return no_memory(delegate);
  *plan = RecoveryPlan{};
  plan->program = alloc.make<Program>(program);
  if (plan->program == nullptr) return no_memory(delegate);
  plan->method = method;
  plan->delegate = delegate;
  // Compile spec keys and values point into the program file: the array is all to copy.
  if (!specs.empty()) {
    CompileSpec* copy = alloc.allocate_array<CompileSpec>(specs.size());
    if (copy == nullptr) return no_memory(delegate);
    for (size_t i = 0; i < specs.size(); ++i) new (&copy[i]) CompileSpec(specs[i]);
    plan->specs = copy;
    plan->num_specs = static_cast<uint32_t>(specs.size());
  }
  // Pool names may point into the LoadOptions (retargets), which the Method does not keep.
  for (size_t i = 0; i < pools.size; ++i) {
    char* name = alloc.allocate_array<char>(pools.names[i].size() + 1);
    if (name == nullptr) return no_memory(delegate);
    copy_str(name, pools.names[i].size() + 1, pools.names[i]);
    plan->pools.names[plan->pools.size] = std::string_view(name, pools.names[i].size());
    plan->pools.delegates[plan->pools.size++] = pools.delegates[i];
  }
  plan->symbols = symbols.data();
  plan->num_symbols = static_cast<uint32_t>(symbols.size());
  plan->candidates =
      alloc.allocate_array<RecoveryCandidate>(remaining.empty() ? 1 : remaining.size());
  if (plan->candidates == nullptr) return no_memory(delegate);
  const Validation validation = options.lenient_options ? Validation::Lenient : Validation::Strict;
  const std::string_view requested = delegate->backend()->string_view();
  for (std::string_view name : remaining) {
    RecoveryCandidate& c = plan->candidates[plan->num_candidates];
    c = RecoveryCandidate{};
    copy_str(c.backend, sizeof c.backend, name);
    c.compile_specs = name == requested;
    c.options = alloc.make<ResolvedOptions>();
    c.derived = alloc.make<DerivedValues>();
    if (c.options == nullptr || c.derived == nullptr) return no_memory(delegate);
    // check_method_options already found every fallback backend registered.
    Result<BackendInterface*> b = get_backend(name);
    if (!b.ok()) return b.status().with_prefix(delegate->id()->c_str());
    Status st =
        resolve_options(name, **b, delegate->id()->string_view(),
                        c.compile_specs ? Span<const CompileSpec>(plan->specs, plan->num_specs)
                                        : Span<const CompileSpec>(),
                        options.backend_options, options.delegate_options, validation, c.options);
    if (!st.is_ok()) {
      char prefix[160];
      std::snprintf(prefix, sizeof prefix, "on_execute_failure=fallback: delegate '%s' on '%.*s'",
                    delegate->id()->c_str(), static_cast<int>(name.size()), name.data());
      return st.with_prefix(prefix);
    }
    ++plan->num_candidates;
  }
  step->recovery = plan;
  return Status::ok();
}

Result<DelegateHandle*> init_delegate_on(MethodState* s, const DelegateSource& src,
                                         const char* name, bool compile_specs,
                                         ResolvedOptions* options, DerivedValues* derived,
                                         BackendInterface** backend, bool* fatal) {
  *fatal = false;
  Result<BackendInterface*> found = get_backend(name);
  if (!found.ok()) {
    return Status::error(found.status().code(), "'%s': %s", name, found.status().message());
  }
  BackendInterface* b = *found;
  if (!b->is_available()) {
    return Status::error(Error::DelegateUnavailable, "'%s' is not available on this machine", name);
  }
  char missing[128];
  if (!supports_all(*b, src.delegate->payload_nested_root(), missing, sizeof missing)) {
    return Status::error(Error::DelegateInvalidCompatibility, "'%s' does not support %s", name,
                         missing);
  }
  Result<DelegateHandle*> handle = init_on(*src.program, src.method, src.delegate, name, b,
                                           compile_specs ? src.specs : Span<const CompileSpec>(),
                                           src.pools, s, src.symbols, options, derived, fatal);
  if (!handle.ok()) {
    return Status::error(handle.status().code(), "'%s' init failed: %s", name,
                         handle.status().message());
  }
  *backend = b;
  return handle;
}

void install_delegate(DelegateStep* step, const BackendInterface* backend, DelegateHandle* handle,
                      const char* name, const ResolvedOptions* options,
                      const DerivedValues* derived) {
  step->backend = backend;
  step->handle = handle;
  step->options = options;
  step->has_execute_keys = false;
  for (const OptionSpec& spec : backend->option_schema()) {
    step->has_execute_keys |= spec.allows(OptionLevel::Execute);
  }
  copy_str(step->info->backend, sizeof step->info->backend, name);
  step->info->options = options;
  step->info->derived = derived;
}

Status recover_and_retry(MethodState* s, uint32_t instruction, DelegateStep* step,
                         const ExecuteOptions* options, ProfileBuffer* profile,
                         const Status& failure) {
  RecoveryPlan* plan = step->recovery;
  DelegateInfo* info = step->info;
  const fb::Delegate* d = plan->delegate;
  char failed_on[sizeof info->backend];
  copy_str(failed_on, sizeof failed_on, info->backend);
  char why[sizeof info->execute_fallback_reason];
  std::snprintf(why, sizeof why, "'%s' execute failed: %s", failed_on, failure.message());

  const DelegateSource src{plan->program,
                           plan->method,
                           d,
                           {plan->specs, plan->num_specs},
                           plan->pools,
                           {plan->symbols, plan->num_symbols}};
  while (plan->next < plan->num_candidates) {
    RecoveryCandidate& c = plan->candidates[plan->next++];
    char note[256];
    BackendInterface* b = nullptr;
    bool fatal = false;
    Result<DelegateHandle*> handle =
        init_delegate_on(s, src, c.backend, c.compile_specs, c.options, c.derived, &b, &fatal);
    if (!handle.ok()) {
      append(why, sizeof why, handle.status().message());
      if (fatal) break;
      continue;
    }
    // The new backend takes the delegate; the old handle goes.
    destroy_delegate(step);
    install_delegate(step, b, *handle, c.backend, c.options, c.derived);
    ++info->execute_fallbacks;
    std::snprintf(note, sizeof note, "moved to '%s' and retried", c.backend);
    append(why, sizeof why, note);
    copy_str(info->execute_fallback_reason, sizeof info->execute_fallback_reason, why);
    append(info->reason, sizeof info->reason, why);
    TESSERA_LOG_WARNING("delegate '%s': %s", info->id, why);

    ExecuteOptionView view;
    if (options != nullptr && !options->empty()) {
      Status st = select_execute_options(*options, info->backend, step->options->schema(), &view);
      if (!st.is_ok()) return st.with_prefix(info->id);
    }
    BackendExecutionContext ctx(step->options, view, profile);
    ctx.set_delegate_id(info->id);
    Status st = b->execute(ctx, step->handle, {step->args, step->num_args});
    if (!st.is_ok()) {
      char prefix[224];
      std::snprintf(prefix, sizeof prefix,
                    "instruction %u (delegate '%s' on '%s', retried after '%s' failed)",
                    instruction, info->id, info->backend, failed_on);
      return st.with_prefix(prefix);
    }
    return Status::ok();
  }
  // Nothing could take it: the original error, and why each candidate was passed over.
  copy_str(info->execute_fallback_reason, sizeof info->execute_fallback_reason, why);
  char prefix[200];
  std::snprintf(prefix, sizeof prefix,
                "instruction %u (delegate '%s' on '%s'; no fallback backend left)", instruction,
                info->id, failed_on);
  return failure.with_prefix(prefix);
}

}  // namespace tessera::internal
