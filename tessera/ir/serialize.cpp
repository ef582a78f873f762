#include "tessera/ir/serialize.h"

namespace tessera::ir {

SymbolsOffset serialize_symbols(flatbuffers::FlatBufferBuilder& b, const std::vector<Symbol>& s) {
  std::vector<flatbuffers::Offset<fb::Symbol>> out;
  out.reserve(s.size());
  for (const Symbol& sym : s) out.push_back(fb::CreateSymbol(b, b.CreateString(sym.name), sym.min, sym.max));
  return b.CreateVector(out);
}

ValuesOffset serialize_values(flatbuffers::FlatBufferBuilder& b, const std::vector<Value>& v) {
  std::vector<flatbuffers::Offset<fb::Value>> out;
  out.reserve(v.size());
  for (const Value& val : v) {
    std::vector<flatbuffers::Offset<fb::Dim>> dims;
    dims.reserve(val.dims.size());
    for (const Dim& d : val.dims) {
      flatbuffers::Offset<flatbuffers::Vector<const fb::ShapeTerm*>> expr = 0;
      if (!d.expr.empty()) {
        std::vector<fb::ShapeTerm> terms;
        terms.reserve(d.expr.size());
        for (const ShapeTerm& t : d.expr) terms.emplace_back(t.op, t.value);
        expr = b.CreateVectorOfStructs(terms);
      }
      dims.push_back(fb::CreateDim(b, d.value, expr));
    }
    auto name = val.name.empty() ? 0 : b.CreateString(val.name);
    auto dims_off = b.CreateVector(dims);
    auto order = val.dim_order.empty() ? 0 : b.CreateVector(val.dim_order);
    auto ints = val.ints.empty() ? 0 : b.CreateVector(val.ints);
    out.push_back(fb::CreateValue(b, val.kind, name, static_cast<fb::ScalarType>(val.dtype),
                                  dims_off, order, val.constant, val.arena_offset, val.int_value,
                                  ints));
  }
  return b.CreateVector(out);
}

flatbuffers::Offset<fb::Node> serialize_node(flatbuffers::FlatBufferBuilder& b, const Node& n) {
  std::vector<flatbuffers::Offset<fb::Attr>> attrs;
  attrs.reserve(n.attrs.size());
  for (const Attr& a : n.attrs) {
    auto name = b.CreateString(a.name);
    auto ints = a.type == fb::AttrType::Ints ? b.CreateVector(a.ints) : 0;
    auto floats = a.type == fb::AttrType::Floats ? b.CreateVector(a.floats) : 0;
    auto s = a.type == fb::AttrType::String ? b.CreateString(a.s) : 0;
    attrs.push_back(fb::CreateAttr(b, name, a.type, a.i, a.f, ints, floats, s));
  }
  auto name = n.name.empty() ? 0 : b.CreateString(n.name);
  auto inputs = b.CreateVector(n.inputs);
  auto outputs = b.CreateVector(n.outputs);
  auto attrs_off = b.CreateVector(attrs);
  return fb::CreateNode(b, n.op, name, inputs, outputs, attrs_off, n.activation, n.activation_min,
                        n.activation_max);
}

}  // namespace tessera::ir
