// The XNNPACK CPU backend, registered as "xnnpack" (Debian's XNNPACK 0.0~git20220216 subgraph
// API). Runs delegates whose payload is the portable graph IR; see supports.h for which ops,
// subgraph_builder.h for layouts and weights, options.h for its options.
#pragma once

#include <cstddef>

#include "tessera/backend/interface.h"
#include "tessera/backends/xnnpack/thread_pools.h"

namespace tessera::xnnpack {

class XnnpackBackend final : public BackendInterface {
 public:
  /// True once xnn_initialize succeeded (called once per process, thread-safe).
  bool is_available() const override;
  Span<const OptionSpec> option_schema() const override;
  const char* derivation_doc() const override;
  const char* build_id() const override;
  /// `op.node` is a const fb::Node* and `op.graph` the const fb::Graph* holding it (the
  /// compiler's in-memory IR is checked with xnnpack_supports() in supports.h).
  bool supports_op(const OpView& op) const override;
  std::string unsupported_reason(const OpView& op) const override;
  /// `payload` is an fb::Graph FlatBuffer; it is verified, used, and freed before returning.
  /// Errors: DelegateUnavailable, InvalidProgram (malformed payload), NotSupported (an op this
  /// XNNPACK cannot run), DelegateInvalidCompatibility (XNNPACK rejected the subgraph),
  /// MemoryAllocationFailed, and option errors.
  Result<DelegateHandle*> init(BackendInitContext& context, FreeableBuffer* payload,
                               Span<const CompileSpec> compile_specs) const override;
  Status execute(BackendExecutionContext& context, DelegateHandle* handle,
                 Span<EValue*> args) const override;
  void destroy(DelegateHandle* handle) const override;
  /// True: delegates run on pthreadpools (thread_pools.h). A method that also has onednn
  /// delegates keeps this pool and runs oneDNN's on one thread (onednn/threading.h).
  bool uses_cpu_thread_pool() const override;
  bool runs_on_calling_thread() const override { return true; }  // it joins its workers, busy
  // Its init: weight packing: no timing, no method allocator; its pools are locked.
  bool init_beside_other_backends() const override { return true; }
  /// Parks the workers of every pool of this backend (the process's and each Method's).
  void park_idle_workers() const override;
  /// A new global num_threads drops the shared pool: later loads create one of the new size;
  /// delegates already loaded keep theirs.
  Status set_option(BackendOptionContext& context, Span<const BackendOption> options) override;

  /// The pools of this backend instance.
  ThreadPools& pools() const { return pools_; }

 private:
  mutable ThreadPools pools_;
};

/// What a delegate was built into, for tests and tools. `handle` comes from init.
struct DelegateSummary {
  size_t threads = 1;          // workers of its pool (1: the calling thread)
  const void* pool = nullptr;  // identity of its pool (null: none)
  size_t runtimes = 0;         // XNNPACK runtimes (1 unless a layout change forced a split)
  size_t conversions = 0;      // layout conversions between runtimes
  size_t concats = 0;          // concatenation steps (no XNNPACK node for them here)
  size_t buffer_bytes = 0;     // the arena the delegate's buffers share (values, staging)
  size_t unshared_buffer_bytes = 0;  // the same buffers each in memory of its own
  uint32_t runtime_flags = 0;  // XNN_FLAG_* given to xnn_create_runtime_v2
  /// Its Method runs on more than one pool, so each execute ends by parking this pool's workers
  /// (thread_pools.h).
  bool parks_workers = false;
};
DelegateSummary summarize_delegate(const DelegateHandle* handle);

namespace internal {
/// Tests: the chunks XNNPACK's mid-size buffers take now (tessera/core/chunk_pool.h).
size_t pooled_chunks();
}  // namespace internal

}  // namespace tessera::xnnpack
