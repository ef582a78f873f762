#include "tessera/compiler/onnx_import.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <unordered_map>

#include "tessera/backend/suggest.h"
#include "tessera/compiler/evaluate.h"
#include "tessera/compiler/shape_inference.h"
#include "tessera/ir/op.h"
#include "tessera/ir/op_table.h"

namespace tessera::compiler {
namespace {

using fb::OpType;

constexpr int kMinOpset = 11;
constexpr int kMaxOpset = 17;
// Largest kernel size, stride, dilation, pad or group accepted (as the kernels).
constexpr int64_t kMaxWindowValue = (int64_t{1} << 31) - 1;
// Largest dim, and element count, of any tensor: keeps all shape arithmetic far from overflow.
constexpr int64_t kMaxDimValue = int64_t{1} << 40;

std::string vformat(const char* fmt, va_list ap) {
  char buf[Status::kMaxMessage];
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  return buf;
}

// ONNX element type -> tessera type. `exact` is false for types held in a wider tessera type
// (double as float32, 16/32/64-bit unsigned and int16 as int64): fine for compile-time data.
bool map_onnx_type(int onnx_type, ScalarType* out, bool* exact) {
  *exact = true;
  switch (onnx_type) {
    case onnx::TensorProto::FLOAT: *out = ScalarType::Float32; return true;
    case onnx::TensorProto::FLOAT16: *out = ScalarType::Float16; return true;
    case onnx::TensorProto::INT64: *out = ScalarType::Int64; return true;
    case onnx::TensorProto::INT32: *out = ScalarType::Int32; return true;
    case onnx::TensorProto::INT8: *out = ScalarType::Int8; return true;
    case onnx::TensorProto::UINT8: *out = ScalarType::UInt8; return true;
    case onnx::TensorProto::BOOL: *out = ScalarType::Bool; return true;
    case onnx::TensorProto::DOUBLE: *out = ScalarType::Float32; *exact = false; return true;
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::UINT16:
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::UINT64: *out = ScalarType::Int64; *exact = false; return true;
    default: return false;
  }
}

const char* onnx_type_name(int t) {
  return onnx::TensorProto_DataType_IsValid(t)
             ? onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(t)).c_str()
             : "?";
}

template <typename T>
T read_le(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

class Importer {
 public:
  Importer(onnx::ModelProto& model, const ImportOptions& options) : model_(model), options_(options) {}

  Result<ModelGraph> run();

 private:
  // --- errors ---------------------------------------------------------------------------------
  [[gnu::format(printf, 3, 4)]] Status node_error(Error code, const char* fmt, ...) const {
    va_list ap;
    va_start(ap, fmt);
    std::string msg = vformat(fmt, ap);
    va_end(ap);
    return Status::error(code, "node '%s' (%s): %s", node_name_.c_str(), node_->op_type().c_str(),
                         msg.c_str());
  }
  Status unsupported() const {
    if (!node_->domain().empty() && node_->domain() != "ai.onnx") {
      return Status::error(Error::NotSupported, "unsupported ONNX op '%s' (domain '%s') in node '%s' (opset %d)",
                           node_->op_type().c_str(), node_->domain().c_str(), node_name_.c_str(), opset_);
    }
    return Status::error(Error::NotSupported, "unsupported ONNX op '%s' in node '%s' (opset %d)",
                         node_->op_type().c_str(), node_name_.c_str(), opset_);
  }
  [[gnu::format(printf, 2, 3)]] Status unsupported_use(const char* fmt, ...) const {
    va_list ap;
    va_start(ap, fmt);
    std::string msg = vformat(fmt, ap);
    va_end(ap);
    return Status::error(Error::NotSupported, "ONNX op '%s' in node '%s' (opset %d): %s is not supported",
                         node_->op_type().c_str(), node_name_.c_str(), opset_, msg.c_str());
  }

  // --- model parts ----------------------------------------------------------------------------
  Status import_opset();
  Status import_tensor(const onnx::TensorProto& t, const std::string& what, HostTensor* out) const;
  Status import_initializers();
  Status import_inputs();
  Status check_dim_names() const;
  Status import_node(const onnx::NodeProto& node, size_t index);
  Status dispatch_node(const onnx::NodeProto& node, size_t index);
  Status import_outputs();
  void collect_onnx_shapes();

  // --- node helpers ---------------------------------------------------------------------------
  const onnx::AttributeProto* attr(const char* name) const {
    for (const auto& a : node_->attribute()) {
      if (a.name() == name) return &a;
    }
    return nullptr;
  }
  int64_t aint(const char* name, int64_t fallback) const {
    const auto* a = attr(name);
    return a ? a->i() : fallback;
  }
  float afloat(const char* name, float fallback) const {
    const auto* a = attr(name);
    return a ? a->f() : fallback;
  }
  std::string astr(const char* name, const char* fallback) const {
    const auto* a = attr(name);
    return a ? a->s() : std::string(fallback);
  }
  std::optional<std::vector<int64_t>> aints(const char* name) const {
    const auto* a = attr(name);
    if (!a) return std::nullopt;
    return std::vector<int64_t>(a->ints().begin(), a->ints().end());
  }
  /// The node's ONNX attributes that the op's table row declares, copied as they are (absent
  /// ones stay absent: the IR's defaults are the table's). InvalidProgram on another ONNX type.
  Result<std::vector<ir::Attr>> declared_attrs(const ir::OpInfo& info) const {
    std::vector<ir::Attr> out;
    for (const ir::AttrInfo& d : info.attrs) {
      const auto* a = attr(d.name);
      if (a == nullptr) continue;
      bool ok = false;
      switch (d.kind) {
        case fb::AttrType::Int:
          ok = a->type() == onnx::AttributeProto::INT;
          if (ok) out.push_back(ir::Attr::make_int(d.name, a->i()));
          break;
        case fb::AttrType::Float:
          ok = a->type() == onnx::AttributeProto::FLOAT;
          if (ok) out.push_back(ir::Attr::make_float(d.name, a->f()));
          break;
        case fb::AttrType::String:
          ok = a->type() == onnx::AttributeProto::STRING;
          if (ok) out.push_back(ir::Attr::make_string(d.name, a->s()));
          break;
        case fb::AttrType::Ints:
          ok = a->type() == onnx::AttributeProto::INTS;
          if (ok) out.push_back(ir::Attr::make_ints(d.name, {a->ints().begin(), a->ints().end()}));
          break;
        case fb::AttrType::Floats:
          ok = a->type() == onnx::AttributeProto::FLOATS;
          if (ok) {
            out.push_back(ir::Attr::make_floats(d.name, {a->floats().begin(), a->floats().end()}));
          }
          break;
      }
      if (!ok) {
        return node_error(Error::InvalidProgram, "attribute '%s' has ONNX type %d, expected %s",
                          d.name, static_cast<int>(a->type()), fb::EnumNameAttrType(d.kind));
      }
    }
    return out;
  }
  size_t num_inputs() const { return static_cast<size_t>(node_->input_size()); }
  // Value index of input k, or -1 when absent.
  int in(size_t k) const {
    if (k >= num_inputs() || node_->input(static_cast<int>(k)).empty()) return -1;
    auto it = names_.find(node_->input(static_cast<int>(k)));
    return it == names_.end() ? -1 : it->second;
  }
  Result<int> need(size_t k) const {
    if (k >= num_inputs() || node_->input(static_cast<int>(k)).empty()) {
      return node_error(Error::InvalidProgram, "input %zu is missing", k);
    }
    auto it = names_.find(node_->input(static_cast<int>(k)));
    if (it == names_.end()) {
      return node_error(Error::InvalidProgram, "input '%s' is not defined before the node",
                        node_->input(static_cast<int>(k)).c_str());
    }
    return it->second;
  }
  const HostTensor* known(int v) const { return v >= 0 ? g_.values[v].data.get() : nullptr; }
  const std::vector<SymExpr>& dims(int v) const { return g_.values[v].dims; }
  size_t rank(int v) const { return g_.values[v].dims.size(); }
  // Concrete integer data of input k (required to be known at compile time).
  Result<std::vector<int64_t>> const_ints(size_t k, const char* what) const;
  // Integer data of input k, possibly symbolic.
  Result<std::vector<SymExpr>> shape_ints(size_t k, const char* what) const;
  Result<int64_t> norm_axis(int64_t axis, size_t r) const {
    const int64_t rr = static_cast<int64_t>(r);
    if (axis < -rr || axis >= rr) {
      return node_error(Error::InvalidProgram, "axis %lld out of range for rank %zu", static_cast<long long>(axis), r);
    }
    return axis < 0 ? axis + rr : axis;
  }
  bool output_used(size_t k) const;

  // Emits one IR node for the current ONNX node. `out_names` name the outputs ("" = internal);
  // `preset` gives output dims for ops whose shape is not inferred from attributes. The node is
  // evaluated at once when its inputs are known.
  Result<std::vector<int>> emit(OpType op, std::vector<int> inputs, std::vector<ir::Attr> attrs,
                                std::vector<std::string> out_names,
                                std::vector<std::vector<SymExpr>> preset = {});
  Result<int> emit1(OpType op, std::vector<int> inputs, std::vector<ir::Attr> attrs,
                    std::vector<SymExpr> preset_dims = {}, bool has_preset = false) {
    std::vector<std::vector<SymExpr>> preset;
    if (has_preset) preset.push_back(std::move(preset_dims));
    TESSERA_ASSIGN_OR_RETURN(auto outs, emit(op, std::move(inputs), std::move(attrs),
                                             {node_->output(0)}, std::move(preset)));
    return outs[0];
  }
  // Binds output k of the current node to a compile-time tensor.
  void bind_const(size_t k, HostTensor t) {
    const std::string& name = node_->output(static_cast<int>(k));
    names_[name] = g_.add_const(name, std::make_shared<const HostTensor>(std::move(t)));
  }
  void alias(size_t k, int v) { names_[node_->output(static_cast<int>(k))] = v; }
  int make_const(const std::string& name, HostTensor t) {
    return g_.add_const(name, std::make_shared<const HostTensor>(std::move(t)));
  }
  Status check_against_onnx(int v);

  // --- op handlers ----------------------------------------------------------------------------
  Status conv(bool transpose);
  Status pool(OpType op);
  Status reduce(OpType op);
  Status softmax();
  Status reshape();
  Status squeeze(bool unsqueeze);
  Status split();
  Status slice();
  Status pad();
  Status resize();
  Status expand();
  Status clip();
  Status variadic(OpType op);
  Status resolve_auto_pad(int x, const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                          const std::vector<int64_t>& dilations, std::vector<int64_t>* pads) const;

  onnx::ModelProto& model_;
  const ImportOptions& options_;
  ModelGraph g_;
  int opset_ = 0;
  std::unordered_map<std::string, int> names_;
  std::unordered_map<std::string, std::vector<int64_t>> onnx_dims_;  // -1 = unknown
  std::unordered_map<std::string, int> consumers_;
  const onnx::NodeProto* node_ = nullptr;
  std::string node_name_;
  int emitted_ = 0;
  // Values whose shapes legitimately differ from ONNX's (downstream of a ceil-mode pooling node
  // where PyTorch and ONNX < 19 disagree): not compared with the shapes ONNX declares.
  std::vector<bool> tainted_;
  bool current_taint_ = false;
  bool pool_diverges_ = false;

  void taint(int v) {
    if (tainted_.size() <= static_cast<size_t>(v)) tainted_.resize(g_.values.size(), false);
    tainted_[v] = true;
  }
  bool is_tainted(int v) const { return v >= 0 && static_cast<size_t>(v) < tainted_.size() && tainted_[v]; }
  Status check_size(int v) const {
    SymExpr n(1);
    for (const SymExpr& d : g_.values[v].dims) {
      const int64_t hi = d.upper_bound(g_.symbols);
      if (hi > kMaxDimValue || hi < -kMaxDimValue) {
        return node_error(Error::InvalidProgram, "output '%s' has a dim of %lld (limit 2^40)",
                          g_.values[v].name.c_str(), static_cast<long long>(hi));
      }
      n = n * d;
    }
    if (n.upper_bound(g_.symbols) > kMaxDimValue) {
      return node_error(Error::InvalidProgram, "output '%s' %s has more than 2^40 elements",
                        g_.values[v].name.c_str(), g_.dims_string(v).c_str());
    }
    return Status::ok();
  }

 public:
  /// After run(): compares `graph` with the shapes ONNX's inference left in the model.
  Status cross_check(const ModelGraph& graph) const;
};

Status Importer::import_opset() {
  bool found = false;
  for (const auto& op : model_.opset_import()) {
    if (op.domain().empty() || op.domain() == "ai.onnx") {
      opset_ = static_cast<int>(op.version());
      found = true;
    }
  }
  if (!found) return Status(Error::InvalidProgram, "ONNX model imports no default-domain opset");
  if (opset_ < kMinOpset || opset_ > kMaxOpset) {
    return Status::error(Error::NotSupported,
                         "ONNX opset %d is not supported (supported: %d to %d); re-export the model "
                         "with an opset in that range",
                         opset_, kMinOpset, kMaxOpset);
  }
  return Status::ok();
}

Status Importer::import_tensor(const onnx::TensorProto& t, const std::string& what, HostTensor* out) const {
  bool exact;
  if (!map_onnx_type(t.data_type(), &out->dtype, &exact)) {
    return Status::error(Error::NotSupported, "%s: ONNX element type %s is not supported", what.c_str(),
                         onnx_type_name(t.data_type()));
  }
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || (d > 0 && n > std::numeric_limits<int64_t>::max() / d)) {
      return Status::error(Error::InvalidProgram, "%s: bad dims", what.c_str());
    }
    out->dims.push_back(d);
    n *= d;
  }
  std::string external;
  const std::string* raw = nullptr;
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto& kv : t.external_data()) {
      if (kv.key() == "location") location = kv.value();
      if (kv.key() == "offset") offset = std::strtoll(kv.value().c_str(), nullptr, 10);
      if (kv.key() == "length") length = std::strtoll(kv.value().c_str(), nullptr, 10);
    }
    if (location.empty() || location.find("..") != std::string::npos || location[0] == '/') {
      return Status::error(Error::InvalidProgram, "%s: bad external data location '%s'", what.c_str(),
                           location.c_str());
    }
    std::string path = options_.external_data_dir.empty() ? location : options_.external_data_dir + "/" + location;
    std::ifstream f(path, std::ios::binary);
    if (!f) return Status::error(Error::NotFound, "%s: cannot open external data '%s'", what.c_str(), path.c_str());
    f.seekg(0, std::ios::end);
    const int64_t file_size = static_cast<int64_t>(f.tellg());
    if (length < 0) length = file_size - offset;
    if (offset < 0 || length < 0 || offset + length > file_size) {
      return Status::error(Error::InvalidProgram, "%s: external data range outside '%s'", what.c_str(), path.c_str());
    }
    external.resize(static_cast<size_t>(length));
    f.seekg(offset);
    f.read(external.data(), length);
    raw = &external;
  } else if (t.has_raw_data()) {
    raw = &t.raw_data();
  }
  const bool is_float = HostTensor::is_float_type(out->dtype);
  const int type = t.data_type();
  auto count_error = [&](int64_t have) {
    return Status::error(Error::InvalidProgram, "%s: %lld values for dims of %lld elements", what.c_str(),
                         static_cast<long long>(have), static_cast<long long>(n));
  };
  // The stored element count must match the dims before anything is allocated for them.
  size_t esize = 0;
  switch (type) {
    case onnx::TensorProto::FLOAT: case onnx::TensorProto::INT32: case onnx::TensorProto::UINT32: esize = 4; break;
    case onnx::TensorProto::DOUBLE: case onnx::TensorProto::INT64: case onnx::TensorProto::UINT64: esize = 8; break;
    case onnx::TensorProto::FLOAT16: case onnx::TensorProto::INT16: case onnx::TensorProto::UINT16: esize = 2; break;
    default: esize = 1;
  }
  int64_t stored = 0;
  if (raw) {
    stored = static_cast<int64_t>(raw->size() / esize);
    if (raw->size() % esize != 0) return count_error(stored);
  } else {
    switch (type) {
      case onnx::TensorProto::FLOAT: stored = t.float_data_size(); break;
      case onnx::TensorProto::DOUBLE: stored = t.double_data_size(); break;
      case onnx::TensorProto::INT64: stored = t.int64_data_size(); break;
      case onnx::TensorProto::UINT32: case onnx::TensorProto::UINT64: stored = t.uint64_data_size(); break;
      default: stored = t.int32_data_size();
    }
  }
  if (stored != n) return count_error(stored);
  if (is_float) out->f.resize(n); else out->i.resize(n);
  if (raw) {
    const char* p = raw->data();
    for (int64_t k = 0; k < n; ++k, p += esize) {
      switch (type) {
        case onnx::TensorProto::FLOAT: out->f[k] = read_le<float>(p); break;
        case onnx::TensorProto::DOUBLE: out->f[k] = static_cast<float>(read_le<double>(p)); break;
        case onnx::TensorProto::FLOAT16: out->f[k] = half_to_float(read_le<uint16_t>(p)); break;
        case onnx::TensorProto::INT64: out->i[k] = read_le<int64_t>(p); break;
        case onnx::TensorProto::UINT64: out->i[k] = static_cast<int64_t>(read_le<uint64_t>(p)); break;
        case onnx::TensorProto::INT32: out->i[k] = read_le<int32_t>(p); break;
        case onnx::TensorProto::UINT32: out->i[k] = read_le<uint32_t>(p); break;
        case onnx::TensorProto::INT16: out->i[k] = read_le<int16_t>(p); break;
        case onnx::TensorProto::UINT16: out->i[k] = read_le<uint16_t>(p); break;
        case onnx::TensorProto::INT8: out->i[k] = read_le<int8_t>(p); break;
        case onnx::TensorProto::BOOL: out->i[k] = read_le<uint8_t>(p) != 0; break;
        default: out->i[k] = read_le<uint8_t>(p); break;
      }
    }
    return Status::ok();
  }
  switch (type) {
    case onnx::TensorProto::FLOAT:
      if (t.float_data_size() != n) return count_error(t.float_data_size());
      std::copy(t.float_data().begin(), t.float_data().end(), out->f.begin());
      break;
    case onnx::TensorProto::DOUBLE:
      if (t.double_data_size() != n) return count_error(t.double_data_size());
      for (int64_t k = 0; k < n; ++k) out->f[k] = static_cast<float>(t.double_data(static_cast<int>(k)));
      break;
    case onnx::TensorProto::FLOAT16:
      if (t.int32_data_size() != n) return count_error(t.int32_data_size());
      for (int64_t k = 0; k < n; ++k) out->f[k] = half_to_float(static_cast<uint16_t>(t.int32_data(static_cast<int>(k))));
      break;
    case onnx::TensorProto::INT64:
      if (t.int64_data_size() != n) return count_error(t.int64_data_size());
      std::copy(t.int64_data().begin(), t.int64_data().end(), out->i.begin());
      break;
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::UINT64:
      if (t.uint64_data_size() != n) return count_error(t.uint64_data_size());
      for (int64_t k = 0; k < n; ++k) out->i[k] = static_cast<int64_t>(t.uint64_data(static_cast<int>(k)));
      break;
    default:
      if (t.int32_data_size() != n) return count_error(t.int32_data_size());
      for (int64_t k = 0; k < n; ++k) {
        int64_t v = t.int32_data(static_cast<int>(k));
        out->i[k] = type == onnx::TensorProto::BOOL ? (v != 0) : v;
      }
  }
  return Status::ok();
}

Status Importer::import_initializers() {
  for (const auto& t : model_.graph().initializer()) {
    HostTensor host;
    TESSERA_RETURN_IF_ERROR(import_tensor(t, "initializer '" + t.name() + "'", &host));
    names_[t.name()] = make_const(t.name(), std::move(host));
  }
  if (model_.graph().sparse_initializer_size() > 0) {
    return Status(Error::NotSupported, "ONNX sparse initializers are not supported");
  }
  return Status::ok();
}

Status Importer::import_inputs() {
  TESSERA_RETURN_IF_ERROR(check_dim_names());
  for (const auto& vi : model_.graph().input()) {
    if (names_.count(vi.name())) continue;  // an initializer listed as input (IR version < 4)
    if (!vi.type().has_tensor_type()) {
      return Status::error(Error::NotSupported, "input '%s' is not a tensor", vi.name().c_str());
    }
    const auto& tt = vi.type().tensor_type();
    ScalarType dtype;
    bool exact;
    if (!map_onnx_type(tt.elem_type(), &dtype, &exact) || !exact) {
      return Status::error(Error::NotSupported, "input '%s' has ONNX element type %s, which is not supported",
                           vi.name().c_str(), onnx_type_name(tt.elem_type()));
    }
    if (!tt.has_shape()) {
      return Status::error(Error::InvalidProgram, "input '%s' has no shape; export it with a fixed rank",
                           vi.name().c_str());
    }
    std::vector<SymExpr> d;
    for (int k = 0; k < tt.shape().dim_size(); ++k) {
      const auto& dim = tt.shape().dim(k);
      if (dim.has_dim_value()) {
        if (dim.dim_value() < 0 || dim.dim_value() > kMaxDimValue) {
          return Status::error(Error::InvalidProgram, "input '%s' dim %d is %lld (must be in [0, 2^40])",
                               vi.name().c_str(), k, static_cast<long long>(dim.dim_value()));
        }
        d.emplace_back(dim.dim_value());
        continue;
      }
      if (!dim.has_dim_param() || dim.dim_param().empty()) {
        return Status::error(Error::InvalidProgram,
                             "input '%s' dim %d has neither a size nor a name; export it with a fixed "
                             "size or a named dynamic axis",
                             vi.name().c_str(), k);
      }
      const std::string& name = dim.dim_param();
      int sym = -1;
      for (size_t s = 0; s < g_.symbols.size(); ++s) {
        if (g_.symbols[s].name == name) sym = static_cast<int>(s);
      }
      if (sym < 0) {
        int bound = -1;
        for (size_t b = 0; b < options_.dims.size(); ++b) {
          if (options_.dims[b].name == name) bound = static_cast<int>(b);
        }
        if (bound < 0) {
          return Status::error(Error::InvalidArgument,
                               "input '%s' dim %d is symbolic ('%s'): bound it with --dim %s=MIN:MAX",
                               vi.name().c_str(), k, name.c_str(), name.c_str());
        }
        const DimBound& b = options_.dims[bound];
        g_.symbols.push_back({name, b.min, b.max});
        sym = static_cast<int>(g_.symbols.size()) - 1;
      }
      d.push_back(SymExpr::symbol(sym));
    }
    int v = g_.add_value(vi.name(), dtype, std::move(d));
    g_.inputs.push_back(v);
    names_[vi.name()] = v;
  }
  return Status::ok();
}

Status Importer::check_dim_names() const {
  // Every --dim must name a symbolic dim (dim_param) of an input; checked before any input asks
  // for its bound, so a misspelt name is reported as such rather than as a missing bound.
  std::vector<std::string> symbols;
  for (const auto& vi : model_.graph().input()) {
    if (names_.count(vi.name()) || !vi.type().has_tensor_type() ||
        !vi.type().tensor_type().has_shape())
      continue;
    for (const auto& dim : vi.type().tensor_type().shape().dim()) {
      if (dim.has_dim_value() || dim.dim_param().empty()) continue;
      if (std::find(symbols.begin(), symbols.end(), dim.dim_param()) == symbols.end()) {
        symbols.push_back(dim.dim_param());
      }
    }
  }
  for (const DimBound& b : options_.dims) {
    if (std::find(symbols.begin(), symbols.end(), b.name) != symbols.end()) continue;
    std::string have;
    Suggester suggest(b.name);
    for (const std::string& s : symbols) {
      have += (have.empty() ? "'" : ", '") + s + "'";
      suggest.consider(s);
    }
    const std::string hint =
        suggest.best().empty() ? "" : "; did you mean '" + std::string(suggest.best()) + "'?";
    return Status::error(
        Error::InvalidArgument, "--dim '%s' names no symbolic dim of the model's inputs (%s%s)%s",
        b.name.c_str(), have.empty() ? "it has none" : "its symbolic dims: ", have.c_str(),
        hint.c_str());
  }
  return Status::ok();
}

void Importer::collect_onnx_shapes() {
  auto add = [&](const onnx::ValueInfoProto& vi) {
    if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
    std::vector<int64_t> d;
    for (const auto& dim : vi.type().tensor_type().shape().dim()) d.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
    onnx_dims_[vi.name()] = std::move(d);
  };
  for (const auto& vi : model_.graph().value_info()) add(vi);
  for (const auto& vi : model_.graph().output()) add(vi);
}

Status Importer::check_against_onnx(int v) {
  if (is_tainted(v)) return Status::ok();
  auto it = onnx_dims_.find(g_.values[v].name);
  if (it == onnx_dims_.end()) return Status::ok();
  const auto& od = it->second;
  const auto& mine = g_.values[v].dims;
  bool mismatch = od.size() != mine.size();
  for (size_t k = 0; !mismatch && k < od.size(); ++k) {
    if (od[k] >= 0 && mine[k].is_const() && mine[k].const_value() != od[k]) mismatch = true;
  }
  if (!mismatch) return Status::ok();
  std::string theirs = "[";
  for (size_t k = 0; k < od.size(); ++k) theirs += (k ? ", " : "") + (od[k] >= 0 ? std::to_string(od[k]) : "?");
  theirs += "]";
  return node_error(Error::InvalidProgram, "output '%s' is %s, but the model declares %s",
                    g_.values[v].name.c_str(), g_.dims_string(v).c_str(), theirs.c_str());
}

bool Importer::output_used(size_t k) const {
  if (k >= static_cast<size_t>(node_->output_size())) return false;
  const std::string& name = node_->output(static_cast<int>(k));
  if (name.empty()) return false;
  auto it = consumers_.find(name);
  return it != consumers_.end() && it->second > 0;
}

Result<std::vector<int64_t>> Importer::const_ints(size_t k, const char* what) const {
  TESSERA_ASSIGN_OR_RETURN(int v, need(k));
  const HostTensor* t = known(v);
  std::vector<int64_t> out;
  if (!t) {
    return Status::error(Error::NotSupported,
                         "ONNX op '%s' in node '%s' (opset %d): %s computed at run time is not supported "
                         "(it must be a constant)",
                         node_->op_type().c_str(), node_name_.c_str(), opset_, what);
  }
  if (t->is_float()) return node_error(Error::InvalidProgram, "%s is not an integer tensor", what);
  if (!t->to_ints(&out)) {
    std::string expr;
    for (const SymExpr& e : t->sym) {
      if (!e.is_const()) { expr = e.to_string(&g_.symbols); break; }
    }
    return Status::error(Error::NotSupported,
                         "ONNX op '%s' in node '%s' (opset %d): %s depends on a symbolic dim (%s), "
                         "which is not supported here",
                         node_->op_type().c_str(), node_name_.c_str(), opset_, what, expr.c_str());
  }
  return out;
}

Result<std::vector<SymExpr>> Importer::shape_ints(size_t k, const char* what) const {
  TESSERA_ASSIGN_OR_RETURN(int v, need(k));
  const HostTensor* t = known(v);
  if (!t) {
    return Status::error(Error::NotSupported,
                         "ONNX op '%s' in node '%s' (opset %d): %s computed from tensor data at run time "
                         "is not supported",
                         node_->op_type().c_str(), node_name_.c_str(), opset_, what);
  }
  if (t->is_float()) return node_error(Error::InvalidProgram, "%s is not an integer tensor", what);
  std::vector<SymExpr> out;
  for (int64_t j = 0; j < t->numel(); ++j) out.push_back(t->int_at(static_cast<size_t>(j)));
  return out;
}

Result<std::vector<int>> Importer::emit(OpType op, std::vector<int> inputs, std::vector<ir::Attr> attrs,
                                        std::vector<std::string> out_names,
                                        std::vector<std::vector<SymExpr>> preset) {
  ir::Node node;
  node.op = op;
  node.name = emitted_ == 0 ? node_name_ : node_name_ + "#" + std::to_string(emitted_);
  ++emitted_;
  node.inputs = std::move(inputs);
  node.attrs = std::move(attrs);
  for (size_t k = 0; k < out_names.size(); ++k) {
    std::string name = out_names[k].empty() ? node.name + ":" + std::to_string(k) : out_names[k];
    std::vector<SymExpr> d = k < preset.size() ? preset[k] : std::vector<SymExpr>{};
    node.outputs.push_back(g_.add_value(std::move(name), ScalarType::Float32, std::move(d)));
  }
  TESSERA_RETURN_IF_ERROR(infer_shapes(g_, node));
  for (int v : node.outputs) {
    TESSERA_RETURN_IF_ERROR(check_size(v));
    if (current_taint_ || pool_diverges_) taint(v);
    TESSERA_RETURN_IF_ERROR(check_against_onnx(v));
  }
  std::vector<HostTensor> folded;
  TESSERA_ASSIGN_OR_RETURN(bool done, evaluate_node(g_, node, &folded));
  if (done) {
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      g_.values[node.outputs[k]].data = std::make_shared<const HostTensor>(std::move(folded[k]));
    }
  } else {
    for (int v : node.inputs) {
      const HostTensor* t = known(v);
      if (!t || !t->is_symbolic()) continue;
      std::string expr;
      for (const SymExpr& e : t->sym) {
        if (!e.is_const()) { expr = e.to_string(&g_.symbols); break; }
      }
      return Status::error(Error::NotSupported,
                           "node '%s' (%s) computes at run time with shape value '%s' = %s, which depends "
                           "on a symbolic dim; only integer shape arithmetic is folded",
                           node.name.c_str(), ir::op_name(op), g_.values[v].name.c_str(), expr.c_str());
    }
    g_.nodes.push_back(node);
  }
  for (size_t k = 0; k < out_names.size(); ++k) {
    if (!out_names[k].empty()) names_[out_names[k]] = node.outputs[k];
  }
  return node.outputs;
}

Status Importer::resolve_auto_pad(int x, const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                                  const std::vector<int64_t>& dilations, std::vector<int64_t>* pads) const {
  const std::string auto_pad = astr("auto_pad", "NOTSET");
  const size_t n = kernel.size();
  if (auto_pad == "NOTSET") {
    if (pads->empty()) pads->assign(2 * n, 0);
    if (pads->size() != 2 * n) return node_error(Error::InvalidProgram, "pads has %zu entries (need %zu)", pads->size(), 2 * n);
    return Status::ok();
  }
  pads->assign(2 * n, 0);
  if (auto_pad == "VALID") return Status::ok();
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") {
    return node_error(Error::InvalidProgram, "unknown auto_pad '%s'", auto_pad.c_str());
  }
  for (size_t i = 0; i < n; ++i) {
    const SymExpr& d = dims(x)[2 + i];
    if (!d.is_const()) {
      return unsupported_use("auto_pad %s along a symbolic spatial dim (%s)", auto_pad.c_str(),
                             d.to_string(&g_.symbols).c_str());
    }
    const int64_t in = d.const_value();
    const int64_t out = (in + strides[i] - 1) / strides[i];
    const int64_t total = std::max<int64_t>(0, (out - 1) * strides[i] + dilations[i] * (kernel[i] - 1) + 1 - in);
    const int64_t small = total / 2, big = total - small;
    (*pads)[i] = auto_pad == "SAME_UPPER" ? small : big;
    (*pads)[n + i] = auto_pad == "SAME_UPPER" ? big : small;
  }
  return Status::ok();
}

Status Importer::conv(bool transpose) {
  TESSERA_ASSIGN_OR_RETURN(int x, need(0));
  TESSERA_ASSIGN_OR_RETURN(int w, need(1));
  const int b = in(2);
  if (rank(x) < 3 || rank(w) != rank(x)) {
    return node_error(Error::InvalidProgram, "input %s and weight %s must have the same rank >= 3",
                      g_.dims_string(x).c_str(), g_.dims_string(w).c_str());
  }
  const size_t n = rank(x) - 2;
  std::vector<int64_t> kernel;
  for (size_t i = 0; i < n; ++i) {
    if (!dims(w)[2 + i].is_const()) return node_error(Error::InvalidProgram, "symbolic kernel size");
    kernel.push_back(dims(w)[2 + i].const_value());
  }
  if (auto ks = aints("kernel_shape"); ks && *ks != kernel) {
    return node_error(Error::InvalidProgram, "kernel_shape disagrees with the weight %s", g_.dims_string(w).c_str());
  }
  std::vector<int64_t> strides = aints("strides").value_or(std::vector<int64_t>(n, 1));
  std::vector<int64_t> dilations = aints("dilations").value_or(std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = aints("pads").value_or(std::vector<int64_t>{});
  if (strides.size() != n || dilations.size() != n) {
    return node_error(Error::InvalidProgram, "strides/dilations must have %zu entries", n);
  }
  for (size_t i = 0; i < n; ++i) {
    if (strides[i] < 1 || dilations[i] < 1 || strides[i] > kMaxWindowValue || dilations[i] > kMaxWindowValue ||
        kernel[i] < 1 || kernel[i] > kMaxWindowValue) {
      return node_error(Error::InvalidProgram, "kernel size, strides and dilations must be in [1, 2^31)");
    }
  }
  const int64_t group = aint("group", 1);
  std::vector<ir::Attr> attrs;
  if (!transpose) {
    TESSERA_RETURN_IF_ERROR(resolve_auto_pad(x, kernel, strides, dilations, &pads));
  } else {
    std::vector<int64_t> out_pad = aints("output_padding").value_or(std::vector<int64_t>(n, 0));
    if (out_pad.size() != n) return node_error(Error::InvalidProgram, "output_padding must have %zu entries", n);
    const std::string auto_pad = astr("auto_pad", "NOTSET");
    auto output_shape = aints("output_shape");
    if (output_shape && output_shape->size() == n + 2) output_shape->erase(output_shape->begin(), output_shape->begin() + 2);
    if (output_shape || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      pads.assign(2 * n, 0);
      for (size_t i = 0; i < n; ++i) {
        const SymExpr& d = dims(x)[2 + i];
        if (!d.is_const()) return unsupported_use("output_shape/auto_pad along a symbolic spatial dim");
        const int64_t in_size = d.const_value();
        const int64_t target = output_shape ? (*output_shape)[i] : in_size * strides[i];
        const int64_t total = strides[i] * (in_size - 1) + out_pad[i] + (kernel[i] - 1) * dilations[i] + 1 - target;
        if (total < 0) {
          // Grow through output_padding, as ONNX Runtime does.
          out_pad[i] += -total;
          continue;
        }
        const bool upper = auto_pad == "SAME_UPPER";
        pads[i] = upper ? total / 2 : total - total / 2;
        pads[n + i] = total - pads[i];
      }
    } else if (auto_pad == "VALID") {
      pads.assign(2 * n, 0);
    } else if (pads.empty()) {
      pads.assign(2 * n, 0);
    }
    if (pads.size() != 2 * n) return node_error(Error::InvalidProgram, "pads must have %zu entries", 2 * n);
    attrs.push_back(ir::Attr::make_ints("output_padding", out_pad));
  }
  for (int64_t p : pads) {
    if (p < 0 || p > kMaxWindowValue) return node_error(Error::InvalidProgram, "pads must be in [0, 2^31)");
  }
  if (group < 1 || group > kMaxWindowValue) return node_error(Error::InvalidProgram, "group %lld", static_cast<long long>(group));
  attrs.push_back(ir::Attr::make_ints("strides", strides));
  attrs.push_back(ir::Attr::make_ints("dilations", dilations));
  attrs.push_back(ir::Attr::make_ints("pads", pads));
  attrs.push_back(ir::Attr::make_int("group", group));
  return emit1(transpose ? OpType::ConvTranspose : OpType::Conv, {x, w, b}, std::move(attrs)).status();
}

Status Importer::pool(OpType op) {
  TESSERA_ASSIGN_OR_RETURN(int x, need(0));
  if (output_used(1)) return unsupported_use("the Indices output");
  if (aint("storage_order", 0) != 0) return unsupported_use("storage_order=1");
  auto kernel = aints("kernel_shape");
  if (!kernel || rank(x) != kernel->size() + 2) {
    return node_error(Error::InvalidProgram, "kernel_shape must have one entry per spatial dim of %s",
                      g_.dims_string(x).c_str());
  }
  const size_t n = kernel->size();
  std::vector<int64_t> strides = aints("strides").value_or(std::vector<int64_t>(n, 1));
  std::vector<int64_t> dilations = aints("dilations").value_or(std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = aints("pads").value_or(std::vector<int64_t>{});
  if (strides.size() != n || dilations.size() != n) return node_error(Error::InvalidProgram, "strides/dilations size");
  for (size_t i = 0; i < n; ++i) {
    if ((*kernel)[i] < 1 || strides[i] < 1 || dilations[i] < 1 || (*kernel)[i] > kMaxWindowValue ||
        strides[i] > kMaxWindowValue || dilations[i] > kMaxWindowValue) {
      return node_error(Error::InvalidProgram, "kernel_shape, strides and dilations must be in [1, 2^31)");
    }
  }
  TESSERA_RETURN_IF_ERROR(resolve_auto_pad(x, *kernel, strides, dilations, &pads));
  for (int64_t p : pads) {
    if (p < 0 || p > kMaxWindowValue) return node_error(Error::InvalidProgram, "pads must be in [0, 2^31)");
  }
  std::vector<ir::Attr> attrs = {ir::Attr::make_ints("kernel_shape", *kernel), ir::Attr::make_ints("strides", strides),
                                 ir::Attr::make_ints("pads", pads), ir::Attr::make_ints("dilations", dilations),
                                 ir::Attr::make_int("ceil_mode", aint("ceil_mode", 0))};
  if (op == OpType::AveragePool) attrs.push_back(ir::Attr::make_int("count_include_pad", aint("count_include_pad", 0)));
  // ONNX before opset 19 lets the last ceil-mode window start in the end padding; PyTorch (and
  // the kernels) do not, so exporters may declare one more output row than PyTorch computes.
  // Follow PyTorch and do not compare this output, or what depends on it, with ONNX's shapes.
  pool_diverges_ = false;
  if (aint("ceil_mode", 0) != 0) {
    for (size_t i = 0; i < n; ++i) {
      const SymExpr& in = dims(x)[2 + i];
      const SymExpr span = in + SymExpr(pads[i] + pads[n + i] - (dilations[i] * ((*kernel)[i] - 1) + 1));
      const SymExpr onnx_size = SymExpr::ceil_div(span, SymExpr(strides[i])) + SymExpr(1);
      if (!(onnx_size == window_output_dim(in, (*kernel)[i], strides[i], dilations[i], pads[i], pads[n + i], true))) {
        pool_diverges_ = true;
      }
    }
  }
  Status st = emit1(op, {x}, std::move(attrs)).status();
  pool_diverges_ = false;
  return st;
}

Status Importer::reduce(OpType op) {
  TESSERA_ASSIGN_OR_RETURN(int x, need(0));
  std::vector<int64_t> axes;
  const bool axes_as_input = node_->op_type() == "ReduceSum" && opset_ >= 13;
  if (axes_as_input) {
    if (in(1) >= 0) {
      TESSERA_ASSIGN_OR_RETURN(axes, const_ints(1, "axes"));
    }
  } else {
    axes = aints("axes").value_or(std::vector<int64_t>{});
  }
  if (axes.empty() && aint("noop_with_empty_axes", 0) != 0) {
    alias(0, x);
    return Status::ok();
  }
  if (axes.empty()) {
    for (size_t i = 0; i < rank(x); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  for (int64_t& a : axes) {
    TESSERA_ASSIGN_OR_RETURN(a, norm_axis(a, rank(x)));
  }
  std::sort(axes.begin(), axes.end());
  return emit1(op, {x}, {ir::Attr::make_ints("axes", axes), ir::Attr::make_int("keepdims", aint("keepdims", 1))})
      .status();
}

Status Importer::softmax() {
  TESSERA_ASSIGN_OR_RETURN(int x, need(0));
  const size_t r = rank(x);
  TESSERA_ASSIGN_OR_RETURN(int64_t axis, norm_axis(aint("axis", opset_ >= 13 ? -1 : 1), r));
  if (opset_ >= 13 || axis == static_cast<int64_t>(r) - 1) {
    return emit1(OpType::Softmax, {x}, {ir::Attr::make_int("axis", axis)}).status();
  }
  // Before opset 13 Softmax normalises over the input coerced to 2-D at `axis`.
  std::vector<SymExpr> flat = {product(dims(x), 0, axis), product(dims(x), axis)};
  const std::vector<SymExpr> orig = dims(x);
  TESSERA_ASSIGN_OR_RETURN(auto r1, emit(OpType::Reshape, {x}, {}, {""}, {flat}));
  TESSERA_ASSIGN_OR_RETURN(auto r2, emit(OpType::Softmax, {r1[0]}, {ir::Attr::make_int("axis", 1)}, {""}));
  return emit(OpType::Reshape, {r2[0]}, {}, {node_->output(0)}, {orig}).status();
}

Status Importer::reshape() {
  TESSERA_ASSIGN_OR_RETURN(int x, need(0));
  TESSERA_ASSIGN_OR_RETURN(std::vector<SymExpr> target, shape_ints(1, "the target shape"));
  const bool allowzero = aint("allowzero", 0) != 0;
  const auto& in_dims = dims(x);
  int infer = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (!target[i].is_const()) continue;
    const int64_t t = target[i].const_value();
    if (t == 0 && !allowzero) {
      if (i >= in_dims.size()) return node_error(Error::InvalidProgram, "0 in the target shape beyond the input rank");
      target[i] = in_dims[i];
    } else if (t == -1) {
      if (infer >= 0) return node_error(Error::InvalidProgram, "more than one -1 in the target shape");
      infer = static_cast<int>(i);
    } else if (t < 0) {
      return node_error(Error::InvalidProgram, "target dim %lld", static_cast<long long>(t));
    }
  }
  if (infer >= 0) {
    SymExpr known(1);
    for (size_t i = 0; i < target.size(); ++i) {
      if (static_cast<int>(i) != infer) known = known * target[i];
    }
    if (known.is_const() && known.const_value() == 0) return node_error(Error::InvalidProgram, "-1 with a zero-sized target");
    target[infer] = SymExpr::floor_div(product(in_dims), known);
  }
  return emit1(OpType::Reshape, {x}, {}, std::move(target), true).status();
}

Status Importer::squeeze(bool unsqueeze) {
  TESSERA_ASSIGN_OR_RETURN(int x, need(0));
  std::vector<int64_t> axes;
  bool have_axes = false;
  if (opset_ >= 13) {
    if (in(1) >= 0) {
      TESSERA_ASSIGN_OR_RETURN(axes, const_ints(1, "axes"));
      have_axes = true;
    }
  } else if (auto a = aints("axes")) {
    axes = *a;
    have_axes = true;
  }
  const auto& in_dims = dims(x);
  std::vector<SymExpr> out;
  if (unsqueeze) {
    if (!have_axes) return node_error(Error::InvalidProgram, "Unsqueeze without axes");
    const size_t r = in_dims.size() + axes.size();
    std::vector<bool> inserted(r, false);
    for (int64_t a : axes) {
      TESSERA_ASSIGN_OR_RETURN(int64_t ax, norm_axis(a, r));
      if (inserted[ax]) return node_error(Error::InvalidProgram, "axis %lld repeated", static_cast<long long>(a));
      inserted[ax] = true;
    }
    size_t j = 0;
    for (size_t i = 0; i < r; ++i) out.push_back(inserted[i] ? SymExpr(1) : in_dims[j++]);
  } else {
    std::vector<bool> removed(in_dims.size(), false);
    if (!have_axes) {
      for (size_t i = 0; i < in_dims.size(); ++i) removed[i] = in_dims[i].is_const() && in_dims[i].const_value() == 1;
    }
    for (int64_t a : axes) {
      TESSERA_ASSIGN_OR_RETURN(int64_t ax, norm_axis(a, in_dims.size()));
      if (!(in_dims[ax].is_const() && in_dims[ax].const_value() == 1)) {
        return node_error(Error::InvalidProgram, "cannot squeeze axis %lld of %s", static_cast<long long>(a),
                          g_.dims_string(x).c_str());
      }
      removed[ax] = true;
    }
    for (size_t i = 0; i < in_dims.size(); ++i) {
      if (!removed[i]) out.push_back(in_dims[i]);
    }
  }
  return emit1(unsqueeze ? OpType::Unsqueeze : OpType::Squeeze, {x}, {}, std::move(out), true).status();
}

Status Importer::split() {
  TESSERA_ASSIGN_OR_RETURN(int x, need(0));
  TESSERA_ASSIGN_OR_RETURN(int64_t axis, norm_axis(aint("axis", 0), rank(x)));
  const size_t outputs = static_cast<size_t>(node_->output_size());
  if (outputs == 0) return node_error(Error::InvalidProgram, "no outputs");
  std::vector<SymExpr> sizes;
  std::vector<int64_t> given;
  bool have = false;
  if (opset_ >= 13) {
    if (in(1) >= 0) {
      TESSERA_ASSIGN_OR_RETURN(given, const_ints(1, "split"));
      have = true;
    }
  } else if (auto s = aints("split")) {
    given = *s;
    have = true;
  }
  const SymExpr& d = dims(x)[axis];
  if (have) {
    if (given.size() != outputs) return node_error(Error::InvalidProgram, "split has %zu sizes for %zu outputs", given.size(), outputs);
    for (int64_t s : given) {
      if (s < 0) return node_error(Error::InvalidProgram, "negative split size %lld", static_cast<long long>(s));
      sizes.emplace_back(s);
    }
  } else {
    SymExpr each = SymExpr::floor_div(d, SymExpr(static_cast<int64_t>(outputs)));
    if (!(each * SymExpr(static_cast<int64_t>(outputs)) == d)) {
      return node_error(Error::InvalidProgram, "axis size %s does not split evenly into %zu", d.to_string(&g_.symbols).c_str(), outputs);
    }
    sizes.assign(outputs, each);
  }
  std::vector<std::vector<SymExpr>> preset;
  std::vector<std::string> names;
  for (size_t k = 0; k < outputs; ++k) {
    std::vector<SymExpr> od = dims(x);
    od[axis] = sizes[k];
    preset.push_back(std::move(od));
    names.push_back(node_->output(static_cast<int>(k)));
  }
  return emit(OpType::Split, {x}, {ir::Attr::make_int("axis", axis)}, names, preset).status();
}

Status Importer::slice() {
  TESSERA_ASSIGN_OR_RETURN(int x, need(0));
  TESSERA_ASSIGN_OR_RETURN(std::vector<SymExpr> starts_s, shape_ints(1, "starts"));
  TESSERA_ASSIGN_OR_RETURN(std::vector<SymExpr> ends_s, shape_ints(2, "ends"));
  const size_t r = rank(x);
  std::vector<int64_t> axes, steps;
  if (in(3) >= 0) {
    TESSERA_ASSIGN_OR_RETURN(axes, const_ints(3, "axes"));
  } else {
    for (size_t i = 0; i < starts_s.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (in(4) >= 0) {
    TESSERA_ASSIGN_OR_RETURN(steps, const_ints(4, "steps"));
  } else {
    steps.assign(starts_s.size(), 1);
  }
  if (ends_s.size() != starts_s.size() || axes.size() != starts_s.size() || steps.size() != starts_s.size()) {
    return node_error(Error::InvalidProgram, "starts, ends, axes and steps differ in length");
  }
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  std::vector<int64_t> starts, ends;
  for (size_t k = 0; k < starts_s.size(); ++k) {
    TESSERA_ASSIGN_OR_RETURN(axes[k], norm_axis(axes[k], r));
    const SymExpr& d = dims(x)[axes[k]];
    // A bound equal to the (symbolic) dim itself, as in x[:, :x.shape[1]], means "to the end".
    auto resolve = [&](const SymExpr& e, const char* what, int64_t* out) -> Status {
      if (e.is_const()) {
        *out = e.const_value();
        return Status::ok();
      }
      if (e == d) {
        *out = steps[k] > 0 ? kMax : -1;
        return Status::ok();
      }
      return unsupported_use("a %s that depends on a symbolic dim (%s)", what, e.to_string(&g_.symbols).c_str());
    };
    int64_t s, e;
    TESSERA_RETURN_IF_ERROR(resolve(starts_s[k], "start", &s));
    TESSERA_RETURN_IF_ERROR(resolve(ends_s[k], "end", &e));
    if (steps[k] == 0) return node_error(Error::InvalidProgram, "step 0");
    if (d.is_const() && steps[k] > 0) {
      const int64_t dim = d.const_value();
      if (s < 0) s += dim;
      if (e < 0) e += dim;
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
    }
    starts.push_back(s);
    ends.push_back(e);
  }
  return emit1(OpType::Slice, {x},
               {ir::Attr::make_ints("starts", starts), ir::Attr::make_ints("ends", ends),
                ir::Attr::make_ints("axes", axes), ir::Attr::make_ints("steps", steps)})
      .status();
}

Status Importer::pad() {
  TESSERA_ASSIGN_OR_RETURN(int x, need(0));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> pads, const_ints(1, "pads"));
  if (num_inputs() > 3 && in(3) >= 0) return unsupported_use("the axes input");
  float value = 0.0f;
  if (int cv = in(2); cv >= 0) {
    const HostTensor* t = known(cv);
    if (!t) return unsupported_use("a constant_value computed at run time");
    if (t->numel() != 1) return node_error(Error::InvalidProgram, "constant_value must be a scalar");
    value = t->is_float() ? t->f[0] : static_cast<float>(t->int_at(0).const_value());
  }
  const std::string mode = astr("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return unsupported_use("mode '%s'", mode.c_str());
  for (int64_t p : pads) {
    if (p < 0) return unsupported_use("negative pads");
    if (p > kMaxDimValue) return node_error(Error::InvalidProgram, "pad %lld", static_cast<long long>(p));
  }
  return emit1(OpType::Pad, {x},
               {ir::Attr::make_ints("pads", pads), ir::Attr::make_string("mode", mode), ir::Attr::make_float("value", value)})
      .status();
}

Status Importer::resize() {
  TESSERA_ASSIGN_OR_RETURN(int x, need(0));
  const std::string mode = astr("mode", "nearest");
  if (mode != "nearest" && mode != "linear") return unsupported_use("mode '%s'", mode.c_str());
  if (aint("exclude_outside", 0) != 0) return unsupported_use("exclude_outside=1");
  const std::string ctm = astr("coordinate_transformation_mode", "half_pixel");
  if (ctm == "tf_crop_and_resize") return unsupported_use("coordinate_transformation_mode 'tf_crop_and_resize'");
  const std::string nearest = astr("nearest_mode", "round_prefer_floor");
  const auto& in_dims = dims(x);
  std::vector<SymExpr> out_dims;
  std::vector<float> scales;
  const int scales_in = in(2), sizes_in = in(3);
  const HostTensor* st = known(scales_in);
  if (scales_in >= 0 && !st) return unsupported_use("scales computed at run time");
  if (st && st->numel() > 0) {
    if (!st->is_float() || static_cast<size_t>(st->numel()) != in_dims.size()) {
      return node_error(Error::InvalidProgram, "scales must be %zu floats", in_dims.size());
    }
    scales = st->f;
    for (size_t i = 0; i < in_dims.size(); ++i) {
      const float s = scales[i];
      if (!(s > 0)) return node_error(Error::InvalidProgram, "scale %g", s);
      if (in_dims[i].is_const()) {
        const double size = std::floor(static_cast<double>(in_dims[i].const_value()) * s);
        if (!(size >= 1 && size < 9.0e15)) return node_error(Error::InvalidProgram, "scale %g gives output size %g", s, size);
        out_dims.emplace_back(static_cast<int64_t>(size));
      } else if (s == std::floor(s)) {
        out_dims.push_back(in_dims[i] * SymExpr(static_cast<int64_t>(s)));
      } else {
        return unsupported_use("a fractional scale along a symbolic dim");
      }
    }
  } else if (sizes_in >= 0) {
    TESSERA_ASSIGN_OR_RETURN(out_dims, shape_ints(3, "sizes"));
    if (out_dims.size() != in_dims.size()) return node_error(Error::InvalidProgram, "sizes must have %zu entries", in_dims.size());
    for (const SymExpr& d : out_dims) {
      if (d.is_const() && d.const_value() < 1) return node_error(Error::InvalidProgram, "output size %lld", static_cast<long long>(d.const_value()));
    }
  } else {
    return node_error(Error::InvalidProgram, "neither scales nor sizes given");
  }
  std::vector<ir::Attr> attrs = {ir::Attr::make_string("mode", mode),
                                 ir::Attr::make_string("coordinate_transformation_mode", ctm),
                                 ir::Attr::make_string("nearest_mode", nearest)};
  if (!scales.empty()) attrs.push_back(ir::Attr::make_floats("scales", scales));
  return emit1(OpType::Resize, {x}, std::move(attrs), std::move(out_dims), true).status();
}

Status Importer::expand() {
  TESSERA_ASSIGN_OR_RETURN(int x, need(0));
  TESSERA_ASSIGN_OR_RETURN(std::vector<SymExpr> shape, shape_ints(1, "the shape"));
  auto out = broadcast_shapes(g_, dims(x), shape);
  if (!out.ok()) return node_error(Error::ShapeMismatch, "%s", out.status().message());
  const std::vector<SymExpr>& od = out.value();
  if (od == dims(x)) {
    alias(0, x);
    return Status::ok();
  }
  std::vector<int64_t> static_out;
  bool is_static = true;
  for (const SymExpr& d : od) {
    if (!d.is_const()) is_static = false;
    static_out.push_back(d.is_const() ? d.const_value() : 0);
  }
  if (const HostTensor* t = known(x); t && is_static) {
    bind_const(0, broadcast_to(*t, static_out));
    return Status::ok();
  }
  // At run time: x + zeros, with the zeros holding only the dims x lacks.
  const auto& xd = dims(x);
  std::vector<int64_t> zd;
  for (size_t i = 0; i < od.size(); ++i) {
    const size_t xi = i + xd.size();
    const bool from_x = xi >= od.size() && xd[xi - od.size()] == od[i];
    if (from_x) {
      zd.push_back(1);
    } else if (od[i].is_const()) {
      zd.push_back(od[i].const_value());
    } else {
      return unsupported_use("expanding a dim to a symbolic size");
    }
  }
  HostTensor zeros;
  zeros.dtype = g_.values[x].dtype;
  zeros.dims = zd;
  const int64_t n = zeros.numel();
  if (n > kMaxFoldElements) return unsupported_use("expanding to a tensor this large");
  if (zeros.is_float()) zeros.f.assign(n, 0.0f); else zeros.i.assign(n, 0);
  int z = make_const(node_name_ + ":zeros", std::move(zeros));
  return emit1(OpType::Add, {x, z}, {}).status();
}

Status Importer::clip() {
  TESSERA_ASSIGN_OR_RETURN(int x, need(0));
  std::vector<ir::Attr> attrs;
  const char* names[2] = {"min", "max"};
  for (int k = 0; k < 2; ++k) {
    const int v = in(1 + k);
    if (v < 0) continue;
    const HostTensor* t = known(v);
    if (!t) return unsupported_use("%s computed at run time", names[k]);
    if (t->numel() != 1 || t->is_symbolic()) return node_error(Error::InvalidProgram, "%s must be a scalar", names[k]);
    attrs.push_back(ir::Attr::make_float(names[k], static_cast<float>(t->as_double(0))));
  }
  return emit1(OpType::Clip, {x}, std::move(attrs)).status();
}

Status Importer::variadic(OpType op) {
  if (num_inputs() == 0) return node_error(Error::InvalidProgram, "no inputs");
  TESSERA_ASSIGN_OR_RETURN(int acc, need(0));
  if (num_inputs() == 1) {
    alias(0, acc);
    return Status::ok();
  }
  for (size_t k = 1; k < num_inputs(); ++k) {
    TESSERA_ASSIGN_OR_RETURN(int v, need(k));
    const bool last = k + 1 == num_inputs();
    TESSERA_ASSIGN_OR_RETURN(auto outs, emit(op, {acc, v}, {}, {last ? node_->output(0) : std::string()}));
    acc = outs[0];
  }
  return Status::ok();
}

Status Importer::import_node(const onnx::NodeProto& node, size_t index) {
  current_taint_ = false;
  for (const auto& name : node.input()) {
    auto it = names_.find(name);
    if (it != names_.end() && is_tainted(it->second)) current_taint_ = true;
  }
  Status st = dispatch_node(node, index);
  if (st.is_ok() && current_taint_) {
    for (const auto& name : node.output()) {
      auto it = names_.find(name);
      if (it != names_.end()) taint(it->second);
    }
  }
  current_taint_ = false;
  return st;
}

Status Importer::dispatch_node(const onnx::NodeProto& node, size_t index) {
  node_ = &node;
  emitted_ = 0;
  node_name_ = !node.name().empty() ? node.name()
                                    : node.op_type() + "_" + std::to_string(index);
  if (!node.domain().empty() && node.domain() != "ai.onnx") return unsupported();
  if (node.output_size() == 0) return node_error(Error::InvalidProgram, "no outputs");
  const std::string& op = node.op_type();

  // Ops the table marks Direct (tessera/ir/ops.def) map one to one.
  OpType direct_op;
  const ir::OpInfo* direct = ir::op_from_name(op, &direct_op) ? ir::op_info(direct_op) : nullptr;
  if (direct != nullptr && direct->direct_import) {
    std::vector<int> inputs;
    for (size_t k = 0; k < num_inputs(); ++k) {
      TESSERA_ASSIGN_OR_RETURN(int v, need(k));
      inputs.push_back(v);
    }
    if (direct_op == OpType::Pow && inputs.size() == 2 &&
        g_.values[inputs[0]].dtype != g_.values[inputs[1]].dtype) {
      // ONNX allows an exponent of another type; the IR wants one type.
      const HostTensor* e = known(inputs[1]);
      HostTensor cast;
      if (!e || !cast_tensor(*e, g_.values[inputs[0]].dtype, &cast)) return unsupported_use("an exponent of another type computed at run time");
      inputs[1] = make_const(node_name_ + ":exponent", std::move(cast));
    }
    TESSERA_ASSIGN_OR_RETURN(std::vector<ir::Attr> attrs, declared_attrs(*direct));
    return emit1(direct_op, std::move(inputs), std::move(attrs)).status();
  }
  if (op == "Identity" || op == "Dropout") {
    if (op == "Dropout" && output_used(1)) return unsupported_use("the mask output");
    TESSERA_ASSIGN_OR_RETURN(int x, need(0));
    alias(0, x);
    return Status::ok();
  }
  if (op == "Constant") {
    HostTensor t;
    if (const auto* a = attr("value")) {
      TESSERA_RETURN_IF_ERROR(import_tensor(a->t(), "node '" + node_name_ + "' (Constant)", &t));
    } else if (const auto* a = attr("value_float")) {
      t = HostTensor::scalar_float(a->f());
    } else if (const auto* a = attr("value_floats")) {
      t.dtype = ScalarType::Float32;
      t.f.assign(a->floats().begin(), a->floats().end());
      t.dims = {static_cast<int64_t>(t.f.size())};
    } else if (const auto* a = attr("value_int")) {
      t.dtype = ScalarType::Int64;
      t.i = {a->i()};
    } else if (const auto* a = attr("value_ints")) {
      t = HostTensor::ints(std::vector<int64_t>(a->ints().begin(), a->ints().end()));
    } else {
      return unsupported_use("a value other than a dense tensor or numbers");
    }
    bind_const(0, std::move(t));
    return Status::ok();
  }
  if (op == "Shape") {
    TESSERA_ASSIGN_OR_RETURN(int x, need(0));
    const int64_t r = static_cast<int64_t>(rank(x));
    int64_t start = aint("start", 0), end = aint("end", r);
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = std::clamp<int64_t>(start, 0, r);
    end = std::clamp<int64_t>(end, start, r);
    HostTensor t;
    t.dtype = ScalarType::Int64;
    t.dims = {end - start};
    bool sym = false;
    for (int64_t i = start; i < end; ++i) sym |= !dims(x)[i].is_const();
    for (int64_t i = start; i < end; ++i) {
      if (sym) t.sym.push_back(dims(x)[i]); else t.i.push_back(dims(x)[i].const_value());
    }
    bind_const(0, std::move(t));
    return Status::ok();
  }
  if (op == "Size") {
    TESSERA_ASSIGN_OR_RETURN(int x, need(0));
    HostTensor t;
    t.dtype = ScalarType::Int64;
    SymExpr n = product(dims(x));
    if (n.is_const()) t.i = {n.const_value()}; else t.sym = {n};
    bind_const(0, std::move(t));
    return Status::ok();
  }
  if (op == "ConstantOfShape") {
    TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> shape, const_ints(0, "the shape"));
    HostTensor t;
    HostTensor value = HostTensor::scalar_float(0.0f);
    if (const auto* a = attr("value")) {
      TESSERA_RETURN_IF_ERROR(import_tensor(a->t(), "node '" + node_name_ + "' value", &value));
      if (value.numel() != 1) return node_error(Error::InvalidProgram, "value must have one element");
    }
    value.dims.clear();
    int64_t n = 1;
    for (int64_t d : shape) {
      if (d < 0) return node_error(Error::InvalidProgram, "negative dim");
      if (__builtin_mul_overflow(n, d, &n)) n = INT64_MAX;
    }
    if (n > kMaxFoldElements) return unsupported_use("a constant this large");
    t = broadcast_to(value, shape);
    bind_const(0, std::move(t));
    return Status::ok();
  }
  if (op == "Range") {
    for (size_t k = 0; k < 3; ++k) {
      TESSERA_ASSIGN_OR_RETURN(int v, need(k));
      const HostTensor* t = known(v);
      if (!t || t->numel() != 1) return unsupported_use("bounds computed at run time");
      if (t->is_symbolic() && !t->sym[0].is_const()) return unsupported_use("bounds that depend on a symbolic dim");
    }
    const HostTensor* s = known(in(0));
    const double start = s->is_symbolic() ? static_cast<double>(s->sym[0].const_value()) : s->as_double(0);
    auto val = [&](int k) {
      const HostTensor* t = known(in(k));
      return t->is_symbolic() ? static_cast<double>(t->sym[0].const_value()) : t->as_double(0);
    };
    const double limit = val(1), delta = val(2);
    if (delta == 0) return node_error(Error::InvalidProgram, "delta 0");
    const double count = std::ceil((limit - start) / delta);
    if (!(count <= static_cast<double>(kMaxFoldElements))) return unsupported_use("a range this large");
    const int64_t n = std::max<int64_t>(0, static_cast<int64_t>(count));
    HostTensor t;
    t.dtype = s->dtype;
    t.dims = {n};
    for (int64_t k = 0; k < n; ++k) {
      if (t.is_float()) t.f.push_back(static_cast<float>(start + k * delta));
      else t.i.push_back(static_cast<int64_t>(start + k * delta));
    }
    bind_const(0, std::move(t));
    return Status::ok();
  }
  if (op == "Cast") {
    TESSERA_ASSIGN_OR_RETURN(int x, need(0));
    ScalarType to;
    bool exact;
    const int64_t onnx_to = aint("to", 0);
    if (!map_onnx_type(static_cast<int>(onnx_to), &to, &exact))
      return unsupported_use("cast to %s", onnx_type_name(static_cast<int>(onnx_to)));
    if (const HostTensor* t = known(x)) {
      HostTensor out;
      if (cast_tensor(*t, to, &out)) {
        bind_const(0, std::move(out));
        return Status::ok();
      }
    }
    if (!exact) return unsupported_use("cast to %s", onnx_type_name(static_cast<int>(onnx_to)));
    if (g_.values[x].dtype == to) {
      alias(0, x);
      return Status::ok();
    }
    return emit1(OpType::Cast, {x}, {ir::Attr::make_int("to", static_cast<int64_t>(to))}).status();
  }
  if (op == "Conv") return conv(false);
  if (op == "ConvTranspose") return conv(true);
  if (op == "Gemm") {
    TESSERA_ASSIGN_OR_RETURN(int a, need(0));
    TESSERA_ASSIGN_OR_RETURN(int b, need(1));
    return emit1(OpType::Gemm, {a, b, in(2)},
                 {ir::Attr::make_float("alpha", afloat("alpha", 1.0f)), ir::Attr::make_float("beta", afloat("beta", 1.0f)),
                  ir::Attr::make_int("transA", aint("transA", 0)), ir::Attr::make_int("transB", aint("transB", 0))})
        .status();
  }
  if (op == "Min" || op == "Max" || op == "Sum") {
    return variadic(op == "Min" ? OpType::Min : op == "Max" ? OpType::Max : OpType::Add);
  }
  if (op == "Clip") return clip();
  if (op == "Softmax") return softmax();
  if (op == "LayerNormalization") {
    if (output_used(1) || output_used(2)) return unsupported_use("the Mean/InvStdDev outputs");
    TESSERA_ASSIGN_OR_RETURN(int x, need(0));
    TESSERA_ASSIGN_OR_RETURN(int scale, need(1));
    TESSERA_ASSIGN_OR_RETURN(int64_t axis, norm_axis(aint("axis", -1), rank(x)));
    return emit1(OpType::LayerNormalization, {x, scale, in(2)},
                 {ir::Attr::make_int("axis", axis), ir::Attr::make_float("epsilon", afloat("epsilon", 1e-5f))})
        .status();
  }
  if (op == "BatchNormalization") {
    if (aint("training_mode", 0) != 0) return unsupported_use("training_mode=1");
    for (int k = 1; k < node.output_size(); ++k) {
      if (output_used(k)) return unsupported_use("the running-statistics outputs (training)");
    }
    std::vector<int> inputs;
    for (size_t k = 0; k < 5; ++k) {
      TESSERA_ASSIGN_OR_RETURN(int v, need(k));
      inputs.push_back(v);
    }
    // scale, B, mean and var are [C], C the channel dim of X.
    if (rank(inputs[0]) < 2) {
      return node_error(Error::InvalidProgram, "input X has rank %zu, needs at least 2",
                        rank(inputs[0]));
    }
    const SymExpr& channels = dims(inputs[0])[1];
    for (size_t k = 1; k < 5; ++k) {
      const std::vector<SymExpr>& d = dims(inputs[k]);
      if (d.size() != 1) {
        return node_error(Error::InvalidProgram,
                          "input %zu ('%s') has rank %zu, must be 1-D [%s] (the channels of X)", k,
                          node.input(static_cast<int>(k)).c_str(), d.size(),
                          channels.to_string().c_str());
      }
      if (channels.is_const() && d[0].is_const() && d[0].const_value() != channels.const_value()) {
        return node_error(
            Error::InvalidProgram, "input %zu ('%s') has %lld elements, X has %lld channels", k,
            node.input(static_cast<int>(k)).c_str(), static_cast<long long>(d[0].const_value()),
            static_cast<long long>(channels.const_value()));
      }
    }
    return emit1(OpType::BatchNormalization, std::move(inputs), {ir::Attr::make_float("epsilon", afloat("epsilon", 1e-5f))})
        .status();
  }
  if (op == "MaxPool") return pool(OpType::MaxPool);
  if (op == "AveragePool") return pool(OpType::AveragePool);
  if (op == "GlobalMaxPool") {
    TESSERA_ASSIGN_OR_RETURN(int x, need(0));
    std::vector<int64_t> axes;
    for (size_t i = 2; i < rank(x); ++i) axes.push_back(static_cast<int64_t>(i));
    return emit1(OpType::ReduceMax, {x}, {ir::Attr::make_ints("axes", axes), ir::Attr::make_int("keepdims", 1)}).status();
  }
  if (op == "ReduceMean") return reduce(OpType::ReduceMean);
  if (op == "ReduceSum") return reduce(OpType::ReduceSum);
  if (op == "ReduceMax") return reduce(OpType::ReduceMax);
  if (op == "Reshape") return reshape();
  if (op == "Flatten") {
    TESSERA_ASSIGN_OR_RETURN(int x, need(0));
    const int64_t r = static_cast<int64_t>(rank(x));
    int64_t axis = aint("axis", 1);
    if (axis < -r || axis > r) return node_error(Error::InvalidProgram, "axis %lld out of range", static_cast<long long>(axis));
    if (axis < 0) axis += r;
    return emit1(OpType::Flatten, {x}, {}, {product(dims(x), 0, axis), product(dims(x), axis)}, true).status();
  }
  if (op == "Squeeze") return squeeze(false);
  if (op == "Unsqueeze") return squeeze(true);
  if (op == "Transpose") {
    TESSERA_ASSIGN_OR_RETURN(int x, need(0));
    std::vector<int64_t> perm;
    if (auto p = aints("perm")) {
      perm = *p;
    } else {
      for (size_t i = rank(x); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
    }
    return emit1(OpType::Transpose, {x}, {ir::Attr::make_ints("perm", perm)}).status();
  }
  if (op == "Concat") {
    std::vector<int> inputs;
    for (size_t k = 0; k < num_inputs(); ++k) {
      TESSERA_ASSIGN_OR_RETURN(int v, need(k));
      inputs.push_back(v);
    }
    if (inputs.empty()) return node_error(Error::InvalidProgram, "no inputs");
    TESSERA_ASSIGN_OR_RETURN(int64_t axis, norm_axis(aint("axis", 0), rank(inputs[0])));
    return emit1(OpType::Concat, std::move(inputs), {ir::Attr::make_int("axis", axis)}).status();
  }
  if (op == "Split") return split();
  if (op == "Slice") return slice();
  if (op == "Gather") {
    TESSERA_ASSIGN_OR_RETURN(int x, need(0));
    TESSERA_ASSIGN_OR_RETURN(int idx, need(1));
    TESSERA_ASSIGN_OR_RETURN(int64_t axis, norm_axis(aint("axis", 0), rank(x)));
    return emit1(OpType::Gather, {x, idx}, {ir::Attr::make_int("axis", axis)}).status();
  }
  if (op == "Pad") return pad();
  if (op == "Resize") return resize();
  if (op == "Expand") return expand();
  return unsupported();
}

Status Importer::import_outputs() {
  for (const auto& vi : model_.graph().output()) {
    auto it = names_.find(vi.name());
    if (it == names_.end()) {
      return Status::error(Error::InvalidProgram, "graph output '%s' is not produced by any node", vi.name().c_str());
    }
    const int v = it->second;
    // A declared rank must agree with the value's (ONNX's own shape inference, run afterwards,
    // crashes on a graph output that redeclares an input with another rank). Declared static
    // dims may differ: exporters get some wrong (see CeilModePooling in the tests).
    if (vi.type().has_tensor_type() && vi.type().tensor_type().has_shape() &&
        static_cast<size_t>(vi.type().tensor_type().shape().dim_size()) != dims(v).size()) {
      return Status::error(Error::InvalidProgram,
                           "graph output '%s' is declared with rank %d, but the value has rank %zu",
                           vi.name().c_str(), vi.type().tensor_type().shape().dim_size(),
                           dims(v).size());
    }
    if (const HostTensor* t = known(v); t && t->is_symbolic()) {
      return Status::error(Error::NotSupported, "graph output '%s' is a shape value that depends on a symbolic dim",
                           vi.name().c_str());
    }
    g_.outputs.push_back(v);
  }
  // Graph outputs keep their ONNX names even when they alias another value (see lower_graph).
  for (const auto& vi : model_.graph().output()) g_.output_names.push_back(vi.name());
  return Status::ok();
}

Result<ModelGraph> Importer::run() {
  TESSERA_RETURN_IF_ERROR(import_opset());
  if (!model_.has_graph()) return Status(Error::InvalidProgram, "ONNX model has no graph");
  collect_onnx_shapes();
  for (const auto& n : model_.graph().node()) {
    for (const auto& name : n.input()) ++consumers_[name];
  }
  for (const auto& o : model_.graph().output()) ++consumers_[o.name()];
  TESSERA_RETURN_IF_ERROR(import_initializers());
  TESSERA_RETURN_IF_ERROR(import_inputs());
  size_t index = 0;
  for (const auto& n : model_.graph().node()) TESSERA_RETURN_IF_ERROR(import_node(n, index++));
  TESSERA_RETURN_IF_ERROR(import_outputs());
  return std::move(g_);
}

Status Importer::cross_check(const ModelGraph& g) const {
  std::unordered_map<std::string, const onnx::TensorShapeProto*> shapes;
  for (const auto& vi : model_.graph().value_info()) {
    if (vi.type().has_tensor_type() && vi.type().tensor_type().has_shape()) shapes[vi.name()] = &vi.type().tensor_type().shape();
  }
  for (const ir::Node& n : g.nodes) {
    for (int v : n.outputs) {
      if (v < 0 || is_tainted(v)) continue;
      auto it = shapes.find(g.values[v].name);
      if (it == shapes.end()) continue;
      const auto& dims = g.values[v].dims;
      const onnx::TensorShapeProto& theirs = *it->second;
      bool mismatch = theirs.dim_size() != static_cast<int>(dims.size());
      for (int k = 0; !mismatch && k < theirs.dim_size(); ++k) {
        mismatch = theirs.dim(k).has_dim_value() && dims[k].is_const() && theirs.dim(k).dim_value() != dims[k].const_value();
      }
      if (mismatch) {
        return Status::error(Error::InvalidProgram,
                             "node '%s': output '%s' is %s, but ONNX shape inference disagrees (rank %d)",
                             n.name.c_str(), g.values[v].name.c_str(), g.dims_string(v).c_str(), theirs.dim_size());
      }
    }
  }
  return Status::ok();
}

}  // namespace

Result<ModelGraph> import_onnx(const void* data, size_t size, const ImportOptions& options) {
  try {
    onnx::ModelProto model;
    if (size > static_cast<size_t>(std::numeric_limits<int>::max()) ||
        !model.ParseFromArray(data, static_cast<int>(size))) {
      return Status(Error::InvalidProgram, "not an ONNX model (protobuf parsing failed)");
    }
    // The opset first: the checker rejects opsets newer than libonnx with a vaguer message.
    int opset = -1;
    for (const auto& op : model.opset_import()) {
      if (op.domain().empty() || op.domain() == "ai.onnx") opset = static_cast<int>(op.version());
    }
    if (opset < 0) return Status(Error::InvalidProgram, "ONNX model imports no default-domain opset");
    if (opset < kMinOpset || opset > kMaxOpset) {
      return Status::error(Error::NotSupported,
                           "ONNX opset %d is not supported (supported: %d to %d); re-export the model "
                           "with an opset in that range",
                           opset, kMinOpset, kMaxOpset);
    }
    if (options.check_model) {
      try {
        onnx::checker::check_model(model);
      } catch (const std::exception& e) {
        std::string what = e.what();
        if (auto nl = what.find("\n\n==>"); nl != std::string::npos) what.resize(nl);
        return Status::error(Error::InvalidProgram, "invalid ONNX model: %s", what.c_str());
      }
    }
    // Our own shape inference is authoritative; it is checked against the shapes the model
    // declares as it goes, and against ONNX's shape inference afterwards. ONNX's inference runs
    // only on a model we accepted: it divides by attribute values we validate first.
    Importer importer(model, options);
    auto graph = importer.run();
    if (!graph.ok() || !options.onnx_shape_check) return graph;
    try {
      onnx::ShapeInferenceOptions si(/*check_type=*/false, /*error_mode=*/0, /*data_propagation=*/false);
      onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), si);
    } catch (const std::exception&) {
      return graph;  // no second opinion
    }
    TESSERA_RETURN_IF_ERROR(importer.cross_check(graph.value()));
    return graph;
  } catch (const std::bad_alloc&) {
    return Status(Error::MemoryAllocationFailed, "out of memory importing the ONNX model");
  } catch (const std::exception& e) {
    return Status::error(Error::InvalidProgram, "ONNX import failed: %s", e.what());
  }
}

Result<ModelGraph> import_onnx_file(const std::string& path, ImportOptions options) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::error(Error::NotFound, "cannot open '%s'", path.c_str());
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) return Status::error(Error::AccessFailed, "cannot read '%s'", path.c_str());
  if (options.external_data_dir.empty()) {
    const auto slash = path.find_last_of('/');
    options.external_data_dir = slash == std::string::npos ? "." : path.substr(0, slash);
  }
  auto result = import_onnx(bytes.data(), bytes.size(), options);
  if (!result.ok()) return result.status().with_prefix(path);
  return result;
}

Result<DimBound> parse_dim_bound(const std::string& text) {
  const auto eq = text.find('=');
  auto bad = [&]() {
    return Status::error(Error::InvalidArgument, "bad dim bound '%s' (expected NAME=MIN:MAX, e.g. batch=1:8)",
                         text.c_str());
  };
  if (eq == std::string::npos || eq == 0) return bad();
  DimBound b;
  b.name = text.substr(0, eq);
  const std::string range = text.substr(eq + 1);
  const auto colon = range.find(':');
  auto parse = [](const std::string& s, int64_t* out) {
    if (s.empty()) return false;
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (errno != 0 || *end != '\0') return false;
    *out = v;
    return true;
  };
  if (colon == std::string::npos) {
    if (!parse(range, &b.min)) return bad();
    b.max = b.min;
  } else if (!parse(range.substr(0, colon), &b.min) || !parse(range.substr(colon + 1), &b.max)) {
    return bad();
  }
  if (b.min < 1 || b.max < b.min) {
    return Status::error(Error::InvalidArgument, "dim bound '%s': need 1 <= MIN <= MAX", text.c_str());
  }
  return b;
}

}  // namespace tessera::compiler
