#include "tessera/compiler/onnx/importer.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

#include "tessera/backend/suggest.h"
#include "tessera/compiler/evaluate.h"
#include "tessera/compiler/onnx/op_importers.h"
#include "tessera/compiler/onnx/tensor_proto.h"
#include "tessera/compiler/shape_inference.h"
#include "tessera/ir/op.h"

namespace tessera::compiler::importer {
namespace {

std::string vformat(const char* fmt, va_list ap) {
  char buf[Status::kMaxMessage];
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  return buf;
}

}  // namespace

Status Importer::node_error(Error code, const char* fmt, ...) const {
  va_list ap;
  va_start(ap, fmt);
  std::string msg = vformat(fmt, ap);
  va_end(ap);
  return Status::error(code, "node '%s' (%s): %s", node_name_.c_str(), node_->op_type().c_str(),
                       msg.c_str());
}

Status Importer::unsupported() const {
  if (!node_->domain().empty() && node_->domain() != "ai.onnx") {
    return Status::error(
        Error::NotSupported, "unsupported ONNX op '%s' (domain '%s') in node '%s' (opset %d)",
        node_->op_type().c_str(), node_->domain().c_str(), node_name_.c_str(), opset_);
  }
  return Status::error(Error::NotSupported, "unsupported ONNX op '%s' in node '%s' (opset %d)",
                       node_->op_type().c_str(), node_name_.c_str(), opset_);
}

Status Importer::unsupported_use(const char* fmt, ...) const {
  va_list ap;
  va_start(ap, fmt);
  std::string msg = vformat(fmt, ap);
  va_end(ap);
  return Status::error(Error::NotSupported,
                       "ONNX op '%s' in node '%s' (opset %d): %s is not supported",
                       node_->op_type().c_str(), node_name_.c_str(), opset_, msg.c_str());
}

const onnx::AttributeProto* Importer::attr(const char* name) const {
  for (const auto& a : node_->attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

bool Importer::flag(const char* name) const {
  const auto* a = attr(name);
  return a != nullptr && a->i() != 0;
}

Result<std::vector<ir::Attr>> Importer::declared_attrs(fb::OpType op) const {
  const ir::OpInfo* info = ir::op_info(op);
  std::vector<ir::Attr> out;
  if (info == nullptr) return out;
  for (const ir::AttrInfo& d : info->attrs) {
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

int Importer::in(size_t k) const {
  if (k >= num_inputs() || node_->input(static_cast<int>(k)).empty()) return -1;
  auto it = names_.find(node_->input(static_cast<int>(k)));
  return it == names_.end() ? -1 : it->second;
}

Result<int> Importer::need(size_t k) const {
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

Result<std::vector<int>> Importer::need_all() const {
  std::vector<int> inputs;
  for (size_t k = 0; k < num_inputs(); ++k) {
    TESSERA_ASSIGN_OR_RETURN(int v, need(k));
    inputs.push_back(v);
  }
  return inputs;
}

Result<int64_t> Importer::norm_axis(int64_t axis, size_t r) const {
  const int64_t rr = static_cast<int64_t>(r);
  if (axis < -rr || axis >= rr) {
    return node_error(Error::InvalidProgram, "axis %lld out of range for rank %zu",
                      static_cast<long long>(axis), r);
  }
  return axis < 0 ? axis + rr : axis;
}

Result<int> Importer::emit1(fb::OpType op, std::vector<int> inputs, std::vector<ir::Attr> attrs,
                            std::vector<SymExpr> preset_dims, bool has_preset) {
  std::vector<std::vector<SymExpr>> preset;
  if (has_preset) preset.push_back(std::move(preset_dims));
  TESSERA_ASSIGN_OR_RETURN(auto outs, emit(op, std::move(inputs), std::move(attrs),
                                           {node_->output(0)}, std::move(preset)));
  return outs[0];
}

void Importer::bind_const(size_t k, HostTensor t) {
  const std::string& name = node_->output(static_cast<int>(k));
  names_[name] = g_.add_const(name, std::make_shared<const HostTensor>(std::move(t)));
}

void Importer::taint(int v) {
  if (tainted_.size() <= static_cast<size_t>(v)) tainted_.resize(g_.values.size(), false);
  tainted_[v] = true;
}

bool Importer::is_tainted(int v) const {
  return v >= 0 && static_cast<size_t>(v) < tainted_.size() && tainted_[v];
}

Status Importer::check_size(int v) const {
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
    return Status::error(
        Error::NotSupported,
        "ONNX opset %d is not supported (supported: %d to %d); re-export the model "
        "with an opset in that range",
        opset_, kMinOpset, kMaxOpset);
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
      return Status::error(Error::NotSupported,
                           "input '%s' has ONNX element type %s, which is not supported",
                           vi.name().c_str(), onnx_type_name(tt.elem_type()));
    }
    if (!tt.has_shape()) {
      return Status::error(Error::InvalidProgram,
                           "input '%s' has no shape; export it with a fixed rank",
                           vi.name().c_str());
    }
    std::vector<SymExpr> d;
    for (int k = 0; k < tt.shape().dim_size(); ++k) {
      const auto& dim = tt.shape().dim(k);
      if (dim.has_dim_value()) {
        if (dim.dim_value() < 0 || dim.dim_value() > kMaxDimValue) {
          return Status::error(Error::InvalidProgram,
                               "input '%s' dim %d is %lld (must be in [0, 2^40])",
                               vi.name().c_str(), k, static_cast<long long>(dim.dim_value()));
        }
        d.emplace_back(dim.dim_value());
        continue;
      }
      if (!dim.has_dim_param() || dim.dim_param().empty()) {
        return Status::error(
            Error::InvalidProgram,
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
          return Status::error(
              Error::InvalidArgument,
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
    for (const auto& dim : vi.type().tensor_type().shape().dim())
      d.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
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
  for (size_t k = 0; k < od.size(); ++k)
    theirs += (k ? ", " : "") + (od[k] >= 0 ? std::to_string(od[k]) : "?");
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
    return Status::error(
        Error::NotSupported,
        "ONNX op '%s' in node '%s' (opset %d): %s computed at run time is not supported "
        "(it must be a constant)",
        node_->op_type().c_str(), node_name_.c_str(), opset_, what);
  }
  if (t->is_float()) return node_error(Error::InvalidProgram, "%s is not an integer tensor", what);
  if (!t->to_ints(&out)) {
    std::string expr;
    for (const SymExpr& e : t->sym) {
      if (!e.is_const()) {
        expr = e.to_string(&g_.symbols);
        break;
      }
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
    return Status::error(
        Error::NotSupported,
        "ONNX op '%s' in node '%s' (opset %d): %s computed from tensor data at run time "
        "is not supported",
        node_->op_type().c_str(), node_name_.c_str(), opset_, what);
  }
  if (t->is_float()) return node_error(Error::InvalidProgram, "%s is not an integer tensor", what);
  std::vector<SymExpr> out;
  for (int64_t j = 0; j < t->numel(); ++j) out.push_back(t->int_at(static_cast<size_t>(j)));
  return out;
}

Result<std::vector<int>> Importer::emit(fb::OpType op, std::vector<int> inputs,
                                        std::vector<ir::Attr> attrs,
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
        if (!e.is_const()) {
          expr = e.to_string(&g_.symbols);
          break;
        }
      }
      return Status::error(
          Error::NotSupported,
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
  node_name_ = !node.name().empty() ? node.name() : node.op_type() + "_" + std::to_string(index);
  if (!node.domain().empty() && node.domain() != "ai.onnx") return unsupported();
  if (node.output_size() == 0) return node_error(Error::InvalidProgram, "no outputs");
  const OpImporter* row = find_op_importer(node.op_type());
  if (row == nullptr) return unsupported();
  return row->import(*this, row->op);
}

Status Importer::import_outputs() {
  for (const auto& vi : model_.graph().output()) {
    auto it = names_.find(vi.name());
    if (it == names_.end()) {
      return Status::error(Error::InvalidProgram, "graph output '%s' is not produced by any node",
                           vi.name().c_str());
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
      return Status::error(Error::NotSupported,
                           "graph output '%s' is a shape value that depends on a symbolic dim",
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
    if (vi.type().has_tensor_type() && vi.type().tensor_type().has_shape())
      shapes[vi.name()] = &vi.type().tensor_type().shape();
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
        mismatch = theirs.dim(k).has_dim_value() && dims[k].is_const() &&
                   theirs.dim(k).dim_value() != dims[k].const_value();
      }
      if (mismatch) {
        return Status::error(
            Error::InvalidProgram,
            "node '%s': output '%s' is %s, but ONNX shape inference disagrees (rank %d)",
            n.name.c_str(), g.values[v].name.c_str(), g.dims_string(v).c_str(), theirs.dim_size());
      }
    }
  }
  return Status::ok();
}

}  // namespace tessera::compiler::importer
