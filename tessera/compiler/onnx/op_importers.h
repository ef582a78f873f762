// The ONNX importer's op table: ONNX op name -> the function that imports a node of it. Ops that
// tessera/ir/ops.def marks Direct are in it automatically; every other ONNX op the importer takes
// has a row in the file of its concern (shape_ops.cpp, nn_ops.cpp, elementwise_ops.cpp,
// layout_ops.cpp).
#pragma once

#include <string_view>

#include "tessera/compiler/onnx/importer.h"
#include "tessera/core/span.h"
#include "tessera/ir/schema.h"

namespace tessera::compiler::importer {

/// Imports the Importer's current node. `op` is the row's IR op (one function can serve several
/// ONNX ops: MaxPool and AveragePool, the Reduce ops, ...).
using ImportFn = Status (*)(Importer& im, fb::OpType op);

/// One row: the ONNX op (default domain) and its importer.
struct OpImporter {
  std::string_view onnx_op;
  ImportFn import;
  fb::OpType op;  // passed to `import`; the IR op it emits, or Identity when it emits none
};

/// The importer of ONNX op `onnx_op`; nullptr when the importer does not take it.
const OpImporter* find_op_importer(std::string_view onnx_op);
/// Every row, the Direct ones of tessera/ir/ops.def first, then the custom ones by concern.
Span<const OpImporter> op_importers();

// The custom rows, one list per file of concern.
Span<const OpImporter> shape_op_importers();        // shape_ops.cpp
Span<const OpImporter> nn_op_importers();           // nn_ops.cpp
Span<const OpImporter> elementwise_op_importers();  // elementwise_ops.cpp
Span<const OpImporter> layout_op_importers();       // layout_ops.cpp

}  // namespace tessera::compiler::importer
