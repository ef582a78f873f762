// NodeReader: one view of a node and its values over both graph forms, the payload's fb::Graph
// (at init, with resolved dims) and the compiler's in-memory ir::Graph (ahead of time, with
// upper-bound dims), so the support check and the subgraph builder read attributes one way.
#pragma once

#include <cstdint>
#include <string_view>

#include "tessera/backend/payload_graph.h"
#include "tessera/backends/xnnpack/layout.h"
#include "tessera/core/scalar_type.h"
#include "tessera/core/span.h"
#include "tessera/ir/graph.h"
#include "tessera/ir/schema.h"

namespace tessera::xnnpack {

/// What the backend needs to know about one value of a node.
struct ValueFacts {
  bool present = false;  // false for an absent optional input (-1) or a bad index
  bool is_tensor = true;
  ScalarType dtype = ScalarType::Float32;
  Dims dims;              // resolved at init; the upper bounds ahead of time
  bool symbolic = false;  // some dim is symbolic (its value in `dims` is the upper bound)
  int constant = -1;      // program constant index, or -1 for an activation
  int index = -1;         // value index in the graph
};

/// Reads one node. Attribute getters return false when the attribute is present with another
/// type (the node is then not supported); absent attributes give the fallback or empty.
class NodeReader {
 public:
  virtual ~NodeReader() = default;

  virtual fb::OpType op() const = 0;
  virtual std::string_view name() const = 0;
  virtual fb::Activation activation() const = 0;
  virtual float activation_min() const = 0;
  virtual float activation_max() const = 0;

  /// Input/output slots, including absent optional inputs.
  virtual int num_inputs() const = 0;
  virtual int num_outputs() const = 0;
  virtual ValueFacts input(int i) const = 0;
  virtual ValueFacts output(int i) const = 0;

  virtual bool has_attr(std::string_view name) const = 0;
  virtual bool attr_int(std::string_view name, int64_t fallback, int64_t* out) const = 0;
  virtual bool attr_float(std::string_view name, float fallback, float* out) const = 0;
  virtual bool attr_string(std::string_view name, std::string_view fallback,
                           std::string_view* out) const = 0;
  /// Empty when absent. The span views the graph.
  virtual bool attr_ints(std::string_view name, Span<const int64_t>* out) const = 0;
  virtual bool attr_floats(std::string_view name, Span<const float>* out) const = 0;
  /// The node in its graph form, for the typed attribute readers (tessera/ir/op_attrs.h): one
  /// of the two is set.
  virtual const fb::Node* fb_node() const { return nullptr; }
  virtual const ir::Node* ir_node() const { return nullptr; }
};

/// A node of an fb::Graph. Dims are those `view` evaluated at init, or without a view each
/// Dim's stored value (the upper bound). Everything viewed must outlive the reader.
class FbNodeReader final : public NodeReader {
 public:
  FbNodeReader(const fb::Graph& graph, const fb::Node& node) : graph_(graph), node_(node) {}
  FbNodeReader(const PayloadGraph& view, const fb::Node& node)
      : graph_(view.graph()), node_(node), view_(&view) {}

  fb::OpType op() const override { return node_.op(); }
  std::string_view name() const override;
  fb::Activation activation() const override { return node_.activation(); }
  float activation_min() const override { return node_.activation_min(); }
  float activation_max() const override { return node_.activation_max(); }
  int num_inputs() const override;
  int num_outputs() const override;
  ValueFacts input(int i) const override;
  ValueFacts output(int i) const override;
  bool has_attr(std::string_view name) const override;
  bool attr_int(std::string_view name, int64_t fallback, int64_t* out) const override;
  bool attr_float(std::string_view name, float fallback, float* out) const override;
  bool attr_string(std::string_view name, std::string_view fallback,
                   std::string_view* out) const override;
  bool attr_ints(std::string_view name, Span<const int64_t>* out) const override;
  bool attr_floats(std::string_view name, Span<const float>* out) const override;
  const fb::Node* fb_node() const override { return &node_; }

 private:
  ValueFacts facts(int value) const;
  const fb::Attr* find(std::string_view name) const;

  const fb::Graph& graph_;
  const fb::Node& node_;
  const PayloadGraph* view_ = nullptr;
};

/// A node of the compiler's in-memory graph (dims at their upper bounds).
class IrNodeReader final : public NodeReader {
 public:
  IrNodeReader(const ir::Graph& graph, const ir::Node& node) : graph_(graph), node_(node) {}

  fb::OpType op() const override { return node_.op; }
  std::string_view name() const override { return node_.name; }
  fb::Activation activation() const override { return node_.activation; }
  float activation_min() const override { return node_.activation_min; }
  float activation_max() const override { return node_.activation_max; }
  int num_inputs() const override { return static_cast<int>(node_.inputs.size()); }
  int num_outputs() const override { return static_cast<int>(node_.outputs.size()); }
  const ir::Node* ir_node() const override { return &node_; }
  ValueFacts input(int i) const override;
  ValueFacts output(int i) const override;
  bool has_attr(std::string_view name) const override;
  bool attr_int(std::string_view name, int64_t fallback, int64_t* out) const override;
  bool attr_float(std::string_view name, float fallback, float* out) const override;
  bool attr_string(std::string_view name, std::string_view fallback,
                   std::string_view* out) const override;
  bool attr_ints(std::string_view name, Span<const int64_t>* out) const override;
  bool attr_floats(std::string_view name, Span<const float>* out) const override;

 private:
  ValueFacts facts(int value) const;
  const ir::Attr* find(std::string_view name) const;

  const ir::Graph& graph_;
  const ir::Node& node_;
};

}  // namespace tessera::xnnpack
