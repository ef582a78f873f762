// Text rendering of an ir::Graph for --print-graph and test failure messages.
#pragma once

#include <string>

#include "tessera/ir/graph.h"

namespace tessera::compiler {

/// "batch*16" for a dim with a shape expression, "64" for a constant.
std::string dim_to_string(const ir::Dim& dim, const std::vector<ir::Symbol>& symbols);

/// One line per node: `name: Op(in0 [dims], ...) -> out [dims] {attrs} +Relu`, then outputs.
std::string graph_to_string(const ir::Graph& graph);

}  // namespace tessera::compiler
