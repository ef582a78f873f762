// Constant folding: evaluates every node whose inputs are all known at compile time.
#pragma once

#include "tessera/compiler/model_graph.h"
#include "tessera/core/result.h"

namespace tessera::compiler {

/// Replaces each node with all-constant inputs (that evaluate_node handles) by constants.
/// Returns the number of nodes folded.
Result<int> fold_constants(ModelGraph& graph);

}  // namespace tessera::compiler
