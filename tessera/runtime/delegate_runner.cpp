#include "tessera/runtime/delegate_runner.h"

#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "tessera/backend/context.h"
#include "tessera/backend/execute_options.h"
#include "tessera/backend/registry.h"
#include "tessera/backend/resolution.h"
#include "tessera/core/log.h"
#include "tessera/core/trace.h"
#include "tessera/ir/op.h"
#include "tessera/runtime/delegate_recovery.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/program.h"
#include "tessera/runtime/startup_build.h"

namespace tessera::internal {
namespace {

constexpr size_t kMaxCandidates = LoadOptions::kMaxFallback + 1;
constexpr size_t kMaxSpecs = 64;

template <typename T>
uint32_t count(const flatbuffers::Vector<T>* v) {
  return v ? v->size() : 0;
}

void copy_str(char* dst, size_t cap, std::string_view src) {
  size_t n = src.size() < cap - 1 ? src.size() : cap - 1;
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

// Appends "; "-separated text to a DelegateInfo reason (truncates when full).
[[gnu::format(printf, 2, 3)]] void append_reason(DelegateInfo* info, const char* fmt, ...) {
  size_t len = std::strlen(info->reason);
  if (len + 3 >= sizeof info->reason) return;
  if (len) {
    std::memcpy(info->reason + len, "; ", 3);
    len += 2;
  }
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(info->reason + len, sizeof info->reason - len, fmt, args);
  va_end(args);
}

// The constants for a backend's init, which reads them whole (Program::constant_to_read), or,
// `peek`, for a query that may read a few bytes of them.
template <bool peek>
Result<Span<const uint8_t>> program_constant(void* ctx, uint32_t index) {
  const Program* p = static_cast<const Program*>(ctx);
  const int i = static_cast<int>(index);
  Span<const uint8_t> c = peek ? p->constant(i) : p->constant_to_read(i);
  if (c.data() == nullptr) {
    return Status::error(Error::NotFound, "program has no constant %u", index);
  }
  return c;
}

void release_program_constant(void* ctx, uint32_t index) {
  static_cast<const Program*>(ctx)->release_constant(static_cast<int>(index));
}

}  // namespace

Result<bool> ask_init_would_be_cold(const Program& program, const fb::Method* method,
                                    const fb::Delegate* d, const BackendInterface& b,
                                    Span<const CompileSpec> specs, ResolvedOptions* resolved,
                                    const MethodState& s, Span<const SymbolValue> symbols) {
  BackendInitContext::Params params;
  params.options = resolved;
  // OpenCL reads the weights' shapes; the query changes nothing, so nothing is released.
  params.constants = {program_constant<true>, const_cast<Program*>(&program), nullptr};
  params.method_name = method->name()->string_view();
  params.symbols = symbols;
  params.device_info = s.device;
  params.policy = s.policy;
  DerivedValues scratch;
  params.derived = &scratch;
  const BackendInitContext query(params);
  const FreeableBuffer payload(d->payload()->data(), d->payload()->size());
  return b.init_would_be_cold(query, payload, specs);
}

bool supports_all(const BackendInterface& backend, const fb::Graph* graph, char* missing,
                  size_t cap) {
  for (uint32_t i = 0; i < count(graph->nodes()); ++i) {
    const fb::Node* node = graph->nodes()->Get(i);
    OpView view{static_cast<int>(node->op()), node, graph};
    if (!backend.supports_op(view)) {
      std::snprintf(missing, cap, "op '%s' (node '%s')", ir::op_name(node->op()),
                    node->name() ? node->name()->c_str() : "");
      return false;
    }
  }
  return true;
}

namespace {

bool has_execute_keys(Span<const OptionSpec> schema) {
  for (const OptionSpec& s : schema) {
    if (s.allows(OptionLevel::Execute)) return true;
  }
  return false;
}

}  // namespace

Status check_method_options(const fb::Method* method, const LoadOptions& options) {
  const Validation validation = options.lenient_options ? Validation::Lenient : Validation::Strict;
  if (options.backend_options != nullptr) {
    TESSERA_RETURN_IF_ERROR(check_load_options(*options.backend_options, validation));
  }
  if (options.delegate_options != nullptr) {
    DelegateTarget targets[kMaxDelegatesPerMethod];
    const uint32_t n = count(method->delegates());
    if (n > kMaxDelegatesPerMethod) {
      return Status::error(Error::NotSupported, "method has %u delegates; at most %zu are supported",
                           n, kMaxDelegatesPerMethod);
    }
    for (uint32_t i = 0; i < n; ++i) {
      const fb::Delegate* d = method->delegates()->Get(i);
      targets[i] = {d->id()->string_view(), options.retarget_of(d->backend()->string_view())};
    }
    TESSERA_RETURN_IF_ERROR(
        check_delegate_options(*options.delegate_options, {targets, n}, validation));
  }
  for (size_t i = 0; i < options.fallback_size(); ++i) {
    auto b = get_backend(options.fallback(i));
    if (!b.ok()) return b.status().with_prefix("fallback chain");
  }
  if (!options.startup_backend().empty() && options.startup_backend() != "auto") {
    auto b = get_backend(options.startup_backend());
    if (!b.ok()) {
      return Status::error(Error::OptionUnknownBackend, "startup backend: %s",
                           b.status().message());
    }
  }
  for (size_t i = 0; i < options.selection_candidates_size(); ++i) {
    auto b = get_backend(options.selection_candidate(i));
    if (!b.ok()) return b.status().with_prefix("selection candidates");
  }
  TESSERA_RETURN_IF_ERROR(LoadOptions::check_selection_tolerance(options.selection_tolerance));
  TESSERA_RETURN_IF_ERROR(LoadOptions::check_selection_budget_ms(options.selection_budget_ms));
  TESSERA_RETURN_IF_ERROR(
      LoadOptions::check_selection_runs_per_load(options.selection_runs_per_load));
  return LoadOptions::check_selection_cache_max_kb(options.selection_cache_max_kb);
}

namespace {

// Counts one more delegate on `name` if that backend runs a CPU thread pool.
void add_pool_delegate(CpuPoolBackends* pools, std::string_view name) {
  for (size_t j = 0; j < pools->size; ++j) {
    if (pools->names[j] == name) {
      ++pools->delegates[j];
      return;
    }
  }
  if (pools->size == CpuPoolBackends::kMax) return;
  // An unknown backend fails its delegate's load later, with its own error.
  auto backend = get_backend(name);
  if (backend.ok() && (*backend)->uses_cpu_thread_pool()) {
    pools->names[pools->size] = name;
    pools->delegates[pools->size++] = 1;
  }
}

void remove_pool_delegate(CpuPoolBackends* pools, std::string_view name) {
  for (size_t j = 0; j < pools->size; ++j) {
    if (pools->names[j] != name) continue;
    if (--pools->delegates[j] == 0) {
      for (size_t k = j + 1; k < pools->size; ++k) {
        pools->names[k - 1] = pools->names[k];
        pools->delegates[k - 1] = pools->delegates[k];
      }
      --pools->size;
    }
    return;
  }
}

}  // namespace

CpuPoolBackends CpuPoolBackends::without(std::string_view backend) const {
  CpuPoolBackends others = *this;
  remove_pool_delegate(&others, backend);
  return others;
}

void CpuPoolBackends::move(std::string_view from, std::string_view to) {
  if (from == to) return;
  remove_pool_delegate(this, from);
  add_pool_delegate(this, to);
}

CpuPoolBackends cpu_pool_backends(const fb::Method* method, const LoadOptions& options) {
  CpuPoolBackends pools;
  for (uint32_t i = 0; i < count(method->delegates()); ++i) {
    add_pool_delegate(&pools,
                      options.retarget_of(method->delegates()->Get(i)->backend()->string_view()));
  }
  return pools;
}

Result<DelegateHandle*> init_on(const Program& program, const fb::Method* method,
                                const fb::Delegate* d, std::string_view name, BackendInterface* b,
                                Span<const CompileSpec> specs, const CpuPoolBackends& pools,
                                MethodState* s, Span<const SymbolValue> symbols,
                                ResolvedOptions* resolved, DerivedValues* derived, bool* fatal) {
  *fatal = false;
  // The other CPU pools of this method (the chosen backend's own excluded).
  std::string_view peers[CpuPoolBackends::kMax];
  size_t npeers = 0;
  if (b->uses_cpu_thread_pool()) {
    for (size_t p = 0; p < pools.size; ++p) {
      if (pools.names[p] != name) peers[npeers++] = pools.names[p];
    }
  }
  BackendInitContext::Params params;
  params.cpu_pool_peers = {peers, npeers};
  params.method_instance = s->instance;
  params.method_allocator = s->allocator;
  params.options = resolved;
  params.method_name = method->name()->string_view();
  params.symbols = symbols;
  params.constants = {program_constant<false>, const_cast<Program*>(&program),
                      release_program_constant};
  params.device_info = s->device;
  params.policy = s->policy;
  derived->clear();  // a failed candidate's reports do not carry over
  params.derived = derived;
  BackendInitContext ctx(params);
  FreeableBuffer payload(d->payload()->data(), d->payload()->size());
  Result<DelegateHandle*> handle = [&] {
    char detail[48];
    std::snprintf(detail, sizeof detail, "backend=%.*s", static_cast<int>(name.size()),
                  name.data());
    TraceSpan span("init", "init " + d->id()->str(), detail);
    return b->init(ctx, &payload, specs);
  }();
  if (!handle.ok()) return handle;
  // From the first successful init on, the backend's init-only options are locked.
  if (Status locked = ctx.mark_backend_initialized(); !locked.is_ok()) {
    b->destroy(*handle);
    *fatal = true;
    return locked.with_prefix(d->id()->c_str());
  }
  return handle;
}

Status load_delegate(const Program& program, const fb::Method* method, const fb::Instruction* ins,
                     const LoadOptions& options, const CpuPoolBackends& pools, MethodState* s,
                     DelegateStep* out) {
  MemoryAllocator& alloc = *s->allocator;
  const fb::Delegate* d = method->delegates()->Get(static_cast<uint32_t>(ins->delegate()));
  const fb::Graph* graph = d->payload_nested_root();
  const std::string_view requested = d->backend()->string_view();
  const Validation validation = options.lenient_options ? Validation::Lenient : Validation::Strict;

  DelegateInfo* info = alloc.make<DelegateInfo>();
  ResolvedOptions* resolved = alloc.make<ResolvedOptions>();
  DerivedValues* derived = alloc.make<DerivedValues>();
  const uint32_t nargs = count(ins->inputs()) + count(ins->outputs());
  EValue** args = alloc.allocate_array<EValue*>(nargs ? nargs : 1);
  SymbolValue* symbols = alloc.allocate_array<SymbolValue>(s->num_symbols ? s->num_symbols : 1);
  if (!info || !resolved || !derived || !args || !symbols) {
    return Status::error(Error::MemoryAllocationFailed,
                         "method allocator exhausted loading delegate '%s'", d->id()->c_str());
  }
  copy_str(info->id, sizeof info->id, d->id()->string_view());
  copy_str(info->requested_backend, sizeof info->requested_backend, requested);
  info->num_nodes = count(graph->nodes());
  for (uint32_t i = 0; i < count(ins->inputs()); ++i) args[i] = &s->values[ins->inputs()->Get(i)];
  for (uint32_t i = 0; i < count(ins->outputs()); ++i) {
    args[count(ins->inputs()) + i] = &s->values[ins->outputs()->Get(i)];
  }
  for (uint32_t i = 0; i < s->num_symbols; ++i) {
    symbols[i] = {method->symbols()->Get(i)->name()->string_view(), s->symbol_values[i]};
  }

  CompileSpec specs[kMaxSpecs];
  const uint32_t nspecs = count(d->compile_specs());
  if (nspecs > kMaxSpecs) {
    return Status::error(Error::NotSupported, "delegate '%s' has %u compile specs (max %zu)",
                         d->id()->c_str(), nspecs, kMaxSpecs);
  }
  for (uint32_t i = 0; i < nspecs; ++i) {
    specs[i] = {d->compile_specs()->Get(i)->key()->c_str(),
                d->compile_specs()->Get(i)->value()->c_str()};
  }

  // Candidates: the (possibly retargeted) backend, then the fallback chain.
  std::string_view candidates[kMaxCandidates];
  size_t ncand = 0;
  candidates[ncand++] = options.retarget_of(requested);
  if (candidates[0] != requested) {
    append_reason(info, "retargeted from '%.*s' to '%.*s' by the load options",
                  static_cast<int>(requested.size()), requested.data(),
                  static_cast<int>(candidates[0].size()), candidates[0].data());
  }
  // Measured selection: the fastest backend that matches the program's own replaces it (an
  // explicit retarget wins over measuring).
  const char* chosen_options = "";  // an option value the selection chose ("num_threads=1")
  KeptCandidate kept;               // the measured winner, initialised already
  if (options.selection != Selection::Fixed && candidates[0] == requested) {
    const int chosen =
        select_backend(program, method, ins, d, requested, {specs, nspecs}, options, pools, s,
                       {symbols, s->num_symbols}, {args, nargs}, info, &kept);
    if (kept.candidate != chosen) kept.reset();
    if (chosen >= 0) {
      candidates[0] = info->selection.candidates[chosen].backend;
      chosen_options = info->selection.candidates[chosen].options;
      if (candidates[0] != requested || chosen_options[0] != '\0') {
        append_reason(info, "%s", info->selection.summary);
      }
    }
  }
  for (size_t i = 0; i < options.fallback_size(); ++i) {
    bool dup = false;
    for (size_t j = 0; j < ncand; ++j) dup |= candidates[j] == options.fallback(i);
    if (!dup) candidates[ncand++] = options.fallback(i);
  }

  Status last_error;
  for (size_t c = 0; c < ncand; ++c) {
    const std::string_view name = candidates[c];
    const bool is_fallback = c > 0;
    auto backend = get_backend(name);
    if (!backend.ok()) {
      last_error = backend.status().with_prefix(d->id()->c_str());
      append_reason(info, "'%.*s': %s", static_cast<int>(name.size()), name.data(),
                    backend.status().message());
      if (!is_fallback && options.fallback_size() == 0) return last_error;
      continue;
    }
    BackendInterface* b = *backend;
    // A cold init (device code to build) runs in the background while a startup backend
    // serves the first executes. Asked before the backend's availability, which can itself
    // take seconds to probe (an OpenCL platform starting): the background init finds out.
    const bool adopt = c == 0 && kept.handle != nullptr && kept.backend == b;
    if (c == 0 && !options.startup_backend().empty() && !adopt) {
      Span<const CompileSpec> own_specs =
          name == requested ? Span<const CompileSpec>(specs, nspecs) : Span<const CompileSpec>();
      TESSERA_RETURN_IF_ERROR(resolve_options(name, *b, d->id()->string_view(), own_specs,
                                              options.backend_options, options.delegate_options,
                                              validation, resolved));
      if (chosen_options[0] != '\0') {
        TESSERA_RETURN_IF_ERROR(apply_selected_options(name, chosen_options, resolved));
      }
      StartupStart startup;
      TESSERA_RETURN_IF_ERROR(begin_startup(program, method, d, name, b, own_specs, options, pools,
                                            s, {symbols, s->num_symbols}, {args, nargs}, resolved,
                                            derived, info, &startup));
      if (startup.backend != nullptr) {
        copy_str(info->backend, sizeof info->backend, info->startup.backend);
        info->options = startup.options;
        info->derived = startup.derived;
        *out = DelegateStep{};
        out->backend = startup.backend;
        out->handle = startup.handle;
        out->args = args;
        out->num_args = nargs;
        out->info = info;
        out->options = startup.options;
        out->has_execute_keys = has_execute_keys(startup.backend->option_schema());
        out->startup = startup.build;
        ++s->startup_pending;
        if (options.on_execute_failure == OnExecuteFailure::Fallback) {
          Status st =
              make_recovery_plan(program, method, d, {candidates + 1, ncand - 1}, {specs, nspecs},
                                 options, pools, s, {symbols, s->num_symbols}, out);
          if (!st.is_ok()) {
            destroy_delegates_of_step(s, out);
            return st;
          }
        }
        return Status::ok();
      }
    }
    if (!b->is_available()) {
      const char* why = b->unavailable_reason();
      const bool has_why = why != nullptr && why[0] != '\0';
      last_error = Status::error(Error::DelegateUnavailable,
                                 "delegate '%s': backend '%.*s' is not available on this machine%s%s%s",
                                 d->id()->c_str(), static_cast<int>(name.size()), name.data(),
                                 has_why ? " (" : "", has_why ? why : "", has_why ? ")" : "");
      append_reason(info, "'%.*s' is not available on this machine%s%s%s",
                    static_cast<int>(name.size()), name.data(), has_why ? " (" : "",
                    has_why ? why : "", has_why ? ")" : "");
      continue;
    }
    if (name != requested) {
      char missing[128];
      if (!supports_all(*b, graph, missing, sizeof missing)) {
        last_error = Status::error(Error::DelegateInvalidCompatibility,
                                   "delegate '%s' cannot run on backend '%.*s': it does not "
                                   "support %s",
                                   d->id()->c_str(), static_cast<int>(name.size()), name.data(),
                                   missing);
        append_reason(info, "'%.*s' does not support %s", static_cast<int>(name.size()),
                      name.data(), missing);
        continue;
      }
    }
    // Compile specs belong to the backend the program was compiled for.
    Span<const CompileSpec> use_specs =
        name == requested ? Span<const CompileSpec>(specs, nspecs) : Span<const CompileSpec>();
    if (name != requested && nspecs > 0) {
      append_reason(info, "%u compile spec(s) for '%.*s' not applied on '%.*s'", nspecs,
                    static_cast<int>(requested.size()), requested.data(),
                    static_cast<int>(name.size()), name.data());
    }
    // Option errors are the application's mistake, not the device's: no fallback for them.
    TESSERA_RETURN_IF_ERROR(resolve_options(name, *b, d->id()->string_view(), use_specs,
                                            options.backend_options, options.delegate_options,
                                            validation, resolved));
    if (c == 0 && chosen_options[0] != '\0') {
      TESSERA_RETURN_IF_ERROR(apply_selected_options(name, chosen_options, resolved));
    }
    bool fatal = false;
    Result<DelegateHandle*> handle = [&]() -> Result<DelegateHandle*> {
      if (!adopt) {
        return init_on(program, method, d, name, b, use_specs, pools, s, {symbols, s->num_symbols},
                       resolved, derived, &fatal);
      }
      // The measurement initialised it with these very options: no second init.
      *resolved = *kept.options;
      *derived = *kept.derived;
      DelegateHandle* h = kept.handle;
      kept.handle = nullptr;
      kept.backend = nullptr;
      return h;
    }();
    if (fatal) return handle.status();
    if (!handle.ok()) {
      char prefix[96];
      std::snprintf(prefix, sizeof prefix, "delegate '%s' on '%.*s'", d->id()->c_str(),
                    static_cast<int>(name.size()), name.data());
      last_error = handle.status().with_prefix(prefix);
      append_reason(info, "'%.*s' init failed: %s", static_cast<int>(name.size()), name.data(),
                    handle.status().message());
      continue;
    }
    copy_str(info->backend, sizeof info->backend, name);
    info->options = resolved;
    info->derived = derived;
    *out = DelegateStep{};
    out->backend = b;
    out->handle = *handle;
    out->args = args;
    out->num_args = nargs;
    out->info = info;
    out->options = resolved;
    out->has_execute_keys = has_execute_keys(b->option_schema());
    if (options.on_execute_failure == OnExecuteFailure::Fallback) {
      Status st =
          make_recovery_plan(program, method, d, {candidates + c + 1, ncand - c - 1},
                             {specs, nspecs}, options, pools, s, {symbols, s->num_symbols}, out);
      if (!st.is_ok()) {
        destroy_delegate(out);
        return st;
      }
    }
    if (is_fallback || name != requested) {
      char moved[160];
      std::snprintf(moved, sizeof moved, "delegate '%s' (compiled for '%.*s') runs on '%s'",
                    info->id, static_cast<int>(requested.size()), requested.data(), info->backend);
      TESSERA_LOG_INFO("%s: %s", moved, info->reason);
    }
    return Status::ok();
  }
  if (options.fallback_size() > 0) {
    return Status::error(last_error.code(), "delegate '%s': no backend could run it (%s)",
                         d->id()->c_str(), info->reason);
  }
  return last_error;
}

void destroy_delegate(DelegateStep* step) {
  if (step->backend != nullptr && step->handle != nullptr) step->backend->destroy(step->handle);
  step->handle = nullptr;
}

void destroy_delegates_of_step(MethodState* s, DelegateStep* step) {
  join_startup(step->startup);
  destroy_delegate(step);
  if (step->startup != nullptr) {
    free_startup(step->startup);
    step->startup = nullptr;
    --s->startup_pending;
  }
}

void destroy_delegates(MethodState* s) {
  // Background inits end first (they may still use the program), then every handle goes, then
  // what the inits kept (a switched-to handle may use its build's allocator until destroyed).
  for (uint32_t i = 0; i < s->num_delegates; ++i) join_startup(s->delegates[i].startup);
  for (uint32_t i = 0; i < s->num_delegates; ++i) destroy_delegate(&s->delegates[i]);
  for (uint32_t i = 0; i < s->num_delegates; ++i) {
    free_startup(s->delegates[i].startup);
    s->delegates[i].startup = nullptr;
  }
}

bool apply_startup_switches(MethodState* s, bool wait, double timeout_ms) {
  if (s->startup_pending == 0) return true;
  const auto start = std::chrono::steady_clock::now();
  for (uint32_t i = 0; i < s->num_delegates; ++i) {
    double left = timeout_ms;
    if (wait && timeout_ms >= 0) {
      const double spent =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      left = timeout_ms > spent ? timeout_ms - spent : 0;
    }
    (void)poll_startup(s, &s->delegates[i], wait, left);
  }
  return s->startup_pending == 0;
}

Status run_steps(MethodState* s, const ExecuteOptions* options, ProfileBuffer* profile,
                 bool tracing);

Status execute_steps(MethodState* s, const ExecuteOptions* options, ProfileBuffer* profile) {
  // Delegates whose own backend finished initialising in the background move to it now,
  // before any step of this execute runs.
  if (s->startup_pending != 0) (void)apply_startup_switches(s, false, 0);
  if (options != nullptr && !options->empty()) {
    // Every backend named must run a delegate of this method: nothing is silently ignored.
    for (size_t i = 0; i < options->size(); ++i) {
      std::string_view b = options->backend_at(i);
      bool used = false;
      for (uint32_t k = 0; k < s->num_delegates && !used; ++k) {
        // A delegate with a startup backend runs on either of two backends, and moves from one
        // to the other between executes at a time the application does not choose: the same
        // execute options stay valid before and after the switch (or a failed build).
        const DelegateInfo& info = *s->delegates[k].info;
        const bool had_startup = info.startup.backend[0] != '\0';
        used = b == info.backend ||
               (had_startup && (b == info.startup.backend || b == info.startup.target));
      }
      if (!used) {
        return Status::error(Error::OptionUnknownBackend,
                             "execute options for backend '%.*s', but no delegate of method '%s' "
                             "runs on it",
                             static_cast<int>(b.size()), b.data(), s->method->name()->c_str());
      }
    }
  }
  const bool tracing = Trace::running();
  const double execute_start = tracing ? Trace::now_us() : 0;
  Status st = run_steps(s, options, profile, tracing);
  if (tracing) {
    Trace::record("execute", "execute " + s->method->name()->str(), execute_start,
                  Trace::now_us() - execute_start, st.is_ok() ? "" : st.message());
  }
  return st;
}

Status run_steps(MethodState* s, const ExecuteOptions* options, ProfileBuffer* profile,
                 bool tracing) {
  for (uint32_t i = 0; i < s->num_steps; ++i) {
    const Step& step = s->steps[i];
    const double step_start = tracing ? Trace::now_us() : 0;
    if (!step.is_delegate) {
      const KernelStep& k = s->kernels[step.index];
      Status st = portable::run_kernel(k.kernel, {k.inputs, k.num_inputs}, {k.outputs, k.num_outputs});
      if (tracing) {
        Trace::record("kernel", ir::op_name(k.node->op()), step_start, Trace::now_us() - step_start,
                      k.node->name() ? k.node->name()->string_view() : std::string_view());
      }
      if (!st.is_ok()) {
        char prefix[32];  // the kernel's message already names the op and the node
        std::snprintf(prefix, sizeof prefix, "instruction %u", i);
        return st.with_prefix(prefix);
      }
      continue;
    }
    DelegateStep& d = s->delegates[step.index];
    ExecuteOptionView view;
    if (options != nullptr && !options->empty()) {
      // Checks each option given for this backend (scope, type, range); none given is free.
      Status st = select_execute_options(*options, d.info->backend, d.options->schema(), &view);
      if (!st.is_ok()) return st.with_prefix(d.info->id);
    }
    BackendExecutionContext ctx(d.options, view, profile);
    ctx.set_delegate_id(d.info->id);
    Status st = d.backend->execute(ctx, d.handle, {d.args, d.num_args});
    if (tracing) {
      char detail[48];
      std::snprintf(detail, sizeof detail, "backend=%s", d.info->backend);
      Trace::record("delegate", d.info->id, step_start, Trace::now_us() - step_start, detail);
    }
    if (d.startup != nullptr && st.is_ok()) {
      StartupReport& r = d.info->startup;
      ++(r.switched_at_execute >= 0 ? r.target_executes : r.startup_executes);
    }
    if (!st.is_ok() && d.recovery != nullptr) {
      st = recover_and_retry(s, i, &d, options, profile, st);  // prefixes its own errors
      if (!st.is_ok()) return st;
    }
    if (!st.is_ok()) {
      char prefix[160];  // fits the longest id (63) and backend name (31)
      std::snprintf(prefix, sizeof prefix, "instruction %u (delegate '%s' on '%s')", i, d.info->id,
                    d.info->backend);
      return st.with_prefix(prefix);
    }
  }
  return Status::ok();
}

}  // namespace tessera::internal
