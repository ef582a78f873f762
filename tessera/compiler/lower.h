// Lowering: a ModelGraph becomes the program's ir::Graph. Constants used by nodes go into the
// program's constant segment (64-byte aligned, shared when used twice); symbolic dims become
// reverse-Polish shape expressions with their upper bound; graph outputs that are constants,
// inputs or repeated get an Identity node so that every output is written by the chain.
#pragma once

#include "tessera/compiler/model_graph.h"
#include "tessera/core/result.h"
#include "tessera/ir/program_builder.h"

namespace tessera::compiler {

struct LoweredGraph {
  ir::Graph graph;              // graph.values[i].constant indexes `program`'s constants
  size_t constants_bytes = 0;   // bytes of the constants added
  int constants = 0;            // number of constants added
};

/// Errors: InvalidProgram when a dim can be negative within the symbols' bounds or a node
/// reads a shape value only known symbolically.
Result<LoweredGraph> lower_graph(const ModelGraph& graph, ir::ProgramBuilder& program);

}  // namespace tessera::compiler
