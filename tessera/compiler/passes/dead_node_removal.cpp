#include "tessera/compiler/passes/dead_node_removal.h"

namespace tessera::compiler {

int remove_dead_nodes(ModelGraph& graph) {
  std::vector<bool> live(graph.values.size(), false);
  for (int v : graph.outputs) live[v] = true;
  std::vector<bool> keep(graph.nodes.size(), false);
  for (size_t i = graph.nodes.size(); i-- > 0;) {
    const ir::Node& n = graph.nodes[i];
    for (int v : n.outputs) {
      if (v >= 0 && live[v]) keep[i] = true;
    }
    if (!keep[i]) continue;
    for (int v : n.inputs) {
      if (v >= 0) live[v] = true;
    }
  }
  std::vector<ir::Node> kept;
  int removed = 0;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (keep[i]) {
      kept.push_back(std::move(graph.nodes[i]));
    } else {
      ++removed;
    }
  }
  graph.nodes = std::move(kept);
  return removed;
}

}  // namespace tessera::compiler
