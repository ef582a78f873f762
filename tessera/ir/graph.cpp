#include "tessera/ir/graph.h"

#include "tessera/ir/serialize.h"

namespace tessera::ir {

Attr Attr::make_int(std::string n, int64_t v) {
  Attr a;
  a.name = std::move(n);
  a.type = fb::AttrType::Int;
  a.i = v;
  return a;
}
Attr Attr::make_float(std::string n, float v) {
  Attr a;
  a.name = std::move(n);
  a.type = fb::AttrType::Float;
  a.f = v;
  return a;
}
Attr Attr::make_ints(std::string n, std::vector<int64_t> v) {
  Attr a;
  a.name = std::move(n);
  a.type = fb::AttrType::Ints;
  a.ints = std::move(v);
  return a;
}
Attr Attr::make_floats(std::string n, std::vector<float> v) {
  Attr a;
  a.name = std::move(n);
  a.type = fb::AttrType::Floats;
  a.floats = std::move(v);
  return a;
}
Attr Attr::make_string(std::string n, std::string v) {
  Attr a;
  a.name = std::move(n);
  a.type = fb::AttrType::String;
  a.s = std::move(v);
  return a;
}

size_t Value::max_nbytes() const {
  if (kind != fb::ValueKind::Tensor) return 0;
  size_t n = element_size(dtype);
  for (const Dim& d : dims) n *= static_cast<size_t>(d.value < 0 ? 0 : d.value);
  return n;
}

const Attr* Node::find_attr(const std::string& n) const {
  for (const Attr& a : attrs) {
    if (a.name == n) return &a;
  }
  return nullptr;
}

std::vector<uint8_t> encode_graph(const Graph& graph) {
  flatbuffers::FlatBufferBuilder b(1024);
  auto symbols = serialize_symbols(b, graph.symbols);
  auto values = serialize_values(b, graph.values);
  std::vector<flatbuffers::Offset<fb::Node>> nodes;
  nodes.reserve(graph.nodes.size());
  for (const Node& n : graph.nodes) nodes.push_back(serialize_node(b, n));
  // One builder call per statement: two in one expression run in an unspecified order (GCC and
  // clang differ), and the encoded bytes with it. (GCC's order, so that its bytes stay.)
  auto outputs = b.CreateVector(graph.outputs);
  auto inputs = b.CreateVector(graph.inputs);
  auto nodes_off = b.CreateVector(nodes);
  auto g = fb::CreateGraph(b, symbols, values, nodes_off, inputs, outputs);
  b.Finish(g);
  return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

}  // namespace tessera::ir
