// Which portable-IR nodes the XNNPACK backend can run, for the ahead-of-time partitioner.
//
// The check is local to one node (op, dtypes, ranks, constant weights, attribute limits of the
// linked XNNPACK version). Layout changes between neighbouring supported nodes never make a
// partition invalid: the backend converts inside the delegate where it must (see
// subgraph_builder.h), so the partitioner may keep delegates as large as possible.
#pragma once

#include <string>

#include "tessera/ir/graph.h"
#include "tessera/ir/schema.h"

namespace tessera::xnnpack {

/// Whether the XNNPACK backend can run `node` of the compiler's in-memory graph. Values with
/// `constant >= 0` count as constants (weights must be). Dims are read at their upper bounds.
/// When false and `why` is not null, `*why` gets the reason ("xnnpack: Conv node 'c1': ...").
bool xnnpack_supports(const ir::Graph& graph, const ir::Node& node, std::string* why = nullptr);

/// The same for a node of a serialised graph (a delegate payload).
bool xnnpack_supports(const fb::Graph& graph, const fb::Node& node, std::string* why = nullptr);

}  // namespace tessera::xnnpack
