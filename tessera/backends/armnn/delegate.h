// Delegate: one network loaded into the backend's IRuntime (the DelegateHandle the backend
// hands out) and its execute. The input and output tensor lists ArmNN takes are built at init;
// execute only points them at the caller's tensors, and ArmNN copies inputs into its own buffers
// and results out of them (import was measured and not taken: README.md in this folder).
#pragma once

#include <armnn/IRuntime.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tessera/backend/context.h"
#include "tessera/core/evalue.h"
#include "tessera/core/span.h"
#include "tessera/core/status.h"

namespace tessera::armnn_backend {

class Delegate {
 public:
  /// Runs the network on `args` (inputs, then outputs). Errors: InvalidArgument (wrong count,
  /// dtype or size), DelegateExecutionFailed (ArmNN failed).
  Status execute(BackendExecutionContext& context, Span<EValue*> args);

  // Set at init; read-only afterwards (but for the tensor lists' data pointers).
  char id[64] = {};
  armnn::IRuntime* runtime = nullptr;  // the backend's; outlives the delegate
  armnn::NetworkId network = 0;
  bool profiling = false;
  std::vector<armnn::TensorInfo> input_infos;
  std::vector<armnn::TensorInfo> output_infos;
  armnn::InputTensors inputs;
  armnn::OutputTensors outputs;
  std::vector<std::string> preferences;             // the backends option, in order
  std::map<std::string, size_t> layers_by_backend;  // where ArmNN placed each layer
  size_t layers = 0;                                // layers of the network before optimisation
};

}  // namespace tessera::armnn_backend
