// Delegate: one initialised oneDNN delegate (the DelegateHandle the backend hands out) and its
// execute loop. Built by build_delegate() (graph_builder.h); every primitive, memory object,
// argument array and every step's scratchpad (in the arena) exist after init, so execute() itself
// allocates nothing: it points the argument-bound memories at the caller's tensors and runs the
// steps through the C API with prebuilt dnnl_exec_arg_t arrays (the C++ execute takes a
// std::unordered_map).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/backend/context.h"
#include "tessera/backends/onednn/dw_pointwise.h"
#include "tessera/backends/onednn/grouped_conv.h"
#include "tessera/backends/onednn/narrow_conv.h"
#include "tessera/backends/onednn/silu.h"
#include "tessera/backends/onednn/stem_conv.h"
#include "tessera/core/evalue.h"
#include "tessera/core/large_buffer.h"
#include "tessera/core/span.h"
#include "tessera/core/status.h"

namespace tessera::onednn {

/// One primitive call.
struct Step {
  dnnl::primitive primitive;
  std::vector<dnnl_exec_arg_t> args;  // handles of memories kept alive by Delegate::memories
  std::array<char, 48> name = {};     // profile event name: "<kind>:<node name>"
  std::string impl;               // the implementation oneDNN chose ("brgconv:avx512_core", ...)
  dnnl::memory::desc scratchpad;  // zero-sized when the primitive needs none
  int threads = 0;  // its OpenMP team: 0 the delegate's, 1 too small to split (small_steps)
  // After the primitive, Tessera's SiLU in place on this memory's silu_elements floats (silu.h):
  // a Conv's SiLU, which costs about half of oneDNN's swish post-op this way. Null for none.
  dnnl_memory_t silu = nullptr;
  size_t silu_elements = 0;
  std::array<char, 48> silu_name = {};  // its profile event name: "silu:<Mul node's name>"
  // Set: no primitive; Tessera's grouped convolution (grouped_conv.h) from args[0]'s memory
  // (DNNL_ARG_SRC) into args[1]'s (DNNL_ARG_DST).
  std::shared_ptr<const GroupedConv> grouped;
  // Set: no primitive; Tessera's 1x1 convolution to 24 or 40 channels (narrow_conv.h) from
  // args[0]'s memory into args[1]'s, with narrow->sum the residual args[2]'s (or, without a
  // third, args[1]'s own: in place).
  std::shared_ptr<const NarrowConv> narrow;
  // Set: no primitive; Tessera's 3x3 depthwise Conv and the 1x1 Conv after it (dw_pointwise.h)
  // from args[0]'s memory into args[1]'s.
  std::shared_ptr<const DwPointwise> dw_pointwise;
  // Set: no primitive; Tessera's first-layer Conv (stem_conv.h) from args[0]'s memory (NCHW)
  // into args[1]'s (channels-last).
  std::shared_ptr<const StemConv> stem;
};

/// A memory object whose data is an execute argument's (set at every call).
struct ArgBinding {
  dnnl_memory_t memory;
  int arg;
};

class Delegate {
 public:
  /// Runs the delegate on `args` (inputs, then outputs). Errors: InvalidArgument (wrong
  /// argument count, kind or size), DelegateExecutionFailed (a oneDNN call failed).
  Status execute(BackendExecutionContext& context, Span<EValue*> args);

  // Built by build_delegate; read-only afterwards (but for the memories' data handles).
  char id[64] = {};
  dnnl::engine engine;
  dnnl::stream stream;
  int threads = 1;  // OpenMP team size for this delegate's primitives
  bool bf16 = false;
  size_t num_inputs = 0;
  size_t num_outputs = 0;
  std::vector<int64_t> arg_numel;  // expected element count of each argument
  std::vector<Step> steps;
  std::vector<ArgBinding> bindings;
  // Every memory a step refers to (owning where oneDNN allocated).
  std::vector<dnnl::memory> memories;
  // Buffers from large_buffer_threshold() on (weights, the arena), allocated here instead of by
  // oneDNN so that they are mapped for huge pages; memories point into them.
  std::vector<LargeBuffer> large_buffers;
  dnnl::memory arena;             // activation buffers and scratchpads, lifetimes planned at init
  size_t arena_bytes = 0;         // its size
  size_t activation_bytes = 0;    // what the activation buffers in it would take one by one
  size_t scratchpad_bytes = 0;    // the largest step's scratchpad (in the arena at its step)
  size_t fused_sums = 0;          // residual adds fused as sum post-ops
  size_t copy_free_concats = 0;   // Concats whose parts were written in place in the output
  size_t channels_last_grouped_convs = 0;  // grouped Convs kept in their input's acdb
  size_t host_grouped_convs = 0;  // of those, computed by Tessera's kernel (grouped_conv.h)
  size_t host_narrow_convs = 0;   // 1x1 Convs to 24 or 40 channels by Tessera (narrow_conv.h)
  size_t host_dw_pointwise_convs = 0;      // depthwise + 1x1 Conv pairs by Tessera (dw_pointwise.h)
  size_t host_stem_convs = 0;              // first-layer Convs from NCHW by Tessera (stem_conv.h)
  size_t blocked_1x1_convs = 0;            // 1x1 Convs kept in their input's aBcd16b
  size_t nchw_input_convs = 0;  // first-layer Convs reading NCHW, 16 channels out (no reorder)
  size_t fused_depthwise_convs = 0;        // 1x1 + depthwise Convs run as one primitive
  size_t blocked_concat_chains = 0;        // DenseNet chains laid out aBcd16b
  size_t single_thread_steps = 0;  // steps too small to split, created and run on one thread
  size_t concat_layout_convs = 0;  // Convs asked for a Concat sibling's Winograd layout
  size_t fused_silus = 0;         // x * sigmoid(x) (or x * hardsigmoid(x)) after a Conv, as a post-op
  size_t fused_eltwise = 0;       // an activation-like node after a Conv, as post-ops
  size_t host_silus = 0;          // of fused_silus, computed by Tessera after the Conv (silu.h)
  SiluIsa silu_isa = SiluIsa::Scalar;  // the kernel host_silus run with
  size_t in_place_sums = 0;       // of which write into the residual's own buffer
  size_t winograd_convs = 0;      // convolutions computed with Winograd
  size_t winograd_eligible = 0;   // convolutions Winograd could take (3x3, stride 1, fp32, ...)
  size_t weights_from_cache = 0;  // Winograd weights read from cache_dir
  size_t weights_cached = 0;      // Winograd weights written to cache_dir
  size_t init_scratchpad_bytes = 0;  // the largest scratchpad of the reorders run at init
};

/// Runs the reorder `from` -> `to` now, at init (constants into a primitive's layout,
/// Winograd's weight transform), on `stream`, and waits for it. Its scratchpad, when oneDNN
/// books one, is `*scratch` (grown to fit, reused by the next): a LargeBuffer, so in huge
/// pages. Left to oneDNN (its library scratchpad mode) it comes from malloc in 4 KiB pages:
/// the Winograd transform books about the size of the transformed weights, and ResNet-18's
/// load with conv_algorithm=winograd took 10,000 page faults more than with direct (each
/// about 10 us on a KVM guest). Updates `*largest` with the scratchpad's size. Throws
/// dnnl::error (dnnl_out_of_memory) when the scratchpad cannot be allocated.
void reorder_at_init(const dnnl::engine& engine, dnnl::stream& stream, const dnnl::memory& from,
                     const dnnl::memory& to, LargeBuffer* scratch, size_t* largest);

/// Sets the calling thread's OpenMP team size for a scope and restores the previous value, so a
/// delegate's thread count does not leak into other delegates or the application's OpenMP use.
class OmpThreadsScope {
 public:
  explicit OmpThreadsScope(int threads);
  ~OmpThreadsScope();
  OmpThreadsScope(const OmpThreadsScope&) = delete;
  OmpThreadsScope& operator=(const OmpThreadsScope&) = delete;

 private:
  int saved_;
};

}  // namespace tessera::onednn
