// The in-memory portable graph IR, used ahead of time (compiler, ProgramBuilder, preprocess).
// At run time the same structure is read directly from FlatBuffers (fb::Graph, fb::Method).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tessera/core/scalar_type.h"
#include "tessera/ir/schema.h"

namespace tessera::ir {

/// One term of a shape expression in reverse Polish notation.
struct ShapeTerm {
  fb::ShapeOp op = fb::ShapeOp::Const;
  int64_t value = 0;  // Const: the constant; Sym: the symbol index
};

/// A dimension: a constant, or an expression over symbols whose upper bound is `value`.
struct Dim {
  int64_t value = 0;
  std::vector<ShapeTerm> expr;  // empty = constant

  Dim() = default;
  Dim(int64_t v) : value(v) {}  // NOLINT: implicit from a constant
  /// The symbol with index `symbol`, whose upper bound is `upper`.
  static Dim symbol(int symbol, int64_t upper) {
    Dim d(upper);
    d.expr.push_back({fb::ShapeOp::Sym, symbol});
    return d;
  }
  bool is_static() const { return expr.empty(); }
};

struct Symbol {
  std::string name;
  int64_t min = 1;
  int64_t max = 1;
};

struct Attr {
  std::string name;
  fb::AttrType type = fb::AttrType::Int;
  int64_t i = 0;
  float f = 0;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::string s;

  static Attr make_int(std::string n, int64_t v);
  static Attr make_float(std::string n, float v);
  static Attr make_ints(std::string n, std::vector<int64_t> v);
  static Attr make_floats(std::string n, std::vector<float> v);
  static Attr make_string(std::string n, std::string v);
};

struct Value {
  fb::ValueKind kind = fb::ValueKind::Tensor;
  std::string name;
  ScalarType dtype = ScalarType::Float32;
  std::vector<Dim> dims;
  std::vector<uint8_t> dim_order;  // empty = default
  int constant = -1;               // index into the program's constants
  int64_t arena_offset = -1;
  int64_t int_value = 0;
  std::vector<int64_t> ints;

  /// Bytes at the dims' upper bounds.
  size_t max_nbytes() const;
};

struct Node {
  fb::OpType op = fb::OpType::Identity;
  std::string name;
  std::vector<int> inputs;  // -1 = absent optional input
  std::vector<int> outputs;
  std::vector<Attr> attrs;
  fb::Activation activation = fb::Activation::None;
  float activation_min = -std::numeric_limits<float>::infinity();
  float activation_max = std::numeric_limits<float>::infinity();

  const Attr* find_attr(const std::string& n) const;
};

struct Graph {
  std::vector<Symbol> symbols;
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<int> inputs;
  std::vector<int> outputs;
};

/// Serialises `graph` as a standalone fb::Graph FlatBuffer (a delegate payload).
std::vector<uint8_t> encode_graph(const Graph& graph);

}  // namespace tessera::ir
