#include "tessera/core/evalue.h"

namespace tessera {

const char* evalue_tag_name(EValue::Tag tag) {
  switch (tag) {
    case EValue::Tag::None: return "none";
    case EValue::Tag::Int: return "int";
    case EValue::Tag::Double: return "double";
    case EValue::Tag::Bool: return "bool";
    case EValue::Tag::Tensor: return "tensor";
    case EValue::Tag::IntList: return "int_list";
  }
  return "?";
}

}  // namespace tessera
