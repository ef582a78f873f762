#include "tessera/compiler/evaluate.h"

#include <algorithm>
#include <cmath>

#include "tessera/compiler/shape_inference.h"

namespace tessera::compiler {
namespace {

using fb::OpType;

std::vector<int64_t> strides_of(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

// Element count; INT64_MAX when negative or overflowing (never folded then).
int64_t numel_of(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return INT64_MAX;
  }
  return n;
}

// Output tensor of `dtype` and `dims` whose element k is `src`'s element index[k].
HostTensor take(const HostTensor& src, ScalarType dtype, std::vector<int64_t> dims,
                const std::vector<int64_t>& index) {
  HostTensor out;
  out.dtype = dtype;
  out.dims = std::move(dims);
  if (src.is_float()) {
    out.f.reserve(index.size());
    for (int64_t k : index) out.f.push_back(src.f[k]);
  } else if (src.is_symbolic()) {
    out.sym.reserve(index.size());
    for (int64_t k : index) out.sym.push_back(src.sym[k]);
  } else {
    out.i.reserve(index.size());
    for (int64_t k : index) out.i.push_back(src.i[k]);
  }
  return out;
}

// Index into a tensor of `in_dims` broadcast to `out_dims`, for each output element.
std::vector<int64_t> broadcast_index(const std::vector<int64_t>& in_dims, const std::vector<int64_t>& out_dims) {
  const size_t r = out_dims.size();
  std::vector<int64_t> in_strides(r, 0);
  const auto s = strides_of(in_dims);
  for (size_t i = 0; i < in_dims.size(); ++i) {
    const size_t o = r - in_dims.size() + i;
    in_strides[o] = in_dims[i] == 1 ? 0 : s[i];
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

int64_t wrap_int(int64_t v, ScalarType t) {
  switch (t) {
    case ScalarType::Int32: return static_cast<int32_t>(v);
    case ScalarType::Int8: return static_cast<int8_t>(v);
    case ScalarType::UInt8: return static_cast<uint8_t>(v);
    case ScalarType::Bool: return v != 0;
    default: return v;
  }
}

float round_to(ScalarType t, double v) {
  float f = static_cast<float>(v);
  return t == ScalarType::Float16 ? half_to_float(float_to_half(f)) : f;
}

// Binary elementwise op on concrete or symbolic data; false if not computable.
bool binary(OpType op, const HostTensor& a, const HostTensor& b, const std::vector<int64_t>& dims,
            ScalarType out_type, HostTensor* out) {
  const auto ia = broadcast_index(a.dims, dims);
  const auto ib = broadcast_index(b.dims, dims);
  const int64_t n = numel_of(dims);
  out->dtype = out_type;
  out->dims = dims;
  const bool cmp = op == OpType::Equal || op == OpType::Less || op == OpType::Greater;
  if (a.is_float() || b.is_float()) {
    if (!a.is_float() || !b.is_float()) return false;
    if (cmp) out->i.resize(n); else out->f.resize(n);
    for (int64_t k = 0; k < n; ++k) {
      const float x = a.f[ia[k]], y = b.f[ib[k]];
      double r = 0;
      switch (op) {
        case OpType::Add: r = x + y; break;
        case OpType::Sub: r = x - y; break;
        case OpType::Mul: r = x * y; break;
        case OpType::Div: r = x / y; break;
        case OpType::Pow: r = std::pow(x, y); break;
        case OpType::Min: r = std::min(x, y); break;
        case OpType::Max: r = std::max(x, y); break;
        case OpType::Equal: out->i[k] = x == y; continue;
        case OpType::Less: out->i[k] = x < y; continue;
        case OpType::Greater: out->i[k] = x > y; continue;
        default: return false;
      }
      out->f[k] = round_to(out_type, r);
    }
    return true;
  }
  if (a.is_symbolic() || b.is_symbolic()) {
    std::vector<SymExpr> r(n);
    std::vector<int64_t> ri;
    if (cmp) ri.resize(n);
    for (int64_t k = 0; k < n; ++k) {
      const SymExpr x = a.int_at(ia[k]), y = b.int_at(ib[k]);
      const bool both_const = x.is_const() && y.is_const();
      switch (op) {
        case OpType::Add: r[k] = x + y; break;
        case OpType::Sub: r[k] = x - y; break;
        case OpType::Mul: r[k] = x * y; break;
        case OpType::Div:
          if (y.is_const() && y.const_value() == 0) return false;
          r[k] = SymExpr::floor_div(x, y);  // shape quantities are non-negative
          break;
        case OpType::Min:
        case OpType::Max:
          if (x == y) {
            r[k] = x;
          } else if (both_const) {
            r[k] = op == OpType::Min ? std::min(x.const_value(), y.const_value())
                                     : std::max(x.const_value(), y.const_value());
          } else {
            return false;
          }
          break;
        case OpType::Equal:
          if (x == y) {
            ri[k] = 1;
          } else if (both_const) {
            ri[k] = 0;
          } else {
            return false;
          }
          break;
        case OpType::Less:
        case OpType::Greater:
          if (!both_const) return false;
          ri[k] = op == OpType::Less ? x.const_value() < y.const_value() : x.const_value() > y.const_value();
          break;
        default: return false;
      }
    }
    if (cmp) {
      out->i = std::move(ri);
    } else {
      out->sym = std::move(r);
    }
    return true;
  }
  out->i.resize(n);
  for (int64_t k = 0; k < n; ++k) {
    const int64_t x = a.i[ia[k]], y = b.i[ib[k]];
    int64_t r = 0;
    switch (op) {
      case OpType::Add: r = static_cast<int64_t>(static_cast<uint64_t>(x) + static_cast<uint64_t>(y)); break;
      case OpType::Sub: r = static_cast<int64_t>(static_cast<uint64_t>(x) - static_cast<uint64_t>(y)); break;
      case OpType::Mul: r = static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y)); break;
      case OpType::Div:
        if (y == 0 || (x == INT64_MIN && y == -1)) return false;
        r = x / y;  // ONNX integer division truncates
        break;
      case OpType::Pow: {
        if (y < 0) return false;
        r = 1;
        for (int64_t e = 0; e < y && e < 64; ++e) r *= x;
        break;
      }
      case OpType::Min: r = std::min(x, y); break;
      case OpType::Max: r = std::max(x, y); break;
      case OpType::Equal: r = x == y; break;
      case OpType::Less: r = x < y; break;
      case OpType::Greater: r = x > y; break;
      default: return false;
    }
    out->i[k] = wrap_int(r, out_type);
  }
  return true;
}

bool unary(const ir::Node& node, const HostTensor& x, ScalarType out_type, HostTensor* out) {
  const OpType op = node.op;
  out->dtype = out_type;
  out->dims = x.dims;
  if (!x.is_float()) {
    if (x.is_symbolic()) {
      if (op != OpType::Neg) return false;
      for (const SymExpr& e : x.sym) out->sym.push_back(-e);
      return true;
    }
    for (int64_t v : x.i) {
      switch (op) {
        case OpType::Neg: out->i.push_back(-v); break;
        case OpType::Abs: out->i.push_back(v < 0 ? -v : v); break;
        case OpType::Relu: out->i.push_back(std::max<int64_t>(v, 0)); break;
        default: return false;
      }
    }
    return true;
  }
  const float lo = attr_float(node, "min", -INFINITY), hi = attr_float(node, "max", INFINITY);
  const float alpha = attr_float(node, "alpha", op == OpType::LeakyRelu ? 0.01f : 0.2f);
  const float beta = attr_float(node, "beta", 0.5f);
  out->f.reserve(x.f.size());
  for (float v : x.f) {
    double r;
    switch (op) {
      case OpType::Neg: r = -v; break;
      case OpType::Abs: r = std::fabs(v); break;
      case OpType::Reciprocal: r = 1.0 / v; break;
      case OpType::Sqrt: r = std::sqrt(v); break;
      case OpType::Exp: r = std::exp(v); break;
      case OpType::Erf: r = std::erf(v); break;
      case OpType::Relu: r = v > 0 ? v : 0; break;
      case OpType::Sigmoid: r = 1.0 / (1.0 + std::exp(-static_cast<double>(v))); break;
      case OpType::Tanh: r = std::tanh(v); break;
      case OpType::LeakyRelu: r = v >= 0 ? v : alpha * v; break;
      case OpType::HardSigmoid: r = std::clamp(alpha * v + beta, 0.0f, 1.0f); break;
      case OpType::HardSwish: r = v * std::clamp(v / 6.0 + 0.5, 0.0, 1.0); break;
      case OpType::Clip: r = std::min(std::max(v, lo), hi); break;
      default: return false;
    }
    out->f.push_back(round_to(out_type, r));
  }
  return true;
}

}  // namespace

HostTensor broadcast_to(const HostTensor& t, const std::vector<int64_t>& dims) {
  return take(t, t.dtype, dims, broadcast_index(t.dims, dims));
}

bool cast_tensor(const HostTensor& t, ScalarType to, HostTensor* out) {
  out->dtype = to;
  out->dims = t.dims;
  out->f.clear();
  out->i.clear();
  out->sym.clear();
  if (HostTensor::is_float_type(to)) {
    if (t.is_symbolic()) {
      std::vector<int64_t> ints;
      if (!t.to_ints(&ints)) return false;
      for (int64_t v : ints) out->f.push_back(round_to(to, static_cast<double>(v)));
      return true;
    }
    if (t.is_float()) {
      for (float v : t.f) out->f.push_back(round_to(to, v));
    } else {
      for (int64_t v : t.i) out->f.push_back(round_to(to, static_cast<double>(v)));
    }
    return true;
  }
  if (t.is_symbolic()) {
    if (to == ScalarType::Int64 || to == ScalarType::Int32) {
      out->sym = t.sym;
      return true;
    }
    std::vector<int64_t> ints;
    if (!t.to_ints(&ints)) return false;
    for (int64_t v : ints) out->i.push_back(wrap_int(v, to));
    return true;
  }
  if (t.is_float()) {
    for (float v : t.f) {
      if (to == ScalarType::Bool) {
        out->i.push_back(v != 0.0f);
      } else if (!std::isfinite(v)) {
        out->i.push_back(0);
      } else {
        out->i.push_back(wrap_int(static_cast<int64_t>(v), to));
      }
    }
  } else {
    for (int64_t v : t.i) out->i.push_back(wrap_int(v, to));
  }
  return true;
}

Result<bool> evaluate_node(const ModelGraph& g, const ir::Node& node, std::vector<HostTensor>* outputs) {
  std::vector<const HostTensor*> in;
  for (int v : node.inputs) {
    if (v < 0) {
      in.push_back(nullptr);
      continue;
    }
    if (!g.values[v].data) return false;
    in.push_back(g.values[v].data.get());
  }
  std::vector<std::vector<int64_t>> out_dims;
  for (int v : node.outputs) {
    std::vector<int64_t> d;
    if (v < 0 || !g.values[v].static_dims(&d) || numel_of(d) > kMaxFoldElements) return false;
    out_dims.push_back(std::move(d));
  }
  if (in.empty() || !in[0] || out_dims.empty()) return false;
  const HostTensor& x = *in[0];
  const ScalarType out_type = g.values[node.outputs[0]].dtype;
  std::vector<HostTensor> result(out_dims.size());
  HostTensor& out = result[0];
  bool ok = false;

  switch (node.op) {
    case OpType::Identity:
    case OpType::Reshape:
    case OpType::Flatten:
    case OpType::Squeeze:
    case OpType::Unsqueeze:
      out = x;
      out.dims = out_dims[0];
      ok = true;
      break;
    case OpType::Cast:
      ok = cast_tensor(x, out_type, &out);
      break;
    case OpType::Add:
    case OpType::Sub:
    case OpType::Mul:
    case OpType::Div:
    case OpType::Pow:
    case OpType::Min:
    case OpType::Max:
    case OpType::Equal:
    case OpType::Less:
    case OpType::Greater:
      if (!in[1]) return false;
      ok = binary(node.op, x, *in[1], out_dims[0], out_type, &out);
      break;
    case OpType::Where: {
      if (!in[1] || !in[2] || x.is_float() || x.is_symbolic()) return false;
      const auto ic = broadcast_index(x.dims, out_dims[0]);
      const auto ia = broadcast_index(in[1]->dims, out_dims[0]);
      const auto ib = broadcast_index(in[2]->dims, out_dims[0]);
      const HostTensor& a = *in[1];
      const HostTensor& b = *in[2];
      if (a.is_float() != b.is_float()) return false;
      out.dtype = out_type;
      out.dims = out_dims[0];
      const bool sym = a.is_symbolic() || b.is_symbolic();
      for (size_t k = 0; k < ic.size(); ++k) {
        const bool c = x.i[ic[k]] != 0;
        if (a.is_float()) {
          out.f.push_back(c ? a.f[ia[k]] : b.f[ib[k]]);
        } else if (sym) {
          out.sym.push_back(c ? a.int_at(ia[k]) : b.int_at(ib[k]));
        } else {
          out.i.push_back(c ? a.i[ia[k]] : b.i[ib[k]]);
        }
      }
      ok = true;
      break;
    }
    case OpType::Neg:
    case OpType::Abs:
    case OpType::Reciprocal:
    case OpType::Sqrt:
    case OpType::Exp:
    case OpType::Erf:
    case OpType::Relu:
    case OpType::Sigmoid:
    case OpType::Tanh:
    case OpType::LeakyRelu:
    case OpType::HardSigmoid:
    case OpType::HardSwish:
    case OpType::Clip:
      ok = unary(node, x, out_type, &out);
      break;
    case OpType::Transpose: {
      const auto perm = attr_ints(node, "perm");
      const auto in_strides = strides_of(x.dims);
      const auto& od = out_dims[0];
      std::vector<int64_t> index(numel_of(od));
      std::vector<int64_t> pos(od.size(), 0);
      for (size_t k = 0; k < index.size(); ++k) {
        int64_t off = 0;
        for (size_t d = 0; d < od.size(); ++d) off += pos[d] * in_strides[perm[d]];
        index[k] = off;
        for (size_t d = od.size(); d-- > 0;) {
          if (++pos[d] < od[d]) break;
          pos[d] = 0;
        }
      }
      out = take(x, out_type, od, index);
      ok = true;
      break;
    }
    case OpType::Concat: {
      int64_t axis = attr_int(node, "axis", 0);
      if (axis < 0) axis += static_cast<int64_t>(x.dims.size());
      bool any_sym = false;
      for (const HostTensor* t : in) {
        if (!t || t->is_float() != x.is_float()) return false;
        any_sym |= t->is_symbolic();
      }
      out.dtype = out_type;
      out.dims = out_dims[0];
      const int64_t outer = numel_of(std::vector<int64_t>(x.dims.begin(), x.dims.begin() + axis));
      for (int64_t o = 0; o < outer; ++o) {
        for (const HostTensor* t : in) {
          const int64_t inner = numel_of(std::vector<int64_t>(t->dims.begin() + axis, t->dims.end()));
          for (int64_t k = o * inner; k < (o + 1) * inner; ++k) {
            if (t->is_float()) {
              out.f.push_back(t->f[k]);
            } else if (any_sym) {
              out.sym.push_back(t->int_at(k));
            } else {
              out.i.push_back(t->i[k]);
            }
          }
        }
      }
      ok = true;
      break;
    }
    case OpType::Slice:
    case OpType::Split:
    case OpType::Gather: {
      // Each output element's source index, from per-axis source positions.
      const auto in_strides = strides_of(x.dims);
      const size_t r = x.dims.size();
      if (node.op == OpType::Gather) {
        if (!in[1] || in[1]->is_float()) return false;
        std::vector<int64_t> idx;
        if (!in[1]->to_ints(&idx)) return false;
        int64_t axis = attr_int(node, "axis", 0);
        if (axis < 0) axis += static_cast<int64_t>(r);
        const int64_t n_axis = x.dims[axis];
        const int64_t outer = numel_of(std::vector<int64_t>(x.dims.begin(), x.dims.begin() + axis));
        const int64_t inner = numel_of(std::vector<int64_t>(x.dims.begin() + axis + 1, x.dims.end()));
        std::vector<int64_t> index;
        for (int64_t o = 0; o < outer; ++o) {
          for (int64_t j : idx) {
            if (j < 0) j += n_axis;
            if (j < 0 || j >= n_axis) {
              return Status::error(Error::InvalidProgram, "node '%s' (Gather): index out of range",
                                   node.name.c_str());
            }
            for (int64_t k = 0; k < inner; ++k) index.push_back((o * n_axis + j) * inner + k);
          }
        }
        out = take(x, out_type, out_dims[0], index);
        ok = true;
        break;
      }
      // Slice and Split: start offset and step per axis, then walk the output.
      auto walk = [&](const std::vector<int64_t>& start, const std::vector<int64_t>& step,
                      const std::vector<int64_t>& od) {
        std::vector<int64_t> index(numel_of(od));
        std::vector<int64_t> pos(r, 0);
        for (size_t k = 0; k < index.size(); ++k) {
          int64_t off = 0;
          for (size_t d = 0; d < r; ++d) off += (start[d] + pos[d] * step[d]) * in_strides[d];
          index[k] = off;
          for (size_t d = r; d-- > 0;) {
            if (++pos[d] < od[d]) break;
            pos[d] = 0;
          }
        }
        return index;
      };
      if (node.op == OpType::Slice) {
        std::vector<int64_t> start(r, 0), step(r, 1);
        const auto starts = attr_ints(node, "starts"), axes = attr_ints(node, "axes"),
                   steps = attr_ints(node, "steps");
        for (size_t k = 0; k < starts.size(); ++k) {
          int64_t axis = axes[k] < 0 ? axes[k] + static_cast<int64_t>(r) : axes[k];
          int64_t s = starts[k];
          const int64_t dim = x.dims[axis];
          if (s < 0) s += dim;
          s = steps[k] > 0 ? std::clamp<int64_t>(s, 0, dim) : std::clamp<int64_t>(s, 0, dim - 1);
          start[axis] = s;
          step[axis] = steps[k];
        }
        out = take(x, out_type, out_dims[0], walk(start, step, out_dims[0]));
        ok = true;
        break;
      }
      int64_t axis = attr_int(node, "axis", 0);
      if (axis < 0) axis += static_cast<int64_t>(r);
      int64_t offset = 0;
      for (size_t o = 0; o < out_dims.size(); ++o) {
        std::vector<int64_t> start(r, 0), step(r, 1);
        start[axis] = offset;
        result[o] = take(x, out_type, out_dims[o], walk(start, step, out_dims[o]));
        offset += out_dims[o][axis];
      }
      ok = true;
      break;
    }
    default:
      return false;
  }
  if (!ok) return false;
  *outputs = std::move(result);
  return true;
}

}  // namespace tessera::compiler
