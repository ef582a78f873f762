#include "tessera/ir/op_table.h"

#include "tessera/ir/attributes.h"
#include "tessera/ir/op.h"
#include "tessera/ir/op_attrs.h"

namespace tessera::ir {
namespace {

enum Presence { Optional, Required };
enum ActivationUse { Plain, Fused };
enum ShapeRule { Inferred, Input0 };

// The attribute rows of each struct: k<Struct>AttrInfo.
#define TESSERA_ATTRS_BEGIN(S, ops) constexpr AttrInfo k##S##AttrInfo[] = {
#define TESSERA_ATTR(S, name, Kind, fallback, presence, doc) \
  {#name, fb::AttrType::Kind, #fallback, presence == Required, doc},
#define TESSERA_ATTRS_END(S) \
  }                          \
  ;
#include "tessera/ir/op_attrs.def"
#undef TESSERA_ATTRS_BEGIN
#undef TESSERA_ATTR
#undef TESSERA_ATTRS_END

template <size_t N>
constexpr Span<const AttrInfo> attr_span(const AttrInfo (&a)[N]) {
  return Span<const AttrInfo>(a, N);
}
constexpr Span<const AttrInfo> kNoAttrInfo;
#define TESSERA_ATTR_SPAN(S) attr_span(k##S##AttrInfo)

#define TESSERA_OP(name, attrs, in_min, in_max, out_min, out_max, act, kernel, import, shape) \
  OpInfo{fb::OpType::name, #name,           #attrs "Attrs",                                   \
         in_min,           in_max,          out_min,                                          \
         out_max,          act == Fused,    #kernel,                                          \
         OpImport::import, shape == Input0, attrs_of_##attrs()},

// Every struct's span, by name (No: none).
Span<const AttrInfo> attrs_of_No() {
  return kNoAttrInfo;
}
#define TESSERA_ATTRS_BEGIN(S, ops)     \
  Span<const AttrInfo> attrs_of_##S() { \
    return TESSERA_ATTR_SPAN(S);        \
  }
#define TESSERA_ATTR(S, name, Kind, fallback, presence, doc)
#define TESSERA_ATTRS_END(S)
#include "tessera/ir/op_attrs.def"
#undef TESSERA_ATTRS_BEGIN
#undef TESSERA_ATTR
#undef TESSERA_ATTRS_END

const OpInfo kOps[] = {
#include "tessera/ir/ops.def"
};
#undef TESSERA_OP

constexpr size_t kNumOps = sizeof(kOps) / sizeof(kOps[0]);
static_assert(kNumOps == static_cast<size_t>(fb::OpType::MAX) + 1,
              "tessera/ir/ops.def needs one row per OpType of schema/program.fbs");

Status read_declared_attrs(const fb::Node* node) {
  AttrView view(node);
  switch (node->op()) {
#define TESSERA_OP(name, attrs, in_min, in_max, out_min, out_max, act, kernel, import, shape) \
  case fb::OpType::name:                                                                      \
    return attrs##Attrs::read(view).status();
#include "tessera/ir/ops.def"
#undef TESSERA_OP
  }
  return Status::error(Error::InvalidProgram, "unknown op %d", static_cast<int>(node->op()));
}

}  // namespace

Span<const OpInfo> op_table() {
  return Span<const OpInfo>(kOps, kNumOps);
}

const OpInfo* op_info(fb::OpType op) {
  const int v = static_cast<int>(op);
  if (!is_valid_op(v)) return nullptr;
  return &kOps[v];
}

Status validate_node_against_table(const fb::Node* node) {
  const OpInfo* info = op_info(node->op());
  if (info == nullptr) {
    return Status::error(Error::InvalidProgram, "unknown op %d", static_cast<int>(node->op()));
  }
  const std::string_view name = node->name() ? node->name()->string_view() : std::string_view();
  auto fail = [&](const char* what, size_t n, size_t lo, size_t hi) {
    if (hi == kAnyCount) {
      return Status::error(Error::InvalidProgram, "%s node '%.*s': %zu %s, expected at least %zu",
                           info->name, static_cast<int>(name.size()), name.data(), n, what, lo);
    }
    return Status::error(Error::InvalidProgram, "%s node '%.*s': %zu %s, expected %zu to %zu",
                         info->name, static_cast<int>(name.size()), name.data(), n, what, lo, hi);
  };
  size_t n_in = node->inputs() ? node->inputs()->size() : 0;
  while (n_in > info->inputs_min && node->inputs()->Get(n_in - 1) < 0) --n_in;
  if (n_in < info->inputs_min || n_in > info->inputs_max) {
    return fail("inputs", n_in, info->inputs_min, info->inputs_max);
  }
  for (size_t i = 0; i < info->inputs_min; ++i) {
    if (node->inputs()->Get(i) < 0) {
      return Status::error(Error::InvalidProgram, "%s node '%.*s': required input %zu is absent",
                           info->name, static_cast<int>(name.size()), name.data(), i);
    }
  }
  const size_t n_out = node->outputs() ? node->outputs()->size() : 0;
  if (n_out < info->outputs_min || n_out > info->outputs_max) {
    return fail("outputs", n_out, info->outputs_min, info->outputs_max);
  }
  return read_declared_attrs(node);
}

}  // namespace tessera::ir
