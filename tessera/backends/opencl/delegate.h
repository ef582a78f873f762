// Delegate: one initialised OpenCL delegate (the DelegateHandle the backend hands out). Built by
// build_delegate() at init: kernels generated and built (through the program cache), one buffer
// per value created, kernel arguments set, local sizes tuned. execute() only enqueues: input
// writes, the kernels in graph order, output reads, on the delegate's own queue; no heap.
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
};

/// What a delegate was built into, for tests, benchmarks and tools.
struct DelegateSummary {
  std::string device;          // device name
  const void* context = nullptr;  // identity of the shared device context
  size_t kernels = 0;             // kernel launches per execute
  size_t functions = 0;           // distinct kernel functions in the program (launches share them)
  size_t aliases = 0;          // nodes run as buffer aliases (reshape-like ops)
  ProgramBuildInfo program;
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
    KernelHandle kernel;
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
  std::vector<MemHandle> buffers;
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
  size_t num_functions = 0;
};

/// Plans the payload graph `view` (its dims evaluated at this load). Errors: InvalidProgram,
/// NotSupported, ShapeMismatch.
Result<DelegatePlan> plan_delegate(const PayloadGraph& view, bool specialize_shapes);

/// Builds a delegate for the payload graph `view` on `device`. Errors: InvalidProgram (malformed
/// graph), NotSupported (an op or variant this backend does not run), ShapeMismatch,
/// DelegateUnavailable and DelegateInvalidCompatibility (OpenCL failures), option errors.
Result<std::unique_ptr<Delegate>> build_delegate(const PayloadGraph& view,
                                                 const BackendInitContext& context,
                                                 std::shared_ptr<DeviceContext> device,
                                                 const DelegateSettings& settings);

}  // namespace tessera::opencl
