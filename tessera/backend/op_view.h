// OpView and SubgraphView: what the AOT partitioner shows a backend. Minimal on purpose; the IR
// owns their meaning.
#pragma once

#include <cstdint>

#include "tessera/core/span.h"

namespace tessera {

/// One operator of a graph, as asked of BackendInterface::supports_op.
struct OpView {
  int op;             // an fb::OpType value
  const void* node;   // const tessera::fb::Node*
  const void* graph;  // const tessera::fb::Graph* that holds the node (the compiler encodes its
                      // method graph first; the runtime passes a delegate's payload graph)
};

/// The nodes of one partition, as given to BackendInterface::preprocess.
struct SubgraphView {
  const void* graph;           // the graph the nodes belong to
  Span<const uint32_t> nodes;  // node indices in that graph
};

}  // namespace tessera
