// ONNX import: a ModelProto (opsets 11 to 17) becomes a ModelGraph of portable IR nodes.
//
// The model is checked with onnx::checker, shapes are inferred over symbolic dims, and the shape
// arithmetic exporters emit (Shape, Gather, Unsqueeze, Concat, Slice, Cast, Mul, Div, Constant,
// ConstantOfShape, Range, Expand, ...) is evaluated at compile time, also when it depends on a
// symbolic dim such as `batch`: the results become shape expressions the runtime evaluates once
// at load, never shape ops run at execute. Identity and Dropout disappear.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/compiler/model_graph.h"
#include "tessera/core/result.h"

namespace tessera::compiler {

/// Bounds of a symbolic dim named by an ONNX `dim_param`, e.g. batch in [1, 8].
struct DimBound {
  std::string name;
  int64_t min = 1;
  int64_t max = 1;
};

struct ImportOptions {
  /// Bounds for every symbolic dim of the model's inputs. A symbolic dim without bounds is an
  /// error naming it; a bound naming no dim of the model is an error too.
  std::vector<DimBound> dims;
  /// Directory holding external tensor data files (the model file's directory).
  std::string external_data_dir;
  /// Run onnx::checker::check_model first (turn off only for models the checker rejects wrongly).
  bool check_model = true;
  /// Compare the imported shapes with onnx::shape_inference::InferShapes afterwards.
  bool onnx_shape_check = true;
};

/// Imports a serialized ONNX ModelProto. Errors: InvalidProgram for malformed or inconsistent
/// models, NotSupported for `unsupported ONNX op 'X' in node 'name' (opset N)` and other
/// features outside the portable IR, InvalidArgument for missing or unused dim bounds.
Result<ModelGraph> import_onnx(const void* data, size_t size, const ImportOptions& options);

/// Reads and imports `path`; external data is looked up beside it.
Result<ModelGraph> import_onnx_file(const std::string& path, ImportOptions options);

/// Parses "NAME=MIN:MAX" (or "NAME=N" for MIN = MAX = N).
Result<DimBound> parse_dim_bound(const std::string& text);

}  // namespace tessera::compiler
