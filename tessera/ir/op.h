// Names of the portable graph IR's ops (ONNX spelling).
#pragma once

#include <string_view>

#include "tessera/ir/schema.h"

namespace tessera::ir {

using OpType = fb::OpType;

/// "Conv", "Add", ...; "?" for an out-of-range value.
const char* op_name(OpType op);
/// The op named `name`, or false.
bool op_from_name(std::string_view name, OpType* out);
/// True if `v` is a declared OpType value.
bool is_valid_op(int v);

}  // namespace tessera::ir
