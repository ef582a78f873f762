// The oneDNN CPU backend, registered as "onednn" (Debian's oneDNN 2.6, OpenMP runtime). Runs
// delegates whose payload is the portable graph IR; see supports.h for which ops,
// graph_builder.h for layouts, weights and fusions, options.h for its options.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

#include "tessera/backend/interface.h"

namespace tessera::onednn {

class OnednnBackend final : public BackendInterface {
 public:
  /// True when oneDNN sees a CPU engine. Does not fix oneDNN's ISA.
  bool is_available() const override;
  Span<const OptionSpec> option_schema() const override;
  const char* derivation_doc() const override;
  const char* build_id() const override;
  Span<const SelectionVariant> selection_variants() const override;
  bool variant_changes(const DelegateHandle* handle, std::string_view key,
                       std::string_view value) const override;
  /// `op.node` is a const fb::Node* and `op.graph` the const fb::Graph* holding it.
  bool supports_op(const OpView& op) const override;
  std::string unsupported_reason(const OpView& op) const override;
  /// `payload` is an fb::Graph FlatBuffer; it is verified, lowered, and freed before returning.
  /// The first init applies max_cpu_isa (oneDNN fixes it once per process) and marks the backend
  /// initialised. Errors: InvalidProgram (malformed payload), NotSupported (an op this backend
  /// does not lower; precision=bf16 without native bf16, naming the missing feature),
  /// InvalidState (max_cpu_isa differs from the one oneDNN already fixed),
  /// DelegateInvalidCompatibility (oneDNN refused a primitive), and option errors.
  Result<DelegateHandle*> init(BackendInitContext& context, FreeableBuffer* payload,
                               Span<const CompileSpec> compile_specs) const override;
  Status execute(BackendExecutionContext& context, DelegateHandle* handle,
                 Span<EValue*> args) const override;
  void destroy(DelegateHandle* handle) const override;
  /// True: primitives run on an OpenMP team. In a method with another backend's CPU thread
  /// pool the team is 1 (threading.h).
  bool uses_cpu_thread_pool() const override;
  bool runs_on_calling_thread() const override { return true; }  // it joins its workers, busy
  /// Ends the calling thread's OpenMP team (omp_pause_resource_all of every OpenMP runtime
  /// loaded, see onednn_backend.cpp): libgomp's idle workers
  /// busy-wait after each parallel region (about 5 ms on a 2-vCPU guest, GOMP_SPINCOUNT), which
  /// took a CPU from an XNNPACK candidate measured next at two threads. The next run starts new
  /// workers. Only the caller's team: libgomp keeps one per thread that starts parallel regions,
  /// and measured selection runs every candidate on the loading thread.
  void park_idle_workers() const override;
  // Its init: primitives and reorders: no timing, no method allocator.
  bool init_beside_other_backends() const override { return true; }
  /// Applies primitive_cache_capacity at once. max_cpu_isa is stored by the framework and
  /// applied at the first init (a oneDNN setting can be made only once).
  Status set_option(BackendOptionContext& context, Span<const BackendOption> options) override;
  /// Once the backend initialised, max_cpu_isa reads as the effective ISA
  /// (dnnl::get_effective_cpu_isa, mapped to the nearest choice at or below it). Before that it
  /// reads as set: querying oneDNN earlier would fix its ISA.
  Status get_option(BackendOptionContext& context, Span<BackendOption> options) override;

 private:
  Result<dnnl::engine> initialize(BackendInitContext& context) const;

  mutable std::mutex mutex_;
  mutable bool initialized_ = false;
  mutable dnnl::engine engine_;
  mutable std::string applied_isa_;
};

/// oneDNN's effective ISA as a max_cpu_isa choice ("avx512_core_bf16", "avx2", ...). Calling
/// it fixes oneDNN's ISA for the process.
const char* effective_isa_choice();

/// Whether ISA bit set `have` contains all of `want` (oneDNN's ISA values are bit sets).
bool isa_includes(dnnl_cpu_isa_t have, dnnl_cpu_isa_t want);
/// Whether oneDNN's effective ISA (the CPU capped by max_cpu_isa) contains all of `isa`. Like
/// effective_isa_choice, calling it fixes oneDNN's ISA for the process.
bool effective_isa_includes(dnnl_cpu_isa_t isa);

/// What a delegate was built into, for tests and tools. `handle` comes from init.
struct DelegateSummary {
  int threads = 0;
  bool bf16 = false;
  size_t fused_sums = 0;
  size_t in_place_sums = 0;
  size_t copy_free_concats = 0;    // Concats whose parts were written in place in the output
  size_t channels_last_grouped_convs = 0;  // grouped Convs kept in their input's acdb
  size_t host_grouped_convs = 0;           // of those, computed by Tessera's AVX-512 kernel
  size_t host_narrow_convs = 0;  // 1x1 Convs to 24 or 40 channels by Tessera's AVX-512 kernel
  size_t host_dw_pointwise_convs = 0;  // 3x3 depthwise + 1x1 Conv pairs by Tessera's kernel
  size_t host_stem_convs = 0;          // first-layer 3x3 Convs reading NCHW, by Tessera's kernel
  size_t blocked_1x1_convs = 0;            // 1x1 Convs kept in their input's aBcd16b
  size_t nchw_input_convs = 0;  // first-layer Convs reading NCHW, 16 channels out (no reorder)
  size_t fused_depthwise_convs = 0;        // 1x1 + depthwise Convs run as one primitive
  size_t blocked_concat_chains = 0;        // DenseNet chains laid out aBcd16b
  size_t single_thread_steps = 0;  // steps too small to split, created and run on one thread
  size_t concat_layout_convs = 0;  // Convs asked for a Concat sibling's Winograd layout
  size_t fused_silus = 0;          // SiLU or HardSwish (x * gate(x)) after a Conv, as a post-op
  size_t fused_eltwise = 0;        // an activation-like node after a Conv, as post-ops
  size_t host_silus = 0;           // of fused_silus, SiLUs Tessera computes after the Conv
  std::string silu_isa;            // their kernel: "avx512", "avx2" (none: oneDNN's post-op)
  size_t winograd_convs = 0;       // convolutions computed with Winograd (conv_algorithm)
  size_t weights_from_cache = 0;   // Winograd weights read from cache_dir
  size_t weights_cached = 0;       // Winograd weights written to cache_dir
  size_t arena_bytes = 0;          // the shared arena: activations and steps' scratchpads
  size_t activation_bytes = 0;     // what its activation buffers would take without sharing
  size_t scratchpad_bytes = 0;     // the largest step's scratchpad (in the arena at its step)
  size_t init_scratchpad_bytes = 0;  // the largest of the init reorders' (reorder_at_init)
  std::vector<std::string> steps;  // "<name> <implementation>" per primitive, in order
  std::vector<int> step_threads;   // each step's team: 1 when it runs on one thread, else 0
};
DelegateSummary summarize_delegate(const DelegateHandle* handle);

/// True when oneDNN's effective ISA has its float32 Winograd convolution kernels (avx512_core):
/// where conv_algorithm=auto can use Winograd and conv_algorithm=winograd is accepted.
bool winograd_kernels_available();

/// True when oneDNN's effective ISA has its bf16 kernels (avx512_core_bf16): with a CPU that has
/// native bf16 arithmetic (avx512_bf16 or amx_bf16), where precision=bf16 is accepted.
bool bf16_kernels_available();

/// True when the CPU has AMX bf16 tiles and oneDNN's effective ISA may use them: where
/// precision=auto picks bf16.
bool amx_bf16_available();

}  // namespace tessera::onednn
