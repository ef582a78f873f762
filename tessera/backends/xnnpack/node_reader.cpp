#include "tessera/backends/xnnpack/node_reader.h"

namespace tessera::xnnpack {
namespace {

fb::AttrType type_of(const fb::Attr& a) {
  return a.type();
}
fb::AttrType type_of(const ir::Attr& a) {
  return a.type;
}

// The attribute rule both readers follow: absent gives `fallback` (an empty list for the list
// getters), another type than `want` is false (the caller reports it), else `value` reads it.
template <typename Attr, typename T, typename Value>
bool read_attr(const Attr* a, fb::AttrType want, T fallback, T* out, Value value) {
  if (a == nullptr) {
    *out = fallback;
    return true;
  }
  if (type_of(*a) != want) return false;
  *out = value(*a);
  return true;
}

}  // namespace

// ---- fb::Graph ---------------------------------------------------------------------------------

std::string_view FbNodeReader::name() const {
  return node_.name() ? std::string_view(node_.name()->c_str(), node_.name()->size())
                      : std::string_view();
}

int FbNodeReader::num_inputs() const {
  return node_.inputs() ? static_cast<int>(node_.inputs()->size()) : 0;
}

int FbNodeReader::num_outputs() const {
  return node_.outputs() ? static_cast<int>(node_.outputs()->size()) : 0;
}

ValueFacts FbNodeReader::input(int i) const {
  if (i < 0 || i >= num_inputs()) return {};
  return facts(node_.inputs()->Get(static_cast<uint32_t>(i)));
}

ValueFacts FbNodeReader::output(int i) const {
  if (i < 0 || i >= num_outputs()) return {};
  return facts(node_.outputs()->Get(static_cast<uint32_t>(i)));
}

ValueFacts FbNodeReader::facts(int index) const {
  ValueFacts f;
  const auto* values = graph_.values();
  if (values == nullptr || index < 0 || static_cast<uint32_t>(index) >= values->size()) return f;
  const fb::Value* v = values->Get(static_cast<uint32_t>(index));
  f.present = true;
  f.index = index;
  f.is_tensor = v->kind() == fb::ValueKind::Tensor;
  f.dtype = static_cast<ScalarType>(v->dtype());
  f.constant = v->constant();
  const size_t rank = v->dims() ? v->dims()->size() : 0;
  if (rank > static_cast<size_t>(kMaxDims)) {
    f.present = false;  // not representable; reported as unsupported
    return f;
  }
  if (view_ != nullptr) {
    f.dims = view_->dims(index);
    f.symbolic = view_->value(index).symbolic;
    return f;
  }
  f.dims.rank = static_cast<int>(rank);
  for (size_t d = 0; d < rank; ++d) {
    const fb::Dim* dim = v->dims()->Get(static_cast<uint32_t>(d));
    f.dims.d[d] = dim->value();
    f.symbolic |= dim->expr() != nullptr && dim->expr()->size() > 0;
  }
  return f;
}

const fb::Attr* FbNodeReader::find(std::string_view name) const {
  if (node_.attrs() == nullptr) return nullptr;
  for (const fb::Attr* a : *node_.attrs()) {
    if (std::string_view(a->name()->c_str(), a->name()->size()) == name) return a;
  }
  return nullptr;
}

bool FbNodeReader::has_attr(std::string_view name) const {
  return find(name) != nullptr;
}

bool FbNodeReader::attr_int(std::string_view name, int64_t fallback, int64_t* out) const {
  return read_attr(find(name), fb::AttrType::Int, fallback, out,
                   [](const fb::Attr& a) { return a.i(); });
}

bool FbNodeReader::attr_float(std::string_view name, float fallback, float* out) const {
  return read_attr(find(name), fb::AttrType::Float, fallback, out,
                   [](const fb::Attr& a) { return a.f(); });
}

bool FbNodeReader::attr_string(std::string_view name, std::string_view fallback,
                               std::string_view* out) const {
  return read_attr(find(name), fb::AttrType::String, fallback, out, [](const fb::Attr& a) {
    return a.s() ? std::string_view(a.s()->c_str(), a.s()->size()) : std::string_view();
  });
}

bool FbNodeReader::attr_ints(std::string_view name, Span<const int64_t>* out) const {
  return read_attr(find(name), fb::AttrType::Ints, Span<const int64_t>(), out,
                   [](const fb::Attr& a) {
                     return a.ints() ? Span<const int64_t>(a.ints()->data(), a.ints()->size())
                                     : Span<const int64_t>();
                   });
}

bool FbNodeReader::attr_floats(std::string_view name, Span<const float>* out) const {
  return read_attr(find(name), fb::AttrType::Floats, Span<const float>(), out,
                   [](const fb::Attr& a) {
                     return a.floats() ? Span<const float>(a.floats()->data(), a.floats()->size())
                                       : Span<const float>();
                   });
}

// ---- ir::Graph ---------------------------------------------------------------------------------

ValueFacts IrNodeReader::input(int i) const {
  if (i < 0 || i >= num_inputs()) return {};
  return facts(node_.inputs[static_cast<size_t>(i)]);
}

ValueFacts IrNodeReader::output(int i) const {
  if (i < 0 || i >= num_outputs()) return {};
  return facts(node_.outputs[static_cast<size_t>(i)]);
}

ValueFacts IrNodeReader::facts(int index) const {
  ValueFacts f;
  if (index < 0 || static_cast<size_t>(index) >= graph_.values.size()) return f;
  const ir::Value& v = graph_.values[static_cast<size_t>(index)];
  if (v.dims.size() > static_cast<size_t>(kMaxDims)) return f;
  f.present = true;
  f.index = index;
  f.is_tensor = v.kind == fb::ValueKind::Tensor;
  f.dtype = v.dtype;
  f.constant = v.constant;
  f.dims.rank = static_cast<int>(v.dims.size());
  for (size_t d = 0; d < v.dims.size(); ++d) {
    f.dims.d[d] = v.dims[d].value;
    f.symbolic |= !v.dims[d].is_static();
  }
  return f;
}

const ir::Attr* IrNodeReader::find(std::string_view name) const {
  for (const ir::Attr& a : node_.attrs) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

bool IrNodeReader::has_attr(std::string_view name) const {
  return find(name) != nullptr;
}

bool IrNodeReader::attr_int(std::string_view name, int64_t fallback, int64_t* out) const {
  return read_attr(find(name), fb::AttrType::Int, fallback, out,
                   [](const ir::Attr& a) { return a.i; });
}

bool IrNodeReader::attr_float(std::string_view name, float fallback, float* out) const {
  return read_attr(find(name), fb::AttrType::Float, fallback, out,
                   [](const ir::Attr& a) { return a.f; });
}

bool IrNodeReader::attr_string(std::string_view name, std::string_view fallback,
                               std::string_view* out) const {
  return read_attr(find(name), fb::AttrType::String, fallback, out,
                   [](const ir::Attr& a) { return std::string_view(a.s); });
}

bool IrNodeReader::attr_ints(std::string_view name, Span<const int64_t>* out) const {
  return read_attr(
      find(name), fb::AttrType::Ints, Span<const int64_t>(), out,
      [](const ir::Attr& a) { return Span<const int64_t>(a.ints.data(), a.ints.size()); });
}

bool IrNodeReader::attr_floats(std::string_view name, Span<const float>* out) const {
  return read_attr(
      find(name), fb::AttrType::Floats, Span<const float>(), out,
      [](const ir::Attr& a) { return Span<const float>(a.floats.data(), a.floats.size()); });
}

}  // namespace tessera::xnnpack
