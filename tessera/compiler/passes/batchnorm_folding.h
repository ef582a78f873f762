// BatchNorm folding: a BatchNormalization (inference) whose input comes from a Conv,
// ConvTranspose or Gemm with constant weights, and is used by nothing else, is folded into that
// node's weights and bias.
#pragma once

#include "tessera/compiler/model_graph.h"
#include "tessera/core/result.h"

namespace tessera::compiler {

/// Returns the number of BatchNormalization nodes folded away.
Result<int> fold_batch_norms(ModelGraph& graph);

/// Rewrites each remaining BatchNormalization with constant statistics as Mul by a per-channel
/// scale then Add of a per-channel shift (constants of shape [C, 1, ...]): ops every backend
/// has, so a BatchNorm that could not be folded (DenseNet's after a Concat, say) does not split
/// a delegate. Returns the number rewritten.
int lower_batch_norms(ModelGraph& graph);

}  // namespace tessera::compiler
