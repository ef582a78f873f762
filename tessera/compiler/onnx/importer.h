// The ONNX importer's state while it walks a model: the values imported so far, the node being
// imported, and the helpers the per-op importers (tessera/compiler/onnx/*_ops.cpp) build on.
// Internal to tessera_compiler; the entry points are in tessera/compiler/onnx_import.h.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "tessera/compiler/model_graph.h"
#include "tessera/compiler/onnx_import.h"
#include "tessera/core/result.h"
#include "tessera/ir/graph.h"
#include "tessera/ir/op_table.h"

namespace tessera::compiler::importer {

inline constexpr int kMinOpset = 11;
inline constexpr int kMaxOpset = 17;
/// Largest kernel size, stride, dilation, pad or group accepted (as the kernels).
inline constexpr int64_t kMaxWindowValue = (int64_t{1} << 31) - 1;
/// Largest dim, and element count, of any tensor: keeps all shape arithmetic far from overflow.
inline constexpr int64_t kMaxDimValue = int64_t{1} << 40;

class Importer {
 public:
  /// `model` and `options` are borrowed and must outlive the Importer.
  Importer(onnx::ModelProto& model, const ImportOptions& options)
      : model_(model), options_(options) {}

  /// Imports the whole graph.
  Result<ModelGraph> run();
  /// After run(): compares `graph` with the shapes ONNX's inference left in the model.
  Status cross_check(const ModelGraph& graph) const;

  // --- the node being imported --------------------------------------------------------------
  const onnx::NodeProto& node() const { return *node_; }
  const std::string& node_name() const { return node_name_; }
  int opset() const { return opset_; }
  ModelGraph& graph() { return g_; }
  const ModelGraph& graph() const { return g_; }

  // --- errors (every message names the node, its ONNX op and, where it helps, the opset) -------
  [[gnu::format(printf, 3, 4)]] Status node_error(Error code, const char* fmt, ...) const;
  /// NotSupported "unsupported ONNX op 'X' in node 'n' (opset N)".
  Status unsupported() const;
  /// NotSupported "ONNX op 'X' in node 'n' (opset N): <what> is not supported".
  [[gnu::format(printf, 2, 3)]] Status unsupported_use(const char* fmt, ...) const;

  // --- attributes -----------------------------------------------------------------------------
  /// The node's ONNX attribute `name`; nullptr when absent.
  const onnx::AttributeProto* attr(const char* name) const;
  /// An ONNX-only flag attribute (one the IR has no row for): true when present and nonzero.
  bool flag(const char* name) const;
  /// The node's attributes that the row of `op` declares, copied as they are (absent ones stay
  /// absent: the IR's defaults are the table's). InvalidProgram on another ONNX type.
  Result<std::vector<ir::Attr>> declared_attrs(fb::OpType op) const;
  /// The node's attributes read through the typed struct of `op` (ir::<Struct>Attrs), with the
  /// table's defaults for absent ones. The returned views (strings, lists) live until the next
  /// call of attrs() on this Importer.
  template <typename A>
  Result<A> attrs(fb::OpType op) {
    TESSERA_ASSIGN_OR_RETURN(attr_node_.attrs, declared_attrs(op));
    attr_node_.op = op;
    attr_node_.name = node_name_;
    return A::read(attr_node_);
  }

  // --- inputs ---------------------------------------------------------------------------------
  size_t num_inputs() const { return static_cast<size_t>(node_->input_size()); }
  /// Value index of input k, or -1 when absent.
  int in(size_t k) const;
  /// Value index of input k; InvalidProgram when absent or not yet defined.
  Result<int> need(size_t k) const;
  /// Every input, each required.
  Result<std::vector<int>> need_all() const;
  /// Compile-time data of value v, nullptr when computed at run time.
  const HostTensor* known(int v) const { return v >= 0 ? g_.values[v].data.get() : nullptr; }
  const std::vector<SymExpr>& dims(int v) const { return g_.values[v].dims; }
  size_t rank(int v) const { return g_.values[v].dims.size(); }
  /// Concrete integer data of input k (required to be known at compile time).
  Result<std::vector<int64_t>> const_ints(size_t k, const char* what) const;
  /// Integer data of input k, possibly symbolic.
  Result<std::vector<SymExpr>> shape_ints(size_t k, const char* what) const;
  /// `axis` in [-r, r) made non-negative; InvalidProgram outside.
  Result<int64_t> norm_axis(int64_t axis, size_t r) const;
  /// Whether output k has a consumer (a node or a graph output).
  bool output_used(size_t k) const;

  // --- outputs --------------------------------------------------------------------------------
  /// Emits one IR node for the current ONNX node. `out_names` name the outputs ("" = internal);
  /// `preset` gives output dims for ops whose shape is not inferred from attributes. The node is
  /// evaluated at once when its inputs are known.
  Result<std::vector<int>> emit(fb::OpType op, std::vector<int> inputs, std::vector<ir::Attr> attrs,
                                std::vector<std::string> out_names,
                                std::vector<std::vector<SymExpr>> preset = {});
  /// emit() of a node whose one output is the ONNX node's output 0.
  Result<int> emit1(fb::OpType op, std::vector<int> inputs, std::vector<ir::Attr> attrs,
                    std::vector<SymExpr> preset_dims = {}, bool has_preset = false);
  /// Binds output k of the current node to a compile-time tensor.
  void bind_const(size_t k, HostTensor t);
  /// Output k of the current node is value v.
  void alias(size_t k, int v) { names_[node_->output(static_cast<int>(k))] = v; }
  /// A new compile-time value.
  int make_const(const std::string& name, HostTensor t) {
    return g_.add_const(name, std::make_shared<const HostTensor>(std::move(t)));
  }
  /// Outputs emitted while set are not compared with ONNX's declared shapes (a ceil-mode
  /// pooling whose size PyTorch and ONNX < 19 disagree on), nor is what depends on them.
  void set_shape_diverges(bool diverges) { pool_diverges_ = diverges; }
  /// Converts an ONNX tensor (initializer or attribute) to a HostTensor; `what` names it in errors.
  Status import_tensor(const onnx::TensorProto& t, const std::string& what, HostTensor* out) const;

 private:
  Status import_opset();
  Status import_initializers();
  Status import_inputs();
  Status check_dim_names() const;
  Status import_node(const onnx::NodeProto& node, size_t index);
  Status dispatch_node(const onnx::NodeProto& node, size_t index);
  Status import_outputs();
  void collect_onnx_shapes();
  Status check_against_onnx(int v);
  Status check_size(int v) const;
  void taint(int v);
  bool is_tainted(int v) const;

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
  ir::Node attr_node_;  // the attributes attrs() last read; its views point here
  // Values whose shapes legitimately differ from ONNX's (downstream of a ceil-mode pooling node
  // where PyTorch and ONNX < 19 disagree): not compared with the shapes ONNX declares.
  std::vector<bool> tainted_;
  bool current_taint_ = false;
  bool pool_diverges_ = false;
};

}  // namespace tessera::compiler::importer
