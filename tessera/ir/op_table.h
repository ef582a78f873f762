// The op table as data: what tessera/ir/ops.def and tessera/ir/op_attrs.def say about each op,
// for code that iterates over ops (load validation, the importer's direct map, gen-ops-doc).
#pragma once

#include <cstddef>
#include <cstdint>

#include "tessera/core/span.h"
#include "tessera/core/status.h"
#include "tessera/ir/schema.h"

namespace tessera::ir {

/// No upper limit on an arity.
inline constexpr size_t kAnyCount = SIZE_MAX;

/// One attribute of an op.
struct AttrInfo {
  const char* name;
  fb::AttrType kind;
  const char* fallback;  // the default as written in op_attrs.def ("0.01f", "\"none\"", "{}")
  bool required;
  const char* doc;
};

/// How the ONNX importer produces an op (tessera/ir/ops.def's import column).
enum class OpImport {
  Direct,    // the ONNX op of the same name maps one to one
  Custom,    // an importer of its own in tessera/compiler/onnx/*_ops.cpp
  Internal,  // no ONNX op: only a compiler pass produces it
};

/// One op.
struct OpInfo {
  fb::OpType op;
  const char* name;
  const char* attrs_struct;  // "ConvAttrs", "NoAttrs"
  size_t inputs_min, inputs_max;
  size_t outputs_min, outputs_max;
  bool fused_activation;  // a producer that can carry a fused Relu/Clip
  const char* kernel;     // portable kernel family (prepare_<kernel>)
  OpImport import;
  bool same_shape;        // the output has input 0's shape and dtype
  Span<const AttrInfo> attrs;
};

/// Every op, in OpType order.
Span<const OpInfo> op_table();
/// The row of `op`; nullptr for a value outside the enum.
const OpInfo* op_info(fb::OpType op);

/// Checks `node` against its row: arity (trailing absent inputs do not count; the first
/// inputs_min present) and the types of its declared attributes (attributes the op does not
/// declare are ignored). Errors: InvalidProgram "<Op> node '<name>': ...".
Status validate_node_against_table(const fb::Node* node);

}  // namespace tessera::ir
