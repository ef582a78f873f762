#include "tessera/runtime/startup_build.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tessera/backend/derived_values.h"
#include "tessera/backend/registry.h"
#include "tessera/backend/resolution.h"
#include "tessera/backend/resolved_options.h"
#include "tessera/core/heap_allocator.h"
#include "tessera/core/log.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/program.h"

namespace tessera::internal {

using Clock = std::chrono::steady_clock;

enum class BuildState : int { Building, Ready, Failed };

struct StartupBuild {
  // Copies of what the background init reads: the load's options and the Program object are
  // borrowed only for the load. The program's bytes, method, delegate and the resolved options
  // live as long as the Method.
  std::unique_ptr<Program> program;
  const fb::Method* method = nullptr;
  const fb::Delegate* delegate = nullptr;
  std::string name;
  BackendInterface* backend = nullptr;
  std::vector<CompileSpec> specs;
  std::vector<std::string> pool_names;
  CpuPoolBackends pools;
  Span<const SymbolValue> symbols;
  ResolvedOptions* options = nullptr;
  DerivedValues* derived = nullptr;
  // The delegate's arguments for a warm-up run before the switch: tensors in the arena get
  // buffers of their own (the Method's thread uses the arena meanwhile); constants and other
  // values are shared read-only.
  std::vector<EValue> warmup_values;
  std::vector<EValue*> warmup_args;
  std::vector<std::vector<uint8_t>> warmup_buffers;
  // The thread's own allocator (the method allocator is not shared between threads), kept
  // until the handle it served is destroyed.
  std::unique_ptr<HeapMemoryAllocator> allocator;
  MethodState thread_state{};  // the Method's, with `allocator`

  std::thread thread;
  Clock::time_point started;
  std::mutex mutex;
  std::condition_variable done;
  std::atomic<BuildState> state{BuildState::Building};
  // Written by the thread before `state` leaves Building.
  DelegateHandle* handle = nullptr;
  double build_ms = 0;
  char error[256] = {};

  // The Method's thread only.
  bool handled = false;  // switched, or the failure recorded
  bool switched = false;
};

namespace {

void copy_str(char* dst, size_t cap, std::string_view src) {
  size_t n = src.size() < cap - 1 ? src.size() : cap - 1;
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

// Appends "; "-separated text to a DelegateInfo reason (truncates when full).
void append_reason(DelegateInfo* info, const char* text) {
  size_t len = std::strlen(info->reason);
  if (len + 3 >= sizeof info->reason) return;
  if (len) {
    std::memcpy(info->reason + len, "; ", 3);
    len += 2;
  }
  copy_str(info->reason + len, sizeof info->reason - len, text);
}

// How much lower than the load's thread the background init runs (Linux nice levels): the
// executes the startup backend serves meanwhile get the CPUs first.
constexpr int kBackgroundNice = 5;

void run_build(StartupBuild* b) {
  // Per thread on Linux; threads the init starts (a driver's compiler workers) inherit it.
  // Best effort: where it is not allowed the init runs at the load's priority.
  errno = 0;
  const int current = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
  if (errno == 0) {
    (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), current + kBackgroundNice);
  }
  bool fatal = false;
  Span<const CompileSpec> specs(b->specs.data(), b->specs.size());
  Result<DelegateHandle*> handle =
      init_on(*b->program, b->method, b->delegate, b->name, b->backend, specs, b->pools,
              &b->thread_state, b->symbols, b->options, b->derived, &fatal);
  if (handle.ok()) {
    // One run on scratch arguments, so that the first execute after the switch pays no
    // first-run costs (a driver compiling kernels at their first launch) and a backend that
    // cannot run the delegate is found before the switch.
    BackendExecutionContext ctx(b->options);
    ctx.set_delegate_id(b->delegate->id()->c_str());
    Status warm = b->backend->execute(ctx, *handle, {b->warmup_args.data(), b->warmup_args.size()});
    if (!warm.is_ok()) {
      b->backend->destroy(*handle);
      handle = warm.with_prefix("warm-up run");
    }
  }
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - b->started).count();
  std::lock_guard<std::mutex> lock(b->mutex);
  b->build_ms = ms;
  if (handle.ok()) {
    b->handle = *handle;
    b->state.store(BuildState::Ready, std::memory_order_release);
  } else {
    copy_str(b->error, sizeof b->error, handle.status().message());
    b->state.store(BuildState::Failed, std::memory_order_release);
  }
  b->done.notify_all();
}

// The CPU backends `auto` tries when no measured selection names one, in order.
constexpr const char* kAutoPreference[] = {"onednn", "xnnpack", "portable"};

// Whether `name` can run delegate `d` now; if not, why in `why`.
bool can_run(std::string_view name, const fb::Delegate* d, BackendInterface** out, char* why,
             size_t cap) {
  Result<BackendInterface*> b = get_backend(name);
  if (!b.ok()) {
    std::snprintf(why, cap, "%s", b.status().message());
    return false;
  }
  if (!(*b)->is_available()) {
    std::snprintf(why, cap, "'%.*s' is not available on this machine",
                  static_cast<int>(name.size()), name.data());
    return false;
  }
  char missing[128];
  if (!supports_all(**b, d->payload_nested_root(), missing, sizeof missing)) {
    std::snprintf(why, cap, "'%.*s' does not support %s", static_cast<int>(name.size()),
                  name.data(), missing);
    return false;
  }
  *out = *b;
  return true;
}

}  // namespace

Status begin_startup(const Program& program, const fb::Method* method, const fb::Delegate* d,
                     std::string_view target_name, BackendInterface* target,
                     Span<const CompileSpec> specs, const LoadOptions& options,
                     const CpuPoolBackends& pools, MethodState* s, Span<const SymbolValue> symbols,
                     Span<EValue*> args, ResolvedOptions* target_options,
                     DerivedValues* target_derived, DelegateInfo* info, StartupStart* out) {
  *out = StartupStart{};
  StartupReport& report = info->startup;
  const std::string_view requested = options.startup_backend();
  const bool is_auto = requested == "auto";

  // Which backend: the one named, or under auto the fastest CPU backend a measured selection
  // of this delegate accepted, else the first of the fixed preference that can run it.
  char chosen[LoadOptions::kMaxName] = {};
  char why[256] = {};
  BackendInterface* startup = nullptr;
  if (!is_auto) {
    copy_str(chosen, sizeof chosen, requested);
    if (requested == target_name) {
      std::snprintf(report.reason, sizeof report.reason,
                    "not used: the startup backend is the delegate's own backend");
      return Status::ok();
    }
    if (!can_run(requested, d, &startup, why, sizeof why)) startup = nullptr;
  } else {
    const SelectionCandidate* best = nullptr;
    for (size_t i = 0; i < info->selection.num_candidates; ++i) {
      const SelectionCandidate& c = info->selection.candidates[i];
      if (!c.accepted || c.options[0] != '\0' || target_name == c.backend) continue;
      if (best == nullptr || c.median_ms < best->median_ms) best = &c;
    }
    BackendInterface* b = nullptr;
    if (best != nullptr && can_run(best->backend, d, &b, why, sizeof why)) {
      startup = b;
      copy_str(chosen, sizeof chosen, best->backend);
      std::snprintf(report.reason, sizeof report.reason,
                    "auto: the fastest other backend of the delegate's measured selection "
                    "(%.3g ms)",
                    best->median_ms);
    } else {
      std::string tried;
      for (const char* name : kAutoPreference) {
        if (target_name == name) continue;
        char no[160] = {};
        if (can_run(name, d, &b, no, sizeof no)) {
          startup = b;
          copy_str(chosen, sizeof chosen, name);
          const std::string text = "auto: the first of onednn, xnnpack, portable that can run it" +
                                   (tried.empty() ? std::string() : " (" + tried + ")");
          copy_str(report.reason, sizeof report.reason, text);
          break;
        }
        tried += tried.empty() ? "" : "; ";
        tried += no;
      }
      if (startup == nullptr) {
        std::snprintf(why, sizeof why, "auto: no CPU backend can run it (%s)", tried.c_str());
      }
    }
  }

  // The startup backend's options, checked whether or not it ends up used: global and load
  // scopes only (delegate options are for the delegate's own backend).
  ResolvedOptions* startup_options = nullptr;
  if (startup != nullptr) {
    startup_options = s->allocator->make<ResolvedOptions>();
    if (startup_options == nullptr) {
      return Status::error(Error::MemoryAllocationFailed,
                           "method allocator exhausted loading delegate '%s'", d->id()->c_str());
    }
    const Validation validation =
        options.lenient_options ? Validation::Lenient : Validation::Strict;
    Status st = resolve_options(chosen, *startup, d->id()->string_view(), {},
                                options.backend_options, nullptr, validation, startup_options);
    if (!st.is_ok()) {
      char prefix[128];
      std::snprintf(prefix, sizeof prefix, "delegate '%s': startup backend '%s'", d->id()->c_str(),
                    chosen);
      return st.with_prefix(prefix);
    }
  }

  // Would the delegate's own init be cold? The query sees the same context as init.
  Result<bool> cold =
      ask_init_would_be_cold(program, method, d, *target, specs, target_options, *s, symbols);
  if (!cold.ok()) {
    // The init reports the same problem with its own error (and the fallback chain applies).
    std::snprintf(report.reason, sizeof report.reason, "not used: '%.*s' cannot tell: %.100s",
                  static_cast<int>(target_name.size()), target_name.data(),
                  cold.status().message());
    return Status::ok();
  }
  if (!*cold) {
    std::snprintf(report.reason, sizeof report.reason,
                  "not used: '%.*s' has nothing to build at init (warm)",
                  static_cast<int>(target_name.size()), target_name.data());
    return Status::ok();
  }
  if (startup == nullptr) {
    TESSERA_LOG_WARNING(
        "delegate '%s': startup backend %s cannot run it (%s); initialising '%.*s' "
        "now",
        d->id()->c_str(), is_auto ? "auto" : chosen, why, static_cast<int>(target_name.size()),
        target_name.data());
    std::snprintf(report.reason, sizeof report.reason, "not used: %.140s", why);
    return Status::ok();
  }

  DerivedValues* startup_derived = s->allocator->make<DerivedValues>();
  if (startup_derived == nullptr) {
    return Status::error(Error::MemoryAllocationFailed,
                         "method allocator exhausted loading delegate '%s'", d->id()->c_str());
  }
  bool fatal = false;
  Result<DelegateHandle*> handle = init_on(program, method, d, chosen, startup, {}, pools, s,
                                           symbols, startup_options, startup_derived, &fatal);
  if (fatal) return handle.status();
  if (!handle.ok()) {
    TESSERA_LOG_WARNING(
        "delegate '%s': startup backend '%s' init failed (%s); initialising '%.*s' "
        "now",
        d->id()->c_str(), chosen, handle.status().message(), static_cast<int>(target_name.size()),
        target_name.data());
    std::snprintf(report.reason, sizeof report.reason, "not used: '%s' init failed: %.100s", chosen,
                  handle.status().message());
    return Status::ok();
  }

  // The background init.
  auto build = std::make_unique<StartupBuild>();
  build->program = std::make_unique<Program>(program);
  build->method = method;
  build->delegate = d;
  build->name = std::string(target_name);
  build->backend = target;
  build->specs.assign(specs.begin(), specs.end());
  build->pool_names.reserve(pools.size);
  for (size_t i = 0; i < pools.size; ++i) build->pool_names.emplace_back(pools.names[i]);
  for (const std::string& n : build->pool_names) {
    build->pools.names[build->pools.size] = n;
    build->pools.delegates[build->pools.size] = pools.delegates[build->pools.size];
    ++build->pools.size;
  }
  build->symbols = symbols;
  build->options = target_options;
  build->derived = target_derived;
  build->allocator = std::make_unique<HeapMemoryAllocator>();
  build->thread_state = *s;
  build->thread_state.allocator = build->allocator.get();
  const uint8_t* arena_begin = s->arena;
  const uint8_t* arena_end = s->arena + s->arena_size;
  build->warmup_values.reserve(args.size());
  for (EValue* arg : args) {
    build->warmup_values.push_back(*arg);
    EValue& copy = build->warmup_values.back();
    if (!copy.is_tensor()) continue;
    Tensor& t = copy.to_tensor();
    const auto* data = static_cast<const uint8_t*>(t.data());
    if (data == nullptr || t.nbytes() == 0 || data < arena_begin || data >= arena_end) continue;
    build->warmup_buffers.emplace_back(t.nbytes(), uint8_t{0});
    Tensor own(t.dtype(), t.sizes(), build->warmup_buffers.back().data());
    if (!t.is_default_dim_order()) (void)own.set_dim_order(t.dim_order());
    copy = EValue(own);
  }
  for (EValue& v : build->warmup_values) build->warmup_args.push_back(&v);
  build->started = Clock::now();
  StartupBuild* raw = build.get();
  try {
    build->thread = std::thread(run_build, raw);
  } catch (const std::system_error& e) {
    startup->destroy(*handle);
    TESSERA_LOG_WARNING(
        "delegate '%s': no thread for the background init (%s); initialising "
        "'%.*s' now",
        d->id()->c_str(), e.what(), static_cast<int>(target_name.size()), target_name.data());
    std::snprintf(report.reason, sizeof report.reason, "not used: no thread: %.120s", e.what());
    return Status::ok();
  }

  copy_str(report.backend, sizeof report.backend, chosen);
  copy_str(report.target, sizeof report.target, target_name);
  copy_str(report.state, sizeof report.state, "building");
  out->backend = startup;
  out->handle = *handle;
  out->options = startup_options;
  out->derived = startup_derived;
  out->build = build.release();
  char note[160];
  std::snprintf(note, sizeof note,
                "runs on startup backend '%s' while '%.*s' initialises in the "
                "background",
                chosen, static_cast<int>(target_name.size()), target_name.data());
  append_reason(info, note);
  TESSERA_LOG_INFO("delegate '%s': %s", d->id()->c_str(), note);
  return Status::ok();
}

bool poll_startup(MethodState* s, DelegateStep* step, bool wait, double timeout_ms) {
  StartupBuild* b = step->startup;
  if (b == nullptr || b->handled) return true;
  if (b->state.load(std::memory_order_acquire) == BuildState::Building) {
    if (!wait) return false;
    std::unique_lock<std::mutex> lock(b->mutex);
    auto finished = [b] {
      return b->state.load(std::memory_order_acquire) != BuildState::Building;
    };
    if (timeout_ms < 0) {
      b->done.wait(lock, finished);
    } else if (!b->done.wait_for(lock, std::chrono::duration<double, std::milli>(timeout_ms),
                                 finished)) {
      return false;
    }
  }
  // Finished: the thread is returning, so the join is short.
  if (b->thread.joinable()) b->thread.join();
  b->handled = true;
  --s->startup_pending;
  DelegateInfo* info = step->info;
  StartupReport& report = info->startup;
  report.build_ms = b->build_ms;
  char note[400];
  if (b->state.load(std::memory_order_acquire) == BuildState::Ready) {
    destroy_delegate(step);  // the startup backend's handle
    step->backend = b->backend;
    step->handle = b->handle;
    step->options = b->options;
    step->has_execute_keys = false;
    for (const OptionSpec& spec : b->backend->option_schema()) {
      step->has_execute_keys |= spec.allows(OptionLevel::Execute);
    }
    b->switched = true;
    copy_str(info->backend, sizeof info->backend, b->name);
    info->options = b->options;
    info->derived = b->derived;
    copy_str(report.state, sizeof report.state, "switched");
    report.switched_at_execute = static_cast<int64_t>(report.startup_executes);
    report.switched_after_ms =
        std::chrono::duration<double, std::milli>(Clock::now() - b->started).count();
    std::snprintf(note, sizeof note,
                  "moved to '%s' after %llu execute(s) on '%s' (its init took %.0f ms)",
                  b->name.c_str(), static_cast<unsigned long long>(report.startup_executes),
                  report.backend, b->build_ms);
    append_reason(info, note);
    TESSERA_LOG_INFO("delegate '%s': %s", info->id, note);
  } else {
    copy_str(report.state, sizeof report.state, "failed");
    copy_str(report.failure, sizeof report.failure, b->error);
    std::snprintf(note, sizeof note, "background init on '%s' failed, stays on '%s': %.300s",
                  b->name.c_str(), report.backend, b->error);
    append_reason(info, note);
    TESSERA_LOG_WARNING("delegate '%s': %s", info->id, note);
  }
  return true;
}

void join_startup(StartupBuild* b) {
  if (b != nullptr && b->thread.joinable()) b->thread.join();
}

void free_startup(StartupBuild* b) {
  if (b == nullptr) return;
  join_startup(b);
  if (!b->switched && b->handle != nullptr) b->backend->destroy(b->handle);
  delete b;
}

}  // namespace tessera::internal
