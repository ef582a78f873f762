// OpView and SubgraphView: what the AOT partitioner shows a backend. Minimal on purpose; the IR
// owns their meaning.
#pragma once

#include <cstdint>

#include "tessera/core/span.h"

namespace tessera {

/// One operator of a graph, as asked of BackendInterface::supports_op.
struct OpView {
  int op;             // an fb::OpType value
  const void* node;   // const tessera::fb::Node* (or the in-memory IR node)
  const void* graph;  // const tessera::fb::Graph* (or the method) that holds the node
};

/// The nodes of one partition, as given to BackendInterface::preprocess.
struct SubgraphView {
  const void* graph;           // the graph the nodes belong to
  Span<const uint32_t> nodes;  // node indices in that graph
};

}  // namespace tessera
