#include "tessera/compiler/evaluate.h"

#include <algorithm>

#include "tessera/compiler/host_kernel.h"

namespace tessera::compiler {
namespace {

using fb::OpType;

// Element count; INT64_MAX when negative or overflowing (never folded then).
int64_t numel_of(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return INT64_MAX;
  }
  return n;
}

// Index into a tensor of `in_dims` broadcast (numpy rules) to `out_dims`, per output element.
std::vector<int64_t> broadcast_index(const std::vector<int64_t>& in_dims,
                                     const std::vector<int64_t>& out_dims) {
  const size_t r = out_dims.size();
  std::vector<int64_t> in_strides(r, 0);
  int64_t stride = 1;
  for (size_t i = in_dims.size(); i-- > 0;) {
    const size_t o = r - in_dims.size() + i;
    in_strides[o] = in_dims[i] == 1 ? 0 : stride;
    stride *= in_dims[i];
  }
  const int64_t n = numel_of(out_dims);
  std::vector<int64_t> index(n);
  std::vector<int64_t> pos(r, 0);
  int64_t off = 0;
  for (int64_t k = 0; k < n; ++k) {
    index[k] = off;
    for (size_t d = r; d-- > 0;) {
      if (++pos[d] < out_dims[d]) {
        off += in_strides[d];
        break;
      }
      off -= in_strides[d] * (out_dims[d] - 1);
      pos[d] = 0;
    }
  }
  return index;
}

// ---- shape values with symbolic elements --------------------------------------------------------
//
// Integer tensors computed from symbolic dims hold SymExpr elements, which no kernel takes. Ops
// that only move elements run their portable kernel on element handles (int64 positions in a pool
// of the inputs' elements), so the kernel still decides which element goes where; the integer
// arithmetic of shape values is SymExpr algebra.

// Whether input `k` of `op` holds elements the op moves (rather than indices or a condition).
bool moves_elements(OpType op, size_t k) {
  switch (op) {
    case OpType::Identity:
    case OpType::Reshape:
    case OpType::Flatten:
    case OpType::Squeeze:
    case OpType::Unsqueeze:
    case OpType::Transpose:
    case OpType::Slice:
    case OpType::Split:
    case OpType::Gather:
      return k == 0;
    case OpType::Concat:
      return true;
    case OpType::Where:
      return k == 1 || k == 2;
    default:
      return false;
  }
}

// A data-movement op over symbolic inputs, through the kernel on handles.
Result<bool> move_symbolic(const ir::Node& node, const std::vector<const HostTensor*>& in,
                           std::vector<HostTensor>* out) {
  std::vector<SymExpr> pool;
  std::vector<HostTensor> handles(in.size());
  std::vector<const HostTensor*> args(in.size(), nullptr);
  for (size_t k = 0; k < in.size(); ++k) {
    const HostTensor* t = in[k];
    if (t == nullptr) continue;
    if (!moves_elements(node.op, k)) {
      if (t->is_symbolic()) return false;  // a symbolic index or condition
      args[k] = t;
      continue;
    }
    if (t->is_float()) return false;
    handles[k].dtype = ScalarType::Int64;
    handles[k].dims = t->dims;
    for (int64_t e = 0; e < t->numel(); ++e) {
      handles[k].i.push_back(static_cast<int64_t>(pool.size()));
      pool.push_back(t->int_at(static_cast<size_t>(e)));
    }
    args[k] = &handles[k];
  }
  std::vector<HostTensor> moved(out->size());
  for (size_t o = 0; o < out->size(); ++o) {
    moved[o].dtype = ScalarType::Int64;
    moved[o].dims = (*out)[o].dims;
  }
  const Status st = run_host_kernel(node, args, &moved);
  if (st.code() == Error::InvalidArgument) return Status(Error::InvalidProgram, st.message());
  if (!st.is_ok()) return false;
  for (size_t o = 0; o < out->size(); ++o) {
    for (int64_t h : moved[o].i) (*out)[o].sym.push_back(pool[static_cast<size_t>(h)]);
  }
  return true;
}

// Elementwise integer arithmetic and comparisons of shape values; false if not computable
// symbolically (the result would depend on the symbols' values).
bool elementwise_symbolic(OpType op, const std::vector<const HostTensor*>& in, HostTensor* out) {
  for (const HostTensor* t : in) {
    if (t == nullptr || t->is_float()) return false;
  }
  const HostTensor& a = *in[0];
  if (op == OpType::Neg) {
    for (const SymExpr& e : a.sym) out->sym.push_back(-e);
    return true;
  }
  if (in.size() != 2) return false;
  const HostTensor& b = *in[1];
  const auto ia = broadcast_index(a.dims, out->dims);
  const auto ib = broadcast_index(b.dims, out->dims);
  const bool compare = op == OpType::Equal || op == OpType::Less || op == OpType::Greater;
  for (size_t k = 0; k < ia.size(); ++k) {
    const SymExpr x = a.int_at(ia[k]), y = b.int_at(ib[k]);
    const bool both_const = x.is_const() && y.is_const();
    if (compare) {
      if (op == OpType::Equal && (x == y || both_const)) {
        out->i.push_back(x == y);
      } else if (op != OpType::Equal && both_const) {
        out->i.push_back(op == OpType::Less ? x.const_value() < y.const_value()
                                            : x.const_value() > y.const_value());
      } else {
        return false;
      }
      continue;
    }
    switch (op) {
      case OpType::Add:
        out->sym.push_back(x + y);
        break;
      case OpType::Sub:
        out->sym.push_back(x - y);
        break;
      case OpType::Mul:
        out->sym.push_back(x * y);
        break;
      case OpType::Div:
        if (y.is_const() && y.const_value() == 0) return false;
        out->sym.push_back(SymExpr::floor_div(x, y));  // shape quantities are non-negative
        break;
      case OpType::Min:
      case OpType::Max:
        if (x == y) {
          out->sym.push_back(x);
        } else if (both_const) {
          out->sym.push_back(op == OpType::Min ? std::min(x.const_value(), y.const_value())
                                               : std::max(x.const_value(), y.const_value()));
        } else {
          return false;
        }
        break;
      default: return false;
    }
  }
  return true;
}

Result<bool> evaluate_symbolic(const ir::Node& node, const std::vector<const HostTensor*>& in,
                               std::vector<HostTensor>* out) {
  switch (node.op) {
    case OpType::Add:
    case OpType::Sub:
    case OpType::Mul:
    case OpType::Div:
    case OpType::Min:
    case OpType::Max:
    case OpType::Equal:
    case OpType::Less:
    case OpType::Greater:
    case OpType::Neg:
      return elementwise_symbolic(node.op, in, &(*out)[0]);
    case OpType::Cast: {
      const ScalarType to = (*out)[0].dtype;
      if (to != ScalarType::Int64 && to != ScalarType::Int32) return false;
      (*out)[0].sym = in[0]->sym;  // shape quantities fit either type
      return true;
    }
    default:
      return move_symbolic(node, in, out);
  }
}

// `t` with its symbolic elements replaced by their values when all are constants; else nullptr.
const HostTensor* materialize(const HostTensor* t, HostTensor* storage) {
  if (!t->is_symbolic()) return t;
  std::vector<int64_t> values;
  if (!t->to_ints(&values)) return nullptr;
  storage->dtype = t->dtype;
  storage->dims = t->dims;
  storage->i = std::move(values);
  return storage;
}

}  // namespace

HostTensor broadcast_to(const HostTensor& t, const std::vector<int64_t>& dims) {
  HostTensor out;
  out.dtype = t.dtype;
  out.dims = dims;
  for (int64_t k : broadcast_index(t.dims, dims)) {
    if (t.is_float()) {
      out.f.push_back(t.f[k]);
    } else if (t.is_symbolic()) {
      out.sym.push_back(t.sym[k]);
    } else {
      out.i.push_back(t.i[k]);
    }
  }
  return out;
}

bool cast_tensor(const HostTensor& t, ScalarType to, HostTensor* out) {
  out->dtype = to;
  out->dims = t.dims;
  out->f.clear();
  out->i.clear();
  out->sym.clear();
  if (t.is_symbolic() && (to == ScalarType::Int64 || to == ScalarType::Int32)) {
    out->sym = t.sym;
    return true;
  }
  HostTensor storage;
  const HostTensor* x = materialize(&t, &storage);
  if (x == nullptr) return false;
  ir::Node cast;
  cast.op = OpType::Cast;
  cast.name = "cast";
  cast.attrs.push_back(ir::Attr::make_int("to", static_cast<int64_t>(to)));
  std::vector<HostTensor> result(1);
  result[0].dtype = to;
  result[0].dims = t.dims;
  if (!run_host_kernel(cast, {x}, &result).is_ok()) return false;
  *out = std::move(result[0]);
  return true;
}

Result<bool> evaluate_node(const ModelGraph& g, const ir::Node& node,
                           std::vector<HostTensor>* outputs) {
  std::vector<const HostTensor*> in;
  for (int v : node.inputs) {
    if (v >= 0 && !g.values[v].data) return false;
    in.push_back(v < 0 ? nullptr : g.values[v].data.get());
  }
  if (in.empty() || in[0] == nullptr || node.outputs.empty()) return false;
  std::vector<HostTensor> result(node.outputs.size());
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    const int v = node.outputs[o];
    if (v < 0 || !g.values[v].static_dims(&result[o].dims) ||
        numel_of(result[o].dims) > kMaxFoldElements) {
      return false;
    }
    result[o].dtype = g.values[v].dtype;
  }

  // Symbolic elements that are all constants become plain integers.
  std::vector<HostTensor> storage(in.size());
  bool symbolic = false;
  for (size_t k = 0; k < in.size(); ++k) {
    if (in[k] == nullptr || !in[k]->is_symbolic()) continue;
    if (const HostTensor* t = materialize(in[k], &storage[k])) {
      in[k] = t;
    } else {
      symbolic = true;
    }
  }
  if (symbolic) {
    TESSERA_ASSIGN_OR_RETURN(bool done, evaluate_symbolic(node, in, &result));
    if (!done) return false;
  } else {
    // The op's meaning is its portable kernel's. A node the kernel rejects is left to run time
    // (where the same check reports it); a data-dependent failure is the model's error.
    const Status st = run_host_kernel(node, in, &result);
    if (st.code() == Error::InvalidArgument) return Status(Error::InvalidProgram, st.message());
    if (!st.is_ok()) return false;
  }
  *outputs = std::move(result);
  return true;
}

}  // namespace tessera::compiler
