// ModelGraph: the compiler's working graph. Nodes are portable IR nodes (ir::Node); values carry
// symbolic dims (SymExpr) and, when known at compile time, their data (HostTensor). Passes work
// here; lower.h turns it into the program's ir::Graph at the end.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/compiler/sym_expr.h"
#include "tessera/core/scalar_type.h"
#include "tessera/ir/graph.h"

namespace tessera::compiler {

/// Tensor data known at compile time. Floating-point types are held as float (Float16
/// converted), integer and bool types as int64; integer tensors computed from symbolic shapes
/// hold SymExpr elements instead (`sym` non-empty, `i` empty).
struct HostTensor {
  ScalarType dtype = ScalarType::Float32;
  std::vector<int64_t> dims;
  std::vector<float> f;
  std::vector<int64_t> i;
  std::vector<SymExpr> sym;

  static bool is_float_type(ScalarType t) {
    return t == ScalarType::Float32 || t == ScalarType::Float16;
  }
  bool is_float() const { return is_float_type(dtype); }
  bool is_symbolic() const { return !sym.empty(); }
  int64_t numel() const;
  /// Integer element k as an expression (works for symbolic and concrete integer tensors).
  SymExpr int_at(size_t k) const { return is_symbolic() ? sym[k] : SymExpr(i[k]); }
  /// Integer elements as int64 when none is symbolic.
  bool to_ints(std::vector<int64_t>* out) const;
  /// Element k converted to double (concrete tensors only).
  double as_double(size_t k) const { return is_float() ? f[k] : static_cast<double>(i[k]); }
  /// Little-endian bytes in `dtype`, as stored in the program's constant segment.
  std::vector<uint8_t> to_bytes() const;
  /// The tensor of `dtype` and `dims` whose elements are the little-endian bytes at `data`
  /// (numel * element_size bytes, read only), the inverse of to_bytes().
  static HostTensor from_bytes(ScalarType dtype, std::vector<int64_t> dims, const uint8_t* data);
  /// A scalar float / int64 tensor.
  static HostTensor scalar_float(float v);
  static HostTensor ints(std::vector<int64_t> values);
};

using HostTensorPtr = std::shared_ptr<const HostTensor>;

struct Value {
  std::string name;
  ScalarType dtype = ScalarType::Float32;
  std::vector<SymExpr> dims;
  HostTensorPtr data;  // known at compile time (weights, folded constants, shape values)

  bool is_const() const { return data != nullptr; }
  /// True if every dim is a constant.
  bool is_static() const;
  /// Dims as int64 when static.
  bool static_dims(std::vector<int64_t>* out) const;
};

struct ModelGraph {
  std::vector<ir::Symbol> symbols;
  std::vector<Value> values;
  std::vector<ir::Node> nodes;  // topological order
  std::vector<int> inputs;
  std::vector<int> outputs;
  /// Names of the graph outputs (the model's), parallel to `outputs`; empty = the values' names.
  std::vector<std::string> output_names;

  int add_value(std::string name, ScalarType dtype, std::vector<SymExpr> dims);
  int add_const(std::string name, HostTensorPtr data);
  /// "batch*16" style rendering of value v's dims: "[batch, 3, 224, 224]".
  std::string dims_string(int v) const;
  std::string dims_string(const std::vector<SymExpr>& dims) const;
  /// Number of node inputs reading each value, plus one for each graph output.
  std::vector<int> use_counts() const;
  /// For each value, the index of the node producing it, or -1.
  std::vector<int> producers() const;
};

/// Human name of a node for messages: its name, else "<Op> #index".
std::string node_label(const ir::Node& node, size_t index);

}  // namespace tessera::compiler
