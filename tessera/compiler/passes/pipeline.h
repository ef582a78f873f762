// The default optimisation pipeline: constant folding, pattern fusion (Gelu, LayerNormalization,
// ChannelShuffle),
// BatchNorm folding, activation fusion, dead-node removal.
#pragma once

#include "tessera/compiler/model_graph.h"
#include "tessera/core/result.h"

namespace tessera::compiler {

struct PassOptions {
  bool fold_constants = true;
  bool fuse_patterns = true;
  bool fold_batch_norms = true;
  bool lower_batch_norms = true;  // the BatchNorms left after folding -> Mul + Add
  bool fuse_activations = true;
};

struct PassStats {
  int constants_folded = 0;
  int patterns_fused = 0;
  int batch_norms_folded = 0;
  int batch_norms_lowered = 0;
  int activations_fused = 0;
  int dead_nodes_removed = 0;
};

/// Runs the enabled passes in order; dead nodes are always removed.
Status run_passes(ModelGraph& graph, const PassOptions& options, PassStats* stats);

}  // namespace tessera::compiler
