#include "tessera/backends/xnnpack/xnnpack_backend.h"

#include <dlfcn.h>
#include <malloc.h>
#include <sys/stat.h>
#include <xnnpack.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "tessera/backend/context.h"
#include "tessera/backend/device_info.h"
#include "tessera/backend/graph_payload.h"
#include "tessera/backend/registry.h"
#include "tessera/backends/xnnpack/delegate.h"
#include "tessera/backends/xnnpack/options.h"
#include "tessera/backends/xnnpack/subgraph_builder.h"
#include "tessera/backends/xnnpack/supports.h"
#include "tessera/core/chunk_pool.h"
#include "tessera/core/large_buffer.h"
#include "tessera/core/log.h"
#include "tessera/ir/schema.h"

namespace tessera::xnnpack {
namespace {

constexpr OptionSpec kSchema[] = {
    OptionSpec::integer(
        kNumThreads, 0, 0, 256, kInitScopes,
        "Worker threads, 0 = auto: derived from the load's policy (latency: the usable "
        "performance cores, fewer when other processes keep CPUs busy; power_saver: 1). "
        "Global: sizes one pool shared by delegates that do not override it (changes apply to "
        "later loads); load, delegate or compile spec: one pool of that size per Method, shared by "
        "its delegates"),
    OptionSpec::boolean(
        kYieldWorkers, false, kInitScopes,
        "XNN_FLAG_YIELD_WORKERS: pool workers yield to the OS after each run instead of "
        "spinning (saves power, slower wake-up). Left unset, derived from the load's policy: "
        "false under latency, true under balanced, power_saver or busy CPUs"),
    OptionSpec::boolean(
        kSparseInference, false, kInitScopes,
        "XNN_FLAG_HINT_SPARSE_INFERENCE: lets XNNPACK run NCHW sparse kernels where 1x1 "
        "convolution weights are mostly zeros; no effect on dense models"),
    OptionSpec::boolean(
        kFp16Inference, false, kInitScopes,
        "XNN_FLAG_HINT_FP16_INFERENCE: lets XNNPACK compute in IEEE fp16; this XNNPACK "
        "(2022-02) honours it only on CPUs with native fp16 arithmetic (Armv8.2), so x86 "
        "ignores it"),
    OptionSpec::boolean(
        kProfile, false, OptionLevel::Execute,
        "Report this call's per-operator timings through the execution context (events "
        "\"<op>:<node>\", plus input and output staging): this XNNPACK has no profiling API, so "
        "the call runs a twin of the delegate with one runtime per node, built on the first "
        "profiled call"),
};

// XNNPACK's memory: its aligned allocations (packed weights, runtime workspaces) from
// large_buffer_threshold() on are LargeBuffers, mapped for huge pages (ResNet-18's packed
// weights are written at init, one page fault per 2 MiB instead of per 4 KiB); from 64 KiB to
// 1 MiB, aligned or not (most packed weights, the indirection buffers its setup reallocates),
// they share the huge-page chunks of a ChunkPool; the rest comes from the heap as with XNNPACK's
// own allocator.
struct LargeAllocations {
  std::mutex mu;
  std::unordered_map<void*, LargeBuffer> buffers;
};
LargeAllocations& large_allocations() {
  static auto* all = new LargeAllocations();  // never destroyed: frees may come at exit
  return *all;
}
ChunkPool& chunk_pool() {
  static auto* pool = new ChunkPool();  // never destroyed, as large_allocations()
  return *pool;
}
// XNNPACK's unaligned allocations get the alignment malloc gives.
constexpr size_t kMallocAlignment = alignof(std::max_align_t);
void* xnn_alloc(void*, size_t size) {
  void* p = chunk_pool().allocate(size, kMallocAlignment);
  return p != nullptr ? p : std::malloc(size);
}
void* xnn_realloc(void*, void* pointer, size_t size) {
  ChunkPool& pool = chunk_pool();
  const size_t pooled = pointer != nullptr ? pool.size_of(pointer) : 0;
  void* moved = pool.allocate(size, kMallocAlignment);
  if (pooled == 0 && moved == nullptr) return std::realloc(pointer, size);  // the heap's alone
  if (moved == nullptr) moved = std::malloc(size);
  if (moved == nullptr) return nullptr;  // as realloc: `pointer` stays valid
  if (pointer != nullptr) {
    const size_t had = pooled != 0 ? pooled : malloc_usable_size(pointer);
    std::memcpy(moved, pointer, had < size ? had : size);
    if (!pool.free(pointer)) std::free(pointer);
  }
  return moved;
}
void xnn_free(void*, void* pointer) {
  if (!chunk_pool().free(pointer)) std::free(pointer);
}
void* xnn_aligned_alloc(void*, size_t alignment, size_t size) {
  if (size >= large_buffer_threshold()) {
    LargeBuffer b = LargeBuffer::allocate(size, alignment);
    void* p = b.data();
    if (p == nullptr) return nullptr;
    LargeAllocations& all = large_allocations();
    std::lock_guard<std::mutex> lock(all.mu);
    try {
      all.buffers.emplace(p, std::move(b));
    } catch (...) {
      return nullptr;  // b (if not moved) frees it
    }
    return p;
  }
  if (void* p = chunk_pool().allocate(size, alignment)) return p;
  // aligned_alloc wants a size that is a multiple of an alignment of at least a pointer's.
  const size_t align = alignment < sizeof(void*) ? sizeof(void*) : alignment;
  const size_t rounded = (size + align - 1) / align * align;
  return rounded < size ? nullptr : std::aligned_alloc(align, rounded == 0 ? align : rounded);
}
void xnn_aligned_free(void*, void* pointer) {
  if (pointer == nullptr || chunk_pool().free(pointer)) return;
  LargeBuffer large;
  {
    LargeAllocations& all = large_allocations();
    std::lock_guard<std::mutex> lock(all.mu);
    auto it = all.buffers.find(pointer);
    if (it != all.buffers.end()) {
      large = std::move(it->second);
      all.buffers.erase(it);
    }
  }
  if (large.data() == nullptr) std::free(pointer);  // else freed as `large` goes
}
constexpr xnn_allocator kAllocator = {nullptr,  xnn_alloc,         xnn_realloc,
                                      xnn_free, xnn_aligned_alloc, xnn_aligned_free};

xnn_status initialize_once() {
  // Where XNNPACK was initialised before (another library of the process), its allocator stays.
  static const xnn_status status = xnn_initialize(&kAllocator);
  return status;
}

Result<bool> read_bool(const BackendInitContext& context, const OptionKey<bool>& key) {
  return context.get(key);
}

}  // namespace

size_t internal::pooled_chunks() {
  return chunk_pool().chunks();
}

bool XnnpackBackend::is_available() const {
  return initialize_once() == xnn_status_success;
}

Span<const OptionSpec> XnnpackBackend::option_schema() const {
  return kSchema;
}

const char* XnnpackBackend::derivation_doc() const {
  return "`num_threads` = 0 takes the policy's thread count: under `latency` the physical "
         "performance cores in the process's affinity mask, bounded by its cgroup CPU quota; "
         "under `auto` the same, less the CPUs other processes keep busy (sampled at load); "
         "under `power_saver` 1. `yield_workers`, when not set at any scope, is false under "
         "`latency` and true under `balanced`, `power_saver`, or `auto` with busy CPUs. Both "
         "are reported as resolved values with the reason. The pool a delegate of more than "
         "one thread runs on is reported as the derived value `thread_pool`: `process` (global "
         "or default `num_threads`), `method` (set for the load, a delegate or by a compile "
         "spec: one pool per Method and size) or `own` (no Method given).";
}

const char* XnnpackBackend::build_id() const {
  // XNNPACK has no version call: the shared library's file (path, size, modification time)
  // identifies its build.
  static const std::string id = []() {
    Dl_info info{};
    struct stat st {};
    if (dladdr(reinterpret_cast<void*>(&xnn_initialize), &info) == 0 || info.dli_fname == nullptr ||
        ::stat(info.dli_fname, &st) != 0) {
      return std::string("XNNPACK (library file unknown)");
    }
    return std::string("XNNPACK ") + info.dli_fname + " " + std::to_string(st.st_size) + " " +
           std::to_string(static_cast<long long>(st.st_mtime));
  }();
  return id.c_str();
}

bool XnnpackBackend::supports_op(const OpView& op) const {
  if (op.node == nullptr || op.graph == nullptr) return false;
  return xnnpack_supports(*static_cast<const fb::Graph*>(op.graph),
                          *static_cast<const fb::Node*>(op.node));
}

std::string XnnpackBackend::unsupported_reason(const OpView& op) const {
  if (op.node == nullptr || op.graph == nullptr) return "no node";
  std::string why;
  if (xnnpack_supports(*static_cast<const fb::Graph*>(op.graph),
                       *static_cast<const fb::Node*>(op.node), &why)) {
    return std::string();
  }
  return why.empty() ? std::string("not supported") : why;
}

Result<DelegateHandle*> XnnpackBackend::init(BackendInitContext& context, FreeableBuffer* payload,
                                             Span<const CompileSpec>) const {
  if (!is_available()) {
    return Status::error(Error::DelegateUnavailable, "xnnpack: xnn_initialize failed (status %d)",
                         static_cast<int>(initialize_once()));
  }
  TESSERA_ASSIGN_OR_RETURN(const PayloadGraph view, PayloadGraph::make(context, payload));

  // Threads: the shared pool unless the delegate's value was chosen for it specifically.
  TESSERA_ASSIGN_OR_RETURN(int64_t threads, context.get(kNumThreads));
  const int index = context.options().find(kNumThreads.view());
  const OptionLevel source =
      index >= 0 ? context.options().source(static_cast<size_t>(index)) : OptionLevel::Default;
  const PolicyDecision& policy = context.policy();
  const size_t workers = threads > 0 ? static_cast<size_t>(threads) : policy.threads;
  if (threads == 0) {
    context.report_derived("num_threads", std::to_string(workers), "auto: %s",
                           policy.threads_reason);
  }
  BuildOptions build;
  // A value chosen for this load or delegate: the Method's pool of that size (thread_pools.h
  // says why not one per delegate).
  std::shared_ptr<MethodPools> method_pools = pools_.method(context.method_instance());
  const bool process_pool = source == OptionLevel::Default || source == OptionLevel::Global;
  if (process_pool) {
    TESSERA_ASSIGN_OR_RETURN(build.pool, pools_.shared(workers));
  } else {
    TESSERA_ASSIGN_OR_RETURN(build.pool, method_pools->sized(workers));
  }
  method_pools->note_use(build.pool);
  if (build.pool != nullptr) {
    const char* parked = method_pools->several()
                             ? "; the method also runs another pool, so each delegate's workers "
                               "are parked when it ends"
                             : "";
    if (process_pool) {
      context.report_derived(kThreadPoolReport, "process",
                             "the process's pool of %zu threads, shared by every xnnpack "
                             "delegate whose num_threads is global or default%s",
                             workers, parked);
    } else if (context.method_instance() != 0) {
      context.report_derived(kThreadPoolReport, "method",
                             "num_threads set (%s): the method's pool of %zu threads, shared by "
                             "its xnnpack delegates of that size%s",
                             option_level_name(source), workers, parked);
    } else {
      context.report_derived(kThreadPoolReport, "own",
                             "num_threads set (%s) and no method given: a pool of %zu threads "
                             "of its own",
                             option_level_name(source), workers);
    }
  }
  TESSERA_ASSIGN_OR_RETURN(bool yield, read_bool(context, kYieldWorkers));
  if (context.is_default(kYieldWorkers.view())) {
    yield = policy.yield_workers;
    context.report_derived("yield_workers", yield ? "true" : "false", "auto: %s",
                           yield ? "workers sleep between runs under this policy"
                                 : "workers spin between runs under this policy");
  }
  TESSERA_ASSIGN_OR_RETURN(bool sparse, read_bool(context, kSparseInference));
  TESSERA_ASSIGN_OR_RETURN(bool fp16, read_bool(context, kFp16Inference));
  build.runtime_flags = (yield ? XNN_FLAG_YIELD_WORKERS : 0u) |
                        (sparse ? XNN_FLAG_HINT_SPARSE_INFERENCE : 0u) |
                        (fp16 ? XNN_FLAG_HINT_FP16_INFERENCE : 0u);

  Result<std::unique_ptr<Delegate>> delegate = build_delegate(view, context, build);
  if (!delegate.ok()) return for_delegate(context, delegate.status());
  (*delegate)->method_pools = std::move(method_pools);
  TESSERA_ASSIGN_OR_RETURN(
      (*delegate)->recipe,
      make_per_node_recipe(view, payload->data(), payload->size(), context, build));
  payload->free();
  return to_handle(std::move(delegate).value().release());
}

Status XnnpackBackend::execute(BackendExecutionContext& context, DelegateHandle* handle,
                               Span<EValue*> args) const {
  if (handle == nullptr) return Status(Error::DelegateInvalidHandle, "xnnpack: null handle");
  return from_handle<Delegate>(handle)->execute(context, args);
}

void XnnpackBackend::destroy(DelegateHandle* handle) const {
  delete from_handle<Delegate>(handle);
}

bool XnnpackBackend::uses_cpu_thread_pool() const {
  return true;
}

void XnnpackBackend::park_idle_workers() const {
  for (const PoolPtr& pool : pools_.all()) park_workers(pool.get());
}

Status XnnpackBackend::set_option(BackendOptionContext&, Span<const BackendOption> options) {
  for (const BackendOption& o : options) {
    if (o.key() == kNumThreads.view()) pools_.reset_shared();
  }
  return Status::ok();
}

DelegateSummary summarize_delegate(const DelegateHandle* handle) {
  DelegateSummary s;
  if (handle == nullptr) return s;
  const auto* d = from_handle<Delegate>(const_cast<DelegateHandle*>(handle));
  s.threads = pool_threads(d->pool);
  s.pool = d->pool.get();
  s.runtimes = d->num_runtimes();
  s.conversions = d->num_conversions();
  s.concats = d->num_concats();
  s.buffer_bytes = d->buffer_bytes;
  s.unshared_buffer_bytes = d->unshared_buffer_bytes;
  s.runtime_flags = d->runtime_flags;
  s.parks_workers = d->method_pools != nullptr && d->method_pools->several();
  return s;
}

}  // namespace tessera::xnnpack

TESSERA_REGISTER_BACKEND("xnnpack", ::tessera::xnnpack::XnnpackBackend);
