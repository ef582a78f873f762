// Running one portable kernel on compile-time data: how constant folding gives an op the meaning
// of its portable kernel (tessera/kernels/portable) instead of a copy of its own.
#pragma once

#include <vector>

#include "tessera/compiler/model_graph.h"
#include "tessera/core/status.h"
#include "tessera/ir/graph.h"

namespace tessera::compiler {

/// Prepares and runs the portable kernel of `node` once. `inputs` are positional (nullptr for an
/// absent optional input) and concrete (no symbolic elements); each of `outputs` gives the dtype
/// and dims of the node's output in that position and receives its data. The node's own input
/// and output indices are not read. Errors: those of portable::prepare_kernel (the node or a dtype
/// rejected: InvalidProgram, NotSupported, ShapeMismatch; an input or output of a rank above
/// kMaxDims: NotSupported) and of run_kernel (data-dependent:
/// InvalidArgument), with the kernel's message; `outputs` is left unspecified then.
Status run_host_kernel(const ir::Node& node, const std::vector<const HostTensor*>& inputs,
                       std::vector<HostTensor>* outputs);

}  // namespace tessera::compiler
