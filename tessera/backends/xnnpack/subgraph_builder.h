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

#include "tessera/backend/context.h"
#include "tessera/backends/xnnpack/delegate.h"
#include "tessera/core/result.h"
#include "tessera/ir/schema.h"

namespace tessera::xnnpack {

struct BuildOptions {
  std::shared_ptr<struct pthreadpool> pool;  // may be null
  uint32_t runtime_flags = 0;                // XNN_FLAG_* for xnn_create_runtime_v2
};

/// Builds the delegate for `graph` (already verified). Symbolic dims are evaluated with the
/// context's symbol values (matched by name); constants come from context.constant() and must
/// outlive the delegate (they live in the Program). Errors: NotSupported (an op or attribute
/// this XNNPACK cannot run, naming the node), InvalidProgram (inconsistent graph), NotFound (a
/// symbol without a value), DelegateInvalidCompatibility (XNNPACK rejected the subgraph),
/// MemoryAllocationFailed.
Result<std::unique_ptr<Delegate>> build_delegate(const fb::Graph& graph,
                                                 const BackendInitContext& context,
                                                 const BuildOptions& options);

}  // namespace tessera::xnnpack
