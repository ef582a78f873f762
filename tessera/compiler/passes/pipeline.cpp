#include "tessera/compiler/passes/pipeline.h"

#include "tessera/compiler/passes/activation_fusion.h"
#include "tessera/compiler/passes/batchnorm_folding.h"
#include "tessera/compiler/passes/constant_folding.h"
#include "tessera/compiler/passes/dead_node_removal.h"
#include "tessera/compiler/passes/pattern_fusion.h"

namespace tessera::compiler {

Status run_passes(ModelGraph& graph, const PassOptions& options, PassStats* stats) {
  PassStats local;
  if (options.fold_constants) {
    TESSERA_ASSIGN_OR_RETURN(local.constants_folded, fold_constants(graph));
  }
  local.dead_nodes_removed += remove_dead_nodes(graph);
  if (options.fuse_patterns) {
    local.patterns_fused = fuse_gelu(graph) + fuse_layer_norm(graph) + fuse_channel_shuffle(graph);
  }
  if (options.fold_batch_norms) {
    TESSERA_ASSIGN_OR_RETURN(local.batch_norms_folded, fold_batch_norms(graph));
  }
  if (options.lower_batch_norms) local.batch_norms_lowered = lower_batch_norms(graph);
  if (options.fuse_activations) local.activations_fused = fuse_activations(graph);
  local.dead_nodes_removed += remove_dead_nodes(graph);
  if (stats) *stats = local;
  return Status::ok();
}

}  // namespace tessera::compiler
