// Delegate: one initialised XNNPACK delegate (the DelegateHandle the backend hands out) and its
// execute loop. Built by build_delegate() (subgraph_builder.h); everything is allocated then, so
// execute() never touches the heap.
//
// A delegate is a list of steps over buffers. Usually it is: stage the inputs (NCHW -> NHWC
// where a value is channels-last), invoke one XNNPACK runtime, write the outputs back (NHWC ->
// NCHW). When an operator needs a value in a layout whose memory order differs from the one it
// was produced in, and this XNNPACK has no transpose operator to do it inside the runtime, the
// delegate splits into several runtimes with a layout conversion step between them.
#pragma once

#include <xnnpack.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "tessera/backend/context.h"
#include "tessera/backends/xnnpack/layout.h"
#include "tessera/backends/xnnpack/thread_pools.h"
#include "tessera/core/evalue.h"
#include "tessera/core/large_buffer.h"
#include "tessera/core/span.h"
#include "tessera/core/status.h"

namespace tessera::xnnpack {

/// Floats of the delegate's own (buffers, permuted filters, padded constants): a LargeBuffer,
/// so that large ones (ResNet-18's permuted 3x3 filters, up to 9 MiB) are mapped for huge pages.
struct OwnedFloats {
  LargeBuffer buffer;
  float* get() const { return static_cast<float*>(buffer.data()); }
  explicit operator bool() const { return buffer.data() != nullptr; }
};

/// `count` floats, 64-byte aligned, followed by XNN_EXTRA_BYTES of zeros (XNNPACK may read,
/// never write, that far past a tensor). Empty on exhaustion.
OwnedFloats allocate_floats(size_t count);

/// How data moves between two layouts of one value.
struct Conversion {
  enum class Kind : uint8_t {
    Copy,            // same memory order
    ToChannelsLast,  // [n, c, s] -> [n, s, c]
    ToIdentity,      // [n, s, c] -> [n, c, s]
  };
  Kind kind = Kind::Copy;
  int64_t n = 1, c = 1, s = 1;  // for the transposes
  size_t numel = 0;

  void run(const float* in, float* out, pthreadpool_t pool, uint32_t pool_flags) const;
};

/// A tensor held outside the XNNPACK runtimes: a staged input, a value passed between runtimes,
/// a converted copy, or an output written in place (bound to an execute argument).
struct Buffer {
  float* data = nullptr;  // owned storage, or the bound argument's data during execute
  int arg = -1;           // >= 0: bound to args[arg] (a delegate output)
  size_t numel = 0;
};

/// An external value of a runtime backed by a buffer.
struct ExternalBinding {
  size_t index;  // into Runtime::externals
  int buffer;
};

struct Runtime {
  xnn_runtime_t runtime = nullptr;
  std::vector<xnn_external_value> externals;
  std::vector<ExternalBinding> bound;  // externals whose buffer is bound to an argument
  size_t num_nodes = 0;
};

/// One input of a concatenation: `inner` floats of buffer `src` per outer index.
struct ConcatPart {
  int src;
  size_t inner;
};

struct Step {
  enum class Kind : uint8_t { Invoke, Convert, Concat };
  Kind kind = Kind::Invoke;
  int runtime = -1;        // Invoke
  int src = -1, dst = -1;  // Convert: buffer indices; Concat: dst
  Conversion conversion;
  // Concat: parts [first_part, first_part + num_parts) of Delegate::concat_parts, each copied
  // for every one of `outer` rows of the destination.
  size_t first_part = 0, num_parts = 0, outer = 0;
};

struct InputStage {
  int arg;
  int buffer;
  Conversion conversion;
};

struct OutputStage {
  int arg;
  int buffer = -1;  // source buffer, or -1 with `constant`
  const float* constant = nullptr;
  Conversion conversion;
};

struct PerNodeRecipe;

class Delegate {
 public:
  Delegate() = default;
  Delegate(const Delegate&) = delete;
  Delegate& operator=(const Delegate&) = delete;
  ~Delegate();

  /// Runs the delegate on `args` (inputs, then outputs). No heap allocation, except on the first
  /// call with profile=true, which builds the per-node twin. Errors: InvalidArgument (wrong
  /// argument count, kind or size), DelegateExecutionFailed (XNNPACK).
  Status execute(BackendExecutionContext& context, Span<EValue*> args);

  size_t num_runtimes() const { return runtimes.size(); }
  size_t num_conversions() const;
  size_t num_concats() const;

  // Built by build_delegate; read-only afterwards.
  char id[64] = {};
  size_t num_inputs = 0;
  size_t num_outputs = 0;
  std::vector<int64_t> arg_numel;  // expected element count of each argument
  std::vector<Buffer> buffers;
  std::vector<Runtime> runtimes;
  std::vector<Step> steps;
  std::vector<InputStage> inputs;
  std::vector<OutputStage> outputs;
  std::vector<ConcatPart> concat_parts;
  std::vector<OwnedFloats> storage;          // buffers, repacked weights, padded constants
  /// The buffers' arena (they share it where their lifetimes do not overlap), and what they
  /// would take each in memory of its own.
  size_t buffer_bytes = 0;
  size_t unshared_buffer_bytes = 0;
  std::shared_ptr<struct pthreadpool> pool;  // null: run on the calling thread
  /// The pools of the delegate's Method (null in a profiling twin). When the Method runs on
  /// several, execute parks this pool's workers at its end (thread_pools.h).
  std::shared_ptr<MethodPools> method_pools;
  uint32_t runtime_flags = 0;

  // Profile event names, prepared at init: inputs, one per step, outputs.
  std::vector<std::array<char, 48>> event_names;

  // profile=true runs a twin of this delegate with one XNNPACK runtime per node (this XNNPACK
  // has no per-operator timing of its own), built from `recipe` on the first profiled call.
  std::unique_ptr<PerNodeRecipe> recipe;
  std::unique_ptr<Delegate> per_node;

 private:
  Status invoke(Runtime& runtime);
  void concat(const Step& step, pthreadpool_t pool, uint32_t pool_flags);
};

}  // namespace tessera::xnnpack
