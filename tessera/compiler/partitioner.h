// Partitioner: splits a method graph into delegate subgraphs and portable kernel calls.
//
// Each node goes to the first backend (in the given order) whose supports_op accepts it, or to
// the portable kernels (with follow_producers: to a producer's backend when that one takes it). Nodes of one backend are merged along data edges into connected
// subgraphs, as large as possible without creating a cycle between partitions (a partition
// never needs a value that depends on its own outputs). Partitions come out in an order that
// respects every data dependency.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tessera/core/result.h"
#include "tessera/ir/graph.h"
#include "tessera/runtime/load_options.h"

namespace tessera::compiler {

/// Whether a backend can run `node` of `graph` (node is an element of graph.nodes).
using SupportsOpFn = std::function<bool(const ir::Graph& graph, const ir::Node& node)>;

struct BackendCandidate {
  std::string name;
  SupportsOpFn supports_op;
};

struct Partition {
  std::string backend;     // empty: portable kernels (then nodes has one node)
  std::vector<int> nodes;  // indices into graph.nodes, in graph order
};

struct PartitionOptions {
  /// A delegate made only of ops that move no data (Reshape, Flatten, Squeeze, Unsqueeze,
  /// Identity) costs a backend call for nothing: run those on the portable kernels instead.
  bool demote_layout_only_delegates = true;
  /// Most delegates a method may have (the runtime loads at most 64). Beyond it the smallest
  /// delegates run on the portable kernels instead. 0 = no limit.
  int max_delegates = static_cast<int>(kMaxDelegatesPerMethod);
  /// A node whose preferred backend none of its producers run on, but which a producer's
  /// backend also supports, goes to that backend (the earliest in preference among the
  /// producers'), so that a chain of ops stays in one delegate instead of alternating between
  /// backends at each op only one of them has. Then, in reverse order, a node (not a graph
  /// output) whose consumers all run on one other backend that also supports it joins them, so
  /// that a leading run of ops does not stay a delegate of its own. For unpinned (selectable)
  /// compiles.
  bool follow_producers = false;
};

/// Partitions `graph` (nodes in topological order). With no candidates every node is its own
/// portable partition.
Result<std::vector<Partition>> partition_graph(const ir::Graph& graph,
                                               const std::vector<BackendCandidate>& backends,
                                               const PartitionOptions& options = {});

/// A partition's nodes as a standalone graph (a delegate payload before encoding): the method's
/// symbols, the values it touches (constants keep their program constant index; arena offsets
/// are cleared), inputs = non-constant values it reads but does not produce, outputs = values it
/// produces that are read outside it or are method outputs. `inputs`/`outputs` give the method
/// value bound to each.
struct Subgraph {
  ir::Graph graph;
  std::vector<int> inputs;
  std::vector<int> outputs;
};
Subgraph extract_subgraph(const ir::Graph& graph, const std::vector<int>& nodes);

}  // namespace tessera::compiler
