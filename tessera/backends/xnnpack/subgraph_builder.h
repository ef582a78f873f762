// build_delegate: turns a delegate payload (an fb::Graph of the portable IR) into XNNPACK
// runtimes, at init.
//
// Layout: every 4-D value is kept channels-last (NHWC) when the ops around it want that (conv,
// pooling, resize, channel softmax/prelu) and in the logical order otherwise (fully connected,
// reshape). Inputs are converted on entry and outputs on exit; inside, an op whose input is in
// the other layout reads it through a free view when the memory order is the same (e.g.
// [N, C, 1, 1]), else (this XNNPACK has no transpose) the delegate is split into two runtimes
// with a conversion step between them. Weights are repacked once here (OIHW -> OHWI, depthwise
// 1HWO); fully connected weights and biases are used in place from the program.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tessera/backend/context.h"
#include "tessera/backend/payload_graph.h"
#include "tessera/backend/resolved_options.h"
#include "tessera/backends/xnnpack/delegate.h"
#include "tessera/core/result.h"
#include "tessera/ir/schema.h"

namespace tessera::xnnpack {

struct BuildOptions {
  std::shared_ptr<struct pthreadpool> pool;  // may be null
  uint32_t runtime_flags = 0;                // XNN_FLAG_* for xnn_create_runtime_v2
  /// One XNNPACK runtime per node (buffers between all of them), each profile event named after
  /// its node: the delegate that `profile=true` runs. Slower than the fused delegate.
  bool one_runtime_per_node = false;
};

/// Builds the delegate for the payload graph `view`. Constants are used in place and must
/// outlive the delegate (they live in the Program). Errors: NotSupported (an op or attribute
/// this XNNPACK cannot run, naming the node), InvalidProgram (inconsistent graph),
/// DelegateInvalidCompatibility (XNNPACK rejected the subgraph), MemoryAllocationFailed.
Result<std::unique_ptr<Delegate>> build_delegate(const PayloadGraph& view,
                                                 const BackendInitContext& context,
                                                 const BuildOptions& options);

/// What the delegate keeps so that a profiled execute can build its per-node twin later: a copy
/// of the payload, the resolved options and symbol values, and the constants' spans (which live
/// in the Program, like the weights the delegate already uses in place).
struct PerNodeRecipe {
  std::vector<uint8_t> payload;
  ResolvedOptions options;
  std::vector<std::string> symbol_names;
  std::vector<SymbolValue> symbols;  // names view symbol_names
  std::vector<std::pair<uint32_t, Span<const uint8_t>>> constants;
  BuildOptions build;
};
Result<std::unique_ptr<PerNodeRecipe>> make_per_node_recipe(const PayloadGraph& view,
                                                            const void* payload, size_t size,
                                                            const BackendInitContext& context,
                                                            const BuildOptions& options);
/// Builds the per-node twin from a recipe (allocates; called on the first profiled execute).
Result<std::unique_ptr<Delegate>> build_per_node(const PerNodeRecipe& recipe);

}  // namespace tessera::xnnpack
