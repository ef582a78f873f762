#include "tessera/compiler/passes/constant_folding.h"

#include "tessera/compiler/evaluate.h"

namespace tessera::compiler {

Result<int> fold_constants(ModelGraph& graph) {
  int folded = 0;
  std::vector<ir::Node> kept;
  kept.reserve(graph.nodes.size());
  for (ir::Node& node : graph.nodes) {
    std::vector<HostTensor> outputs;
    TESSERA_ASSIGN_OR_RETURN(bool done, evaluate_node(graph, node, &outputs));
    if (!done) {
      kept.push_back(std::move(node));
      continue;
    }
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      graph.values[node.outputs[k]].data = std::make_shared<const HostTensor>(std::move(outputs[k]));
    }
    ++folded;
  }
  graph.nodes = std::move(kept);
  return folded;
}

}  // namespace tessera::compiler
