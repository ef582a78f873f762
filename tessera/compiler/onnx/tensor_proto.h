// ONNX element types and tensors as tessera sees them.
#pragma once

#include "tessera/core/scalar_type.h"

namespace tessera::compiler::importer {

/// ONNX element type -> tessera type. `exact` is false for types held in a wider tessera type
/// (double as float32, 16/32/64-bit unsigned and int16 as int64): fine for compile-time data.
/// False for a type tessera has no place for.
bool map_onnx_type(int onnx_type, ScalarType* out, bool* exact);

/// The ONNX name of element type `t` ("FLOAT", "INT64"); "?" for a value outside the enum.
const char* onnx_type_name(int t);

}  // namespace tessera::compiler::importer
