#include "tessera/ir/op_attrs.h"

#include <type_traits>

#include "tessera/ir/graph.h"
#include "tessera/ir/op.h"

namespace tessera::ir {
namespace {

enum Presence { Optional, Required };

/// The compiler's node seen through AttrView's interface.
class NodeAttrs {
 public:
  explicit NodeAttrs(const Node& node) : node_(node) {}

  bool has(std::string_view name) const { return find(name) != nullptr; }
  Result<int64_t> get_int(std::string_view name, int64_t fallback) const {
    const Attr* a = find(name);
    if (a == nullptr) return fallback;
    if (a->type != fb::AttrType::Int) return type_error(*a, "Int");
    return a->i;
  }
  Result<float> get_float(std::string_view name, float fallback) const {
    const Attr* a = find(name);
    if (a == nullptr) return fallback;
    if (a->type != fb::AttrType::Float) return type_error(*a, "Float");
    return a->f;
  }
  Result<std::string_view> get_string(std::string_view name, std::string_view fallback) const {
    const Attr* a = find(name);
    if (a == nullptr) return fallback;
    if (a->type != fb::AttrType::String) return type_error(*a, "String");
    return std::string_view(a->s);
  }
  Result<Span<const int64_t>> get_ints(std::string_view name) const {
    const Attr* a = find(name);
    if (a == nullptr) return Span<const int64_t>();
    if (a->type != fb::AttrType::Ints) return type_error(*a, "Ints");
    return Span<const int64_t>(a->ints.data(), a->ints.size());
  }
  Result<Span<const float>> get_floats(std::string_view name) const {
    const Attr* a = find(name);
    if (a == nullptr) return Span<const float>();
    if (a->type != fb::AttrType::Floats) return type_error(*a, "Floats");
    return Span<const float>(a->floats.data(), a->floats.size());
  }
  std::string_view node_name() const { return node_.name; }
  fb::OpType op() const { return node_.op; }

 private:
  const Attr* find(std::string_view name) const {
    for (const Attr& a : node_.attrs) {
      if (a.name == name) return &a;
    }
    return nullptr;
  }
  Status type_error(const Attr& a, const char* expected) const {
    return Status::error(Error::InvalidProgram,
                         "%s node '%s': attribute '%s' has type %s, expected %s", op_name(node_.op),
                         node_.name.c_str(), a.name.c_str(), fb::EnumNameAttrType(a.type),
                         expected);
  }

  const Node& node_;
};

fb::OpType op_of(const AttrView& v) {
  return v.op();
}
fb::OpType op_of(const NodeAttrs& v) {
  return v.op();
}

template <typename Source, typename T>
Status read_attr(const Source& src, const char* name, Presence presence, T* out) {
  if (presence == Required && !src.has(name)) {
    std::string_view n = src.node_name();
    return Status::error(Error::InvalidProgram, "%s node '%.*s': missing required attribute '%s'",
                         op_name(op_of(src)), static_cast<int>(n.size()), n.data(), name);
  }
  if constexpr (std::is_same_v<T, int64_t>) {
    TESSERA_ASSIGN_OR_RETURN(*out, src.get_int(name, *out));
  } else if constexpr (std::is_same_v<T, float>) {
    TESSERA_ASSIGN_OR_RETURN(*out, src.get_float(name, *out));
  } else if constexpr (std::is_same_v<T, std::string_view>) {
    TESSERA_ASSIGN_OR_RETURN(*out, src.get_string(name, *out));
  } else if constexpr (std::is_same_v<T, Span<const int64_t>>) {
    TESSERA_ASSIGN_OR_RETURN(*out, src.get_ints(name));
  } else {
    static_assert(std::is_same_v<T, Span<const float>>);
    TESSERA_ASSIGN_OR_RETURN(*out, src.get_floats(name));
  }
  return Status::ok();
}

#define TESSERA_ATTRS_BEGIN(S, ops)              \
  template <typename Source>                     \
  Result<S##Attrs> read_##S(const Source& src) { \
    S##Attrs a;
#define TESSERA_ATTR(S, name, Kind, fallback, presence, doc) \
  TESSERA_RETURN_IF_ERROR(read_attr(src, #name, presence, &a.name));
#define TESSERA_ATTRS_END(S) \
  return a;                  \
  }
#include "tessera/ir/op_attrs.def"
#undef TESSERA_ATTRS_BEGIN
#undef TESSERA_ATTR
#undef TESSERA_ATTRS_END

}  // namespace

#define TESSERA_ATTRS_BEGIN(S, ops)                        \
  Result<S##Attrs> S##Attrs::read(const AttrView& attrs) { \
    return read_##S(attrs);                                \
  }                                                        \
  Result<S##Attrs> S##Attrs::read(const Node& node) {      \
    return read_##S(NodeAttrs(node));                      \
  }
#define TESSERA_ATTR(S, name, Kind, fallback, presence, doc)
#define TESSERA_ATTRS_END(S)
#include "tessera/ir/op_attrs.def"
#undef TESSERA_ATTRS_BEGIN
#undef TESSERA_ATTR
#undef TESSERA_ATTRS_END

}  // namespace tessera::ir
