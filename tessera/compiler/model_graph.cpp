#include "tessera/compiler/model_graph.h"

#include <cstring>

#include "tessera/ir/op.h"

namespace tessera::compiler {

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return INT64_MAX;
  }
  return n;
}

bool HostTensor::to_ints(std::vector<int64_t>* out) const {
  if (is_float()) return false;
  if (!is_symbolic()) {
    *out = i;
    return true;
  }
  out->clear();
  for (const SymExpr& e : sym) {
    if (!e.is_const()) return false;
    out->push_back(e.const_value());
  }
  return true;
}

std::vector<uint8_t> HostTensor::to_bytes() const {
  const size_t n = static_cast<size_t>(numel());
  std::vector<uint8_t> out(n * element_size(dtype));
  auto put = [&](size_t k, const void* p, size_t size) { std::memcpy(out.data() + k * size, p, size); };
  for (size_t k = 0; k < n; ++k) {
    switch (dtype) {
      case ScalarType::Float32: put(k, &f[k], 4); break;
      case ScalarType::Float16: {
        uint16_t h = float_to_half(f[k]);
        put(k, &h, 2);
        break;
      }
      case ScalarType::Int64: {
        int64_t v = i[k];
        put(k, &v, 8);
        break;
      }
      case ScalarType::Int32: {
        int32_t v = static_cast<int32_t>(i[k]);
        put(k, &v, 4);
        break;
      }
      case ScalarType::Int8: {
        int8_t v = static_cast<int8_t>(i[k]);
        put(k, &v, 1);
        break;
      }
      case ScalarType::UInt8:
      case ScalarType::Bool: {
        uint8_t v = static_cast<uint8_t>(i[k]);
        put(k, &v, 1);
        break;
      }
    }
  }
  return out;
}

HostTensor HostTensor::from_bytes(ScalarType dtype, std::vector<int64_t> dims,
                                  const uint8_t* data) {
  HostTensor t;
  t.dtype = dtype;
  t.dims = std::move(dims);
  const size_t n = static_cast<size_t>(t.numel());
  auto get = [&](size_t k, void* p, size_t size) { std::memcpy(p, data + k * size, size); };
  if (t.is_float()) {
    t.f.resize(n);
  } else {
    t.i.resize(n);
  }
  for (size_t k = 0; k < n; ++k) {
    switch (dtype) {
      case ScalarType::Float32:
        get(k, &t.f[k], 4);
        break;
      case ScalarType::Float16: {
        uint16_t h;
        get(k, &h, 2);
        t.f[k] = half_to_float(h);
        break;
      }
      case ScalarType::Int64:
        get(k, &t.i[k], 8);
        break;
      case ScalarType::Int32: {
        int32_t v;
        get(k, &v, 4);
        t.i[k] = v;
        break;
      }
      case ScalarType::Int8: {
        int8_t v;
        get(k, &v, 1);
        t.i[k] = v;
        break;
      }
      case ScalarType::UInt8:
      case ScalarType::Bool: {
        uint8_t v;
        get(k, &v, 1);
        t.i[k] = v;
        break;
      }
    }
  }
  return t;
}

HostTensor HostTensor::scalar_float(float v) {
  HostTensor t;
  t.dtype = ScalarType::Float32;
  t.f = {v};
  return t;
}

HostTensor HostTensor::ints(std::vector<int64_t> values) {
  HostTensor t;
  t.dtype = ScalarType::Int64;
  t.dims = {static_cast<int64_t>(values.size())};
  t.i = std::move(values);
  return t;
}

bool Value::is_static() const {
  for (const SymExpr& d : dims) {
    if (!d.is_const()) return false;
  }
  return true;
}

bool Value::static_dims(std::vector<int64_t>* out) const {
  out->clear();
  for (const SymExpr& d : dims) {
    if (!d.is_const()) return false;
    out->push_back(d.const_value());
  }
  return true;
}

int ModelGraph::add_value(std::string name, ScalarType dtype, std::vector<SymExpr> dims) {
  Value v;
  v.name = std::move(name);
  v.dtype = dtype;
  v.dims = std::move(dims);
  values.push_back(std::move(v));
  return static_cast<int>(values.size()) - 1;
}

int ModelGraph::add_const(std::string name, HostTensorPtr data) {
  std::vector<SymExpr> dims(data->dims.begin(), data->dims.end());
  int v = add_value(std::move(name), data->dtype, std::move(dims));
  values[v].data = std::move(data);
  return v;
}

std::string ModelGraph::dims_string(const std::vector<SymExpr>& dims) const {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += dims[i].to_string(&symbols);
  }
  return s + "]";
}

std::string ModelGraph::dims_string(int v) const { return dims_string(values[v].dims); }

std::vector<int> ModelGraph::use_counts() const {
  std::vector<int> uses(values.size(), 0);
  for (const ir::Node& n : nodes) {
    for (int v : n.inputs) {
      if (v >= 0) ++uses[v];
    }
  }
  for (int v : outputs) ++uses[v];
  return uses;
}

std::vector<int> ModelGraph::producers() const {
  std::vector<int> prod(values.size(), -1);
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (int v : nodes[i].outputs) {
      if (v >= 0) prod[v] = static_cast<int>(i);
    }
  }
  return prod;
}

std::string node_label(const ir::Node& node, size_t index) {
  if (!node.name.empty()) return node.name;
  return std::string(ir::op_name(node.op)) + " #" + std::to_string(index);
}

}  // namespace tessera::compiler
