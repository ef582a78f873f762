// FlatBuffers serialisation of the in-memory IR pieces (shared by encode_graph and
// ProgramBuilder).
#pragma once

#include <vector>

#include "tessera/ir/graph.h"

namespace tessera::ir {

using SymbolsOffset = flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Symbol>>>;
using ValuesOffset = flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Value>>>;

SymbolsOffset serialize_symbols(flatbuffers::FlatBufferBuilder& b, const std::vector<Symbol>& s);
ValuesOffset serialize_values(flatbuffers::FlatBufferBuilder& b, const std::vector<Value>& v);
flatbuffers::Offset<fb::Node> serialize_node(flatbuffers::FlatBufferBuilder& b, const Node& n);

}  // namespace tessera::ir
