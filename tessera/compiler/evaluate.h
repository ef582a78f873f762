// Compile-time evaluation of portable IR nodes whose inputs are all known: constant folding of
// weights and of the shape arithmetic exporters emit (including symbolic shape values).
#pragma once

#include <vector>

#include "tessera/compiler/model_graph.h"
#include "tessera/core/result.h"

namespace tessera::compiler {

/// Largest tensor (in elements) folding may produce.
inline constexpr int64_t kMaxFoldElements = int64_t{1} << 24;

/// Computes the outputs of `node` (whose output values already have static dims and dtypes)
/// from its inputs' data. Returns false, touching nothing, when the op is not evaluated at
/// compile time (unsupported op, symbolic data the op cannot carry, too large a result).
Result<bool> evaluate_node(const ModelGraph& graph, const ir::Node& node,
                           std::vector<HostTensor>* outputs);

/// `t` broadcast (numpy rules) to `dims`.
HostTensor broadcast_to(const HostTensor& t, const std::vector<int64_t>& dims);

/// `t` converted to `to` (float <-> int truncating, ints wrapped to the type's width, bool as
/// != 0). Symbolic integers stay symbolic for integer targets; false if `to` is a float type.
bool cast_tensor(const HostTensor& t, ScalarType to, HostTensor* out);

}  // namespace tessera::compiler
