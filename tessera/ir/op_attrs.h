// Typed op attributes: one struct per row group of tessera/ir/op_attrs.def (ir::ConvAttrs,
// ir::GemmAttrs, ...), each with its defaults and a read() that checks types.
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>

#include "tessera/core/result.h"
#include "tessera/core/span.h"
#include "tessera/ir/attributes.h"
#include "tessera/ir/schema.h"

namespace tessera::ir {

struct Node;  // tessera/ir/graph.h: the compiler's mutable node

inline constexpr float kInf = std::numeric_limits<float>::infinity();

/// The C++ type of an attribute kind.
template <fb::AttrType K>
struct AttrValue;
template <>
struct AttrValue<fb::AttrType::Int> {
  using type = int64_t;
};
template <>
struct AttrValue<fb::AttrType::Float> {
  using type = float;
};
template <>
struct AttrValue<fb::AttrType::String> {
  using type = std::string_view;
};
template <>
struct AttrValue<fb::AttrType::Ints> {
  using type = Span<const int64_t>;
};
template <>
struct AttrValue<fb::AttrType::Floats> {
  using type = Span<const float>;
};

/// The struct of an op without attributes.
struct NoAttrs {
  /// Always succeeds: attributes the op does not declare are ignored.
  static Result<NoAttrs> read(const AttrView&) { return NoAttrs{}; }
  static Result<NoAttrs> read(const Node&) { return NoAttrs{}; }
};

// One struct per attribute group. read() returns the attributes with the table's defaults for
// absent ones. Errors (InvalidProgram, "<Op> node '<name>': ..."): an attribute of another type
// ("attribute 'alpha' has type Int, expected Float"), a missing required one ("missing required
// attribute 'axis'"). Views point into the node: `AttrView`'s program buffer, or the `Node`.
#define TESSERA_ATTRS_BEGIN(S, ops) struct S##Attrs {
#define TESSERA_ATTR(S, name, Kind, fallback, presence, doc) \
  AttrValue<fb::AttrType::Kind>::type name = fallback;
#define TESSERA_ATTRS_END(S)                           \
  static Result<S##Attrs> read(const AttrView& attrs); \
  static Result<S##Attrs> read(const Node& node);      \
  }                                                    \
  ;
#include "tessera/ir/op_attrs.def"
#undef TESSERA_ATTRS_BEGIN
#undef TESSERA_ATTR
#undef TESSERA_ATTRS_END

/// The spatial window attributes shared by Conv, ConvTranspose and the pools.
struct WindowAttrs {
  std::string_view auto_pad;
  Span<const int64_t> kernel_shape, strides, pads, dilations;
};
template <typename A>
WindowAttrs window_of(const A& a) {
  return WindowAttrs{a.auto_pad, a.kernel_shape, a.strides, a.pads, a.dilations};
}

}  // namespace tessera::ir
