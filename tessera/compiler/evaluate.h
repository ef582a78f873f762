// Compile-time evaluation of portable IR nodes whose inputs are all known: constant folding of
// weights and of the shape arithmetic exporters emit (including symbolic shape values). An op
// computes what its portable kernel computes (host_kernel.h runs the kernel).
#pragma once

#include <vector>

#include "tessera/compiler/model_graph.h"
#include "tessera/core/result.h"

namespace tessera::compiler {

/// Largest tensor (in elements) folding may produce.
inline constexpr int64_t kMaxFoldElements = int64_t{1} << 24;

/// Computes the outputs of `node` (whose output values already have static dims and dtypes)
/// from its inputs' data by running its portable kernel. Integer tensors with symbolic elements
/// go through the kernel as element handles (data movement) or SymExpr algebra (integer
/// arithmetic and comparisons). Returns false, touching nothing, when the node is not evaluated
/// at compile time: an input unknown, a node or dtype its kernel rejects (left to run time),
/// symbolic data the op cannot carry, too large a result. Errors: a data-dependent failure of
/// the kernel (Gather's index out of range, integer division by zero) is InvalidProgram with the
/// kernel's message.
Result<bool> evaluate_node(const ModelGraph& graph, const ir::Node& node,
                           std::vector<HostTensor>* outputs);

/// `t` broadcast (numpy rules) to `dims`.
HostTensor broadcast_to(const HostTensor& t, const std::vector<int64_t>& dims);

/// `t` converted to `to` as the portable Cast kernel converts (float to int truncating and
/// saturating, NaN to 0; ints wrapped to the type's width; bool as != 0). Symbolic integers stay
/// symbolic for int64 and int32 targets; false if they would have to become concrete values.
bool cast_tensor(const HostTensor& t, ScalarType to, HostTensor* out);

}  // namespace tessera::compiler
