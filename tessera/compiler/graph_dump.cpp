#include "tessera/compiler/graph_dump.h"

#include <cstdio>

#include "tessera/ir/op.h"

namespace tessera::compiler {

std::string dim_to_string(const ir::Dim& dim, const std::vector<ir::Symbol>& symbols) {
  if (dim.expr.empty()) return std::to_string(dim.value);
  std::vector<std::string> stack;
  for (const ir::ShapeTerm& t : dim.expr) {
    switch (t.op) {
      case fb::ShapeOp::Const: stack.push_back(std::to_string(t.value)); break;
      case fb::ShapeOp::Sym:
        if (t.value >= 0 && static_cast<size_t>(t.value) < symbols.size()) {
          stack.push_back(symbols[t.value].name);
        } else {
          stack.push_back("s");
          stack.back() += std::to_string(t.value);
        }
        break;
      default: {
        if (stack.size() < 2) return "<bad expr>";
        std::string b = stack.back();
        stack.pop_back();
        std::string a = stack.back();
        stack.pop_back();
        const char* op = t.op == fb::ShapeOp::Add ? " + " : t.op == fb::ShapeOp::Sub ? " - "
                         : t.op == fb::ShapeOp::Mul ? "*" : " // ";
        const bool paren = t.op == fb::ShapeOp::Mul || t.op == fb::ShapeOp::FloorDiv;
        auto wrap = [&](const std::string& s) {
          return paren && s.find(' ') != std::string::npos ? "(" + s + ")" : s;
        };
        stack.push_back(wrap(a) + op + wrap(b));
      }
    }
  }
  return stack.size() == 1 ? stack[0] + " (<= " + std::to_string(dim.value) + ")" : "<bad expr>";
}

namespace {

std::string value_to_string(const ir::Graph& g, int v) {
  if (v < 0) return "-";
  const ir::Value& val = g.values[v];
  std::string s = val.name;
  if (s.empty()) s.append("%").append(std::to_string(v));
  s += " [";
  for (size_t i = 0; i < val.dims.size(); ++i) {
    if (i) s += ", ";
    s += dim_to_string(val.dims[i], g.symbols);
  }
  s += "]";
  if (val.constant >= 0) s += " const#" + std::to_string(val.constant);
  return s;
}

std::string attr_to_string(const ir::Attr& a) {
  std::string s = a.name + "=";
  char buf[32];
  switch (a.type) {
    case fb::AttrType::Int: return s + std::to_string(a.i);
    case fb::AttrType::Float: std::snprintf(buf, sizeof(buf), "%g", a.f); return s + buf;
    case fb::AttrType::String: return s + "'" + a.s + "'";
    case fb::AttrType::Ints: {
      s += "[";
      for (size_t i = 0; i < a.ints.size(); ++i) {
        if (i) s += ",";
        s += std::to_string(a.ints[i]);
      }
      return s + "]";
    }
    case fb::AttrType::Floats: {
      s += "[";
      for (size_t i = 0; i < a.floats.size(); ++i) {
        std::snprintf(buf, sizeof(buf), "%g", a.floats[i]);
        if (i) s += ",";
        s += buf;
      }
      return s + "]";
    }
  }
  return s;
}

}  // namespace

std::string graph_to_string(const ir::Graph& g) {
  std::string s;
  for (const ir::Symbol& sym : g.symbols) {
    s += "symbol " + sym.name + " in [" + std::to_string(sym.min) + ", " + std::to_string(sym.max) + "]\n";
  }
  for (int v : g.inputs) s += "input " + value_to_string(g, v) + "\n";
  for (const ir::Node& n : g.nodes) {
    s += n.name + ": " + ir::op_name(n.op) + "(";
    for (size_t i = 0; i < n.inputs.size(); ++i) s += (i ? ", " : "") + value_to_string(g, n.inputs[i]);
    s += ") -> ";
    for (size_t i = 0; i < n.outputs.size(); ++i) s += (i ? ", " : "") + value_to_string(g, n.outputs[i]);
    if (!n.attrs.empty()) {
      s += " {";
      for (size_t i = 0; i < n.attrs.size(); ++i) s += (i ? ", " : "") + attr_to_string(n.attrs[i]);
      s += "}";
    }
    if (n.activation == fb::Activation::Relu) s += " +Relu";
    if (n.activation == fb::Activation::Clip) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), " +Clip(%g, %g)", n.activation_min, n.activation_max);
      s += buf;
    }
    s += "\n";
  }
  for (int v : g.outputs) s += "output " + value_to_string(g, v) + "\n";
  return s;
}

}  // namespace tessera::compiler
