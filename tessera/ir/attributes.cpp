#include "tessera/ir/attributes.h"

#include "tessera/ir/op.h"

namespace tessera::ir {

const fb::Attr* AttrView::find(std::string_view name) const {
  if (node_ == nullptr || node_->attrs() == nullptr) return nullptr;
  for (const fb::Attr* a : *node_->attrs()) {
    if (a->name()->string_view() == name) return a;
  }
  return nullptr;
}

std::string_view AttrView::node_name() const {
  return node_ && node_->name() ? node_->name()->string_view() : std::string_view();
}

Status AttrView::type_error(const fb::Attr* attr, const char* expected) const {
  std::string_view n = node_name();
  return Status::error(Error::InvalidProgram,
                       "%s node '%.*s': attribute '%s' has type %s, expected %s",
                       op_name(node_->op()), static_cast<int>(n.size()), n.data(),
                       attr->name()->c_str(), fb::EnumNameAttrType(attr->type()), expected);
}

Result<int64_t> AttrView::get_int(std::string_view name, int64_t fallback) const {
  const fb::Attr* a = find(name);
  if (a == nullptr) return fallback;
  if (a->type() != fb::AttrType::Int) return type_error(a, "Int");
  return a->i();
}

Result<float> AttrView::get_float(std::string_view name, float fallback) const {
  const fb::Attr* a = find(name);
  if (a == nullptr) return fallback;
  if (a->type() != fb::AttrType::Float) return type_error(a, "Float");
  return a->f();
}

Result<std::string_view> AttrView::get_string(std::string_view name,
                                              std::string_view fallback) const {
  const fb::Attr* a = find(name);
  if (a == nullptr) return fallback;
  if (a->type() != fb::AttrType::String) return type_error(a, "String");
  return a->s() ? a->s()->string_view() : std::string_view();
}

Result<Span<const int64_t>> AttrView::get_ints(std::string_view name) const {
  const fb::Attr* a = find(name);
  if (a == nullptr) return Span<const int64_t>();
  if (a->type() != fb::AttrType::Ints) return type_error(a, "Ints");
  if (a->ints() == nullptr) return Span<const int64_t>();
  return Span<const int64_t>(a->ints()->data(), a->ints()->size());
}

Result<Span<const float>> AttrView::get_floats(std::string_view name) const {
  const fb::Attr* a = find(name);
  if (a == nullptr) return Span<const float>();
  if (a->type() != fb::AttrType::Floats) return type_error(a, "Floats");
  if (a->floats() == nullptr) return Span<const float>();
  return Span<const float>(a->floats()->data(), a->floats()->size());
}

}  // namespace tessera::ir
