#include "tessera/backends/xnnpack/node_reader.h"

namespace tessera::xnnpack {

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
  if (!resolved_.empty() && static_cast<size_t>(index) < resolved_.size()) {
    f.dims = resolved_[static_cast<size_t>(index)];
    for (size_t d = 0; d < rank; ++d) f.symbolic |= v->dims()->Get(d)->expr() != nullptr;
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
  const fb::Attr* a = find(name);
  if (a == nullptr) {
    *out = fallback;
    return true;
  }
  if (a->type() != fb::AttrType::Int) return false;
  *out = a->i();
  return true;
}

bool FbNodeReader::attr_float(std::string_view name, float fallback, float* out) const {
  const fb::Attr* a = find(name);
  if (a == nullptr) {
    *out = fallback;
    return true;
  }
  if (a->type() != fb::AttrType::Float) return false;
  *out = a->f();
  return true;
}

bool FbNodeReader::attr_string(std::string_view name, std::string_view fallback,
                               std::string_view* out) const {
  const fb::Attr* a = find(name);
  if (a == nullptr) {
    *out = fallback;
    return true;
  }
  if (a->type() != fb::AttrType::String) return false;
  *out = a->s() ? std::string_view(a->s()->c_str(), a->s()->size()) : std::string_view();
  return true;
}

bool FbNodeReader::attr_ints(std::string_view name, Span<const int64_t>* out) const {
  const fb::Attr* a = find(name);
  *out = {};
  if (a == nullptr) return true;
  if (a->type() != fb::AttrType::Ints) return false;
  if (a->ints()) *out = {a->ints()->data(), a->ints()->size()};
  return true;
}

bool FbNodeReader::attr_floats(std::string_view name, Span<const float>* out) const {
  const fb::Attr* a = find(name);
  *out = {};
  if (a == nullptr) return true;
  if (a->type() != fb::AttrType::Floats) return false;
  if (a->floats()) *out = {a->floats()->data(), a->floats()->size()};
  return true;
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
  const ir::Attr* a = find(name);
  if (a == nullptr) {
    *out = fallback;
    return true;
  }
  if (a->type != fb::AttrType::Int) return false;
  *out = a->i;
  return true;
}

bool IrNodeReader::attr_float(std::string_view name, float fallback, float* out) const {
  const ir::Attr* a = find(name);
  if (a == nullptr) {
    *out = fallback;
    return true;
  }
  if (a->type != fb::AttrType::Float) return false;
  *out = a->f;
  return true;
}

bool IrNodeReader::attr_string(std::string_view name, std::string_view fallback,
                               std::string_view* out) const {
  const ir::Attr* a = find(name);
  if (a == nullptr) {
    *out = fallback;
    return true;
  }
  if (a->type != fb::AttrType::String) return false;
  *out = a->s;
  return true;
}

bool IrNodeReader::attr_ints(std::string_view name, Span<const int64_t>* out) const {
  const ir::Attr* a = find(name);
  *out = {};
  if (a == nullptr) return true;
  if (a->type != fb::AttrType::Ints) return false;
  *out = {a->ints.data(), a->ints.size()};
  return true;
}

bool IrNodeReader::attr_floats(std::string_view name, Span<const float>* out) const {
  const ir::Attr* a = find(name);
  *out = {};
  if (a == nullptr) return true;
  if (a->type != fb::AttrType::Floats) return false;
  *out = {a->floats.data(), a->floats.size()};
  return true;
}

}  // namespace tessera::xnnpack
