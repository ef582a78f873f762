#include "tessera/ir/op.h"

namespace tessera::ir {

bool is_valid_op(int v) {
  return v >= static_cast<int>(fb::OpType::MIN) && v <= static_cast<int>(fb::OpType::MAX);
}

const char* op_name(OpType op) {
  if (!is_valid_op(static_cast<int>(op))) return "?";
  return fb::EnumNameOpType(op);
}

bool op_from_name(std::string_view name, OpType* out) {
  for (int v = static_cast<int>(fb::OpType::MIN); v <= static_cast<int>(fb::OpType::MAX); ++v) {
    if (name == fb::EnumNamesOpType()[v]) {
      *out = static_cast<OpType>(v);
      return true;
    }
  }
  return false;
}

}  // namespace tessera::ir
