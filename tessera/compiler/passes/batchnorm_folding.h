// BatchNorm folding: a BatchNormalization (inference) whose input comes from a Conv,
// ConvTranspose or Gemm with constant weights, and is used by nothing else, is folded into that
// node's weights and bias.
#pragma once

#include "tessera/compiler/model_graph.h"
#include "tessera/core/result.h"

namespace tessera::compiler {

/// Returns the number of BatchNormalization nodes folded away.
Result<int> fold_batch_norms(ModelGraph& graph);

}  // namespace tessera::compiler
