// Dead-node removal: drops nodes none of whose outputs reach a graph output.
#pragma once

#include "tessera/compiler/model_graph.h"

namespace tessera::compiler {

/// Returns the number of nodes removed.
int remove_dead_nodes(ModelGraph& graph);

}  // namespace tessera::compiler
