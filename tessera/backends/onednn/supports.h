// Which portable-IR nodes the oneDNN backend lowers, for the ahead-of-time partitioner and for
// the graph builder (one check, so supports_op says exactly what init can build).
//
// The check is local to one node: op, float32 tensors, ranks, constant weights, attribute values
// oneDNN 2.6 primitives can express. Layouts never make a node unsupported: the delegate lets
// oneDNN pick them and inserts reorders where a consumer needs another one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/backend/payload_graph.h"
#include "tessera/core/span.h"
#include "tessera/core/status.h"
#include "tessera/ir/attributes.h"
#include "tessera/ir/op_attrs.h"
#include "tessera/ir/schema.h"

namespace tessera::onednn {

/// oneDNN's own dims type (dnnl::memory::dims), for what is handed to its primitives; shapes
/// the backend reads are tessera::Dims.
using DimVector = std::vector<int64_t>;

/// Reads one node of an fb::Graph with its value dims: those `view` evaluated at init, or
/// without a view the stored upper bounds. Views the graph; it must outlive the reader.
class NodeView {
 public:
  NodeView(const fb::Graph& graph, const fb::Node& node) : graph_(graph), node_(node) {}
  NodeView(const PayloadGraph& view, const fb::Node& node)
      : graph_(view.graph()), node_(node), view_(&view) {}

  fb::OpType op() const { return node_.op(); }
  const fb::Node& node() const { return node_; }
  std::string_view name() const;
  int num_inputs() const;
  int num_outputs() const;
  /// Value index of input/output slot `i`; -1 when absent.
  int input(int i) const;
  int output(int i) const;

  const fb::Value* value(int index) const;
  Dims dims(int index) const;
  bool is_constant(int index) const;
  bool is_float_tensor(int index) const;

  /// The node's typed attributes (ir::GemmAttrs, ...; defaults from tessera/ir/op_attrs.def).
  /// False when one has the wrong type or a required one is missing.
  template <typename A>
  bool attrs(A* out) const {
    Result<A> r = A::read(ir::AttrView(&node_));
    if (!r.ok()) return false;
    *out = *r;
    return true;
  }

 private:
  const fb::Graph& graph_;
  const fb::Node& node_;
  const PayloadGraph* view_ = nullptr;
};

/// Spatial geometry of a 2-D Conv or pooling node (oneDNN conventions: dilation 0 = dense).
struct Window {
  int64_t kernel[2] = {1, 1};
  int64_t stride[2] = {1, 1};
  int64_t dilation[2] = {0, 0};
  int64_t pad_begin[2] = {0, 0};
  int64_t pad_end[2] = {0, 0};
};

/// Geometry of a ConvTranspose node with 1 to 3 spatial dims (oneDNN conventions: dilation 0 =
/// dense). Pads are the ONNX ones, or derived from `output_shape` as ONNX does.
struct DeconvWindow {
  int spatial = 0;
  int64_t kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1};
  int64_t dilation[3] = {0, 0, 0};
  int64_t output_padding[3] = {0, 0, 0};
  int64_t pad_begin[3] = {0, 0, 0};
  int64_t pad_end[3] = {0, 0, 0};
};

/// Reads the geometry of a ConvTranspose node. False with `*why` set when an attribute has the
/// wrong type, length or value.
bool read_deconv_window(const NodeView& node, DeconvWindow* out, const char** why);

/// A Slice node as a strided window of its input: the first element of each dim, the step and
/// the output size (positive steps only).
struct SliceSpec {
  DimVector start;
  DimVector step;
  DimVector size;
};

/// Reads a Slice node with ONNX clamping. False with `*why` set for wrong attribute types or
/// lengths, repeated or out-of-range axes, zero or negative steps.
bool read_slice(const NodeView& node, SliceSpec* out, const char** why);

/// Reads the begin and end padding of every dim of a Pad node (ONNX `pads`, optional `axes`).
/// False with `*why` set for wrong attribute types or lengths, bad axes.
bool read_pads(const NodeView& node, DimVector* begin, DimVector* end, const char** why);

/// How the backend lowers an op. lowering_of() is the one list of the ops oneDNN takes:
/// check_node and the graph builder switch over the Lowering, not over the op.
enum class Lowering : uint8_t {
  None,  // not lowered
  Conv,
  ConvTranspose,
  MatMul,       // Gemm, MatMul
  Pool,         // MaxPool, AveragePool
  GlobalPool,   // GlobalAveragePool
  SpatialMean,  // ReduceMean over H and W
  Binary,       // Add, Sub, Mul, Div, Min, Max
  Eltwise,      // the activation-like ops (eltwise_of), HardSigmoid as two eltwise steps
  Softmax,
  Concat,
  Reshape,  // Identity, Reshape, Flatten, Squeeze, Unsqueeze: a view of the input
  Transpose,
  Shuffle,  // ChannelShuffle: shuffle_forward on axis 1, in the producer's layout
  LayerNorm,
  Slice,
  Split,
  Pad,
  PRelu,
  BatchNorm,
};

/// An op's row: its Lowering and, for an Eltwise op whose primitive no attribute chooses, the
/// dnnl_alg_kind_t with its alpha (0: LeakyRelu, Clip, Elu, Gelu and HardSigmoid, read from the
/// node).
struct OpLowering {
  Lowering lowering = Lowering::None;
  int eltwise = 0;
  float alpha = 0.0f;
};
OpLowering lowering_of(fb::OpType op);

/// OK if the backend can lower the node; NotSupported with the reason otherwise
/// ("onednn: Conv node 'c1': ...").
Status check_node(const NodeView& node);

/// Whether the backend lowers `node` of `graph` (dims at their stored upper bounds). When false
/// and `why` is not null, `*why` gets the reason.
bool onednn_supports(const fb::Graph& graph, const fb::Node& node, std::string* why = nullptr);

/// The window of a Conv/MaxPool/AveragePool node whose check passed; the end padding is
/// derived from the output size (this covers ceil_mode).
Window read_window(const NodeView& node);

/// The elementwise primitive an activation-like op maps to (the ops are those of eltwise_of's
/// switch in supports.cpp). False for other ops.
struct EltwiseSpec {
  int algorithm;  // a dnnl_alg_kind_t
  float alpha = 0.0f;
  float beta = 0.0f;
};
bool eltwise_of(const NodeView& node, EltwiseSpec* out);

}  // namespace tessera::onednn
