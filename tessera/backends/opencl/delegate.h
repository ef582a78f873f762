// Delegate: one initialised OpenCL delegate (the DelegateHandle the backend hands out). Built by
// build_delegate() at init: kernels generated and built (through the program cache), constants
// uploaded, activations placed in one arena by lifetime, kernel arguments set, local sizes tuned.
// execute() only enqueues: input writes, the kernels in graph order, output reads, on the
// delegate's own queue; no heap.
#pragma once

#include <CL/cl.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "tessera/backend/context.h"
#include "tessera/backend/payload_graph.h"
#include "tessera/backends/opencl/cl_util.h"
#include "tessera/backends/opencl/codegen.h"
#include "tessera/backends/opencl/devices.h"
#include "tessera/backends/opencl/program_cache.h"
#include "tessera/backends/opencl/tuner.h"
#include "tessera/core/evalue.h"
#include "tessera/ir/schema.h"

namespace tessera::opencl {

/// What init resolved from the delegate's options.
struct DelegateSettings {
  std::string build_options;
  ProgramCacheSettings cache;
  TuningLevel tuning = TuningLevel::None;
  std::string tuning_file;
  bool specialize_shapes = false;
  GemmImpl gemm = GemmImpl::Generated;
};

/// What a delegate was built into, for tests, benchmarks and tools.
struct DelegateSummary {
  std::string device;          // device name
  std::string device_type;     // "gpu", "cpu", "accelerator" or "other"
  const void* context = nullptr;  // identity of the shared device context
  size_t kernels = 0;             // kernel launches per execute
  size_t functions = 0;           // distinct kernel functions in the program (launches share them)
  size_t aliases = 0;          // nodes run as buffer aliases (reshape-like ops)
  size_t fused_adds = 0;       // residual Adds folded into the Conv before them
  size_t arena_bytes = 0;      // one device buffer holds every activation, by lifetime...
  size_t activation_bytes = 0;  // ...instead of this many bytes in buffers of their own
  ProgramBuildInfo program;
  size_t library_gemms = 0;    // of `kernels`, GEMMs run by CLBlast (gemm=clblast)
  size_t tuned = 0;            // kernels tuned by search at this init
  size_t tuning_loaded = 0;    // kernels whose local size came from the tuning file
  double init_ms = 0.0;
};

class Delegate {
 public:
  Delegate() = default;
  Delegate(const Delegate&) = delete;
  Delegate& operator=(const Delegate&) = delete;
  ~Delegate();

  /// Runs on `args` (inputs, then outputs). Errors: InvalidArgument (argument count, kind or
  /// size), DelegateExecutionFailed (an OpenCL call failed).
  Status execute(BackendExecutionContext& context, Span<EValue*> args);

  struct Launch {
    KernelHandle kernel;  // null for a library GEMM
    bool library = false;
    LibraryGemm gemm;
    cl_mem a = nullptr, b = nullptr, c = nullptr;  // the GEMM's buffers (owned by the delegate)
    size_t global = 0;  // rounded to a multiple of local
    size_t local = 0;   // 0: the driver chooses
    std::array<char, 48> label{};
  };
  struct Io {
    int buffer;
    size_t bytes;
  };

  char id[64] = {};
  std::shared_ptr<DeviceContext> device;
  QueueHandle queue;
  ProgramHandle program;
  MemHandle arena;                 // the activations; buffers[v] are sub-buffers of it
  std::vector<MemHandle> buffers;  // per value that owns storage: constants, or an arena region
  MemHandle scratch;  // shared by the nodes that need one (im2col), sized for the largest
  std::vector<Launch> launches;
  std::vector<Io> inputs, outputs;
  std::vector<cl_event> events;  // one per launch, used when profiling
  DelegateSummary summary;
};

/// What a delegate's program is made of, before any OpenCL call: each node's plan, the buffer
/// of each value (aliases share their input's), the kernels in launch order (pointing into
/// `plans`) with their text and function name, and the program source.
struct DelegatePlan {
  std::vector<Dims> shapes;
  std::vector<NodePlan> plans;
  std::vector<int> buffer_of;
  std::vector<const KernelPlan*> kernels;
  std::vector<std::string> texts;      // per kernel, with a placeholder name
  std::vector<std::string> functions;  // per kernel, the program function it launches
  std::string source;
  int64_t scratch_floats = 0;
  size_t aliases = 0;
  size_t fused_adds = 0;
  size_t num_functions = 0;
};

/// Where each activation lives in the delegate's arena: values whose lifetimes (from the first
/// kernel touching them to the last; inputs from the start, outputs to the end) do not overlap
/// share bytes (ir::plan_memory). offset_of[v] is -1 for values without storage of their own
/// (aliases, constants, non-float32 values, values no kernel touches).
struct ArenaPlan {
  std::vector<int64_t> offset_of;
  std::vector<size_t> bytes_of;
  size_t arena_bytes = 0;
  size_t activation_bytes = 0;
};
ArenaPlan plan_arena(const PayloadGraph& view, const DelegatePlan& plan, size_t alignment);

/// Plans the payload graph `view` (its dims evaluated at this load). Errors: InvalidProgram,
/// NotSupported, ShapeMismatch.
Result<DelegatePlan> plan_delegate(const PayloadGraph& view, bool specialize_shapes,
                                   GemmImpl gemm = GemmImpl::Generated);

/// Whether this build can run GEMMs through CLBlast.
bool clblast_built_in();

/// Builds a delegate for the payload graph `view` on `device`. Errors: InvalidProgram (malformed
/// graph), NotSupported (an op or variant this backend does not run), ShapeMismatch,
/// DelegateUnavailable and DelegateInvalidCompatibility (OpenCL failures), option errors.
Result<std::unique_ptr<Delegate>> build_delegate(const PayloadGraph& view,
                                                 const BackendInitContext& context,
                                                 std::shared_ptr<DeviceContext> device,
                                                 const DelegateSettings& settings);

}  // namespace tessera::opencl
