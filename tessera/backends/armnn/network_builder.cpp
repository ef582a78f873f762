#include "tessera/backends/armnn/network_builder.h"

#include <armnn/Descriptors.hpp>
#include <armnn/Exceptions.hpp>

#include <algorithm>
#include <cassert>
#include <cfloat>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "tessera/ir/attributes.h"
#include "tessera/ir/op_attrs.h"

namespace tessera::armnn_backend {
namespace {

using Op = fb::OpType;

constexpr size_t kMaxRank = 5;  // armnn::MaxNumOfTensorDimensions

std::string_view node_name(const fb::Node& node) {
  return node.name() ? std::string_view(node.name()->c_str(), node.name()->size())
                     : std::string_view();
}

int input_of(const fb::Node& node, int i) {
  return node.inputs() && i < static_cast<int>(node.inputs()->size())
             ? node.inputs()->Get(static_cast<uint32_t>(i))
             : -1;
}
int output_of(const fb::Node& node, int i) {
  return node.outputs() && i < static_cast<int>(node.outputs()->size())
             ? node.outputs()->Get(static_cast<uint32_t>(i))
             : -1;
}
int num_inputs(const fb::Node& node) {
  return node.inputs() ? static_cast<int>(node.inputs()->size()) : 0;
}

bool is_constant(const fb::Graph& graph, int v) {
  return v >= 0 && graph.values() && static_cast<uint32_t>(v) < graph.values()->size() &&
         graph.values()->Get(static_cast<uint32_t>(v))->constant() >= 0;
}

// Support check ---------------------------------------------------------------------------------

class Checker {
 public:
  Checker(const fb::Graph& graph, const fb::Node& node, Span<const Dims> dims)
      : graph_(graph), node_(node), dims_(dims) {}

  Status run();

 private:
  Status no(const char* fmt, ...) const __attribute__((format(printf, 2, 3)));
  const Dims& d(int v) const { return dims_[static_cast<size_t>(v)]; }
  Status check_conv();
  Status check_pool();

  const fb::Graph& graph_;
  const fb::Node& node_;
  Span<const Dims> dims_;
};

Status Checker::no(const char* fmt, ...) const {
  char why[320];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(why, sizeof why, fmt, args);
  va_end(args);
  const std::string_view name = node_name(node_);
  return Status::error(Error::NotSupported, "armnn: %s node '%.*s': %s",
                       fb::EnumNameOpType(node_.op()), static_cast<int>(name.size()), name.data(),
                       why);
}

Status Checker::check_conv() {
  const int x = input_of(node_, 0), w = input_of(node_, 1), b = input_of(node_, 2);
  if (d(x).size() != 4) return no("only 2-D convolutions (rank-4 NCHW input) map to ArmNN");
  if (!is_constant(graph_, w)) return no("the weights must be a constant");
  if (b >= 0 && !is_constant(graph_, b)) return no("the bias must be a constant");
  Result<ir::ConvAttrs> attrs = ir::ConvAttrs::read(ir::AttrView(&node_));
  if (!attrs.ok()) return no("%s", attrs.status().message());
  if (attrs->auto_pad != "NOTSET" && attrs->auto_pad != "VALID") {
    return no("auto_pad other than NOTSET/VALID");
  }
  const Span<const int64_t> pads = attrs->pads;
  for (int64_t p : pads) {
    if (p < 0) return no("negative pads");
  }
  return Status::ok();
}

Status Checker::check_pool() {
  const int x = input_of(node_, 0);
  if (d(x).size() != 4) return no("only 2-D pooling (rank-4 NCHW input) maps to ArmNN");
  Result<ir::PoolAttrs> attrs = ir::PoolAttrs::read(ir::AttrView(&node_));
  if (!attrs.ok()) return no("%s", attrs.status().message());
  for (int64_t v : attrs->dilations) {
    if (v != 1) return no("ArmNN 20.08 pooling has no dilation");
  }
  if (attrs->auto_pad != "NOTSET" && attrs->auto_pad != "VALID") {
    return no("auto_pad other than NOTSET/VALID");
  }
  if (node_.outputs() && node_.outputs()->size() > 1 && output_of(node_, 1) >= 0) {
    return no("MaxPool's Indices output has no ArmNN equivalent");
  }
  if (attrs->kernel_shape.size() != 2) return no("kernel_shape must have 2 entries");
  return Status::ok();
}

Status Checker::run() {
  const size_t n = graph_.values() ? graph_.values()->size() : 0;
  auto valid = [n](int v) { return v >= 0 && static_cast<size_t>(v) < n; };
  // Every tensor float32, ranks within ArmNN's limit.
  for (int i = 0; i < num_inputs(node_); ++i) {
    const int v = input_of(node_, i);
    if (v < 0) continue;
    if (!valid(v)) return no("input %d is not a value of the graph", i);
    const fb::Value* val = graph_.values()->Get(static_cast<uint32_t>(v));
    if (val->kind() != fb::ValueKind::Tensor || val->dtype() != fb::ScalarType::Float32) {
      return no("input %d is not a float32 tensor (the backend runs float32 only)", i);
    }
    if (d(v).size() > kMaxRank)
      return no("input %d has rank %zu; ArmNN takes up to 5", i, d(v).size());
  }
  const int y = output_of(node_, 0);
  if (!valid(y)) return no("no output");
  {
    const fb::Value* val = graph_.values()->Get(static_cast<uint32_t>(y));
    if (val->dtype() != fb::ScalarType::Float32) return no("the output is not float32");
    if (d(y).size() > kMaxRank)
      return no("the output has rank %zu; ArmNN takes up to 5", d(y).size());
    if (d(y).numel() == 0) return no("empty tensors have no ArmNN equivalent");
  }
  const int x = input_of(node_, 0);
  if (!valid(x) && node_.op() != Op::Concat) return no("no input");
  ir::AttrView attrs(&node_);
  switch (node_.op()) {
    case Op::Identity:
    case Op::Relu:
    case Op::Sigmoid:
    case Op::Tanh:
    case Op::HardSwish:
    case Op::LeakyRelu:
    case Op::HardSigmoid:
    case Op::Clip:
    case Op::Neg:
    case Op::Abs:
    case Op::Sqrt:
    case Op::Exp:
    case Op::Elu:
    case Op::Reshape:
    case Op::Flatten:
    case Op::Squeeze:
    case Op::Unsqueeze:
      return Status::ok();
    case Op::Gelu:
      return no("ArmNN 20.08 has neither a Gelu activation nor an erf to compose one from");
    case Op::Erf:
      return no("ArmNN 20.08 has no erf");
    case Op::Conv:
      return check_conv();
    case Op::Gemm: {
      const int b = input_of(node_, 1), c = input_of(node_, 2);
      if (d(x).size() != 2) return no("A must be 2-D");
      if (!is_constant(graph_, b))
        return no("B must be a constant (ArmNN's fully connected layer)");
      Result<ir::GemmAttrs> gemm = ir::GemmAttrs::read(attrs);
      if (!gemm.ok() || gemm->transA != 0)
        return no("transA=1 has no ArmNN fully connected equivalent");
      if (c >= 0) {
        if (!is_constant(graph_, c)) return no("C must be a constant");
        if (d(c).numel() != d(y)[1] || (d(c).size() == 2 && d(c)[0] != 1)) {
          return no("C must be a row of N values (a bias)");
        }
      }
      return Status::ok();
    }
    case Op::MatMul: {
      const int b = input_of(node_, 1);
      if (!is_constant(graph_, b) || d(b).size() != 2) {
        return no(
            "B must be a constant 2-D matrix: ArmNN 20.08 has no batched matrix product of "
            "two activations");
      }
      if (d(x).size() < 2) return no("A must have rank 2 or more");
      return Status::ok();
    }
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Div:
    case Op::Max:
    case Op::Min:
    case Op::PRelu: {
      if (num_inputs(node_) != 2) return no("only two operands map to ArmNN's binary layers");
      const int b = input_of(node_, 1);
      if (!valid(b)) return no("missing second operand");
      const size_t r = d(y).size();
      for (int v : {x, b}) {
        if (d(v).size() > r) return no("an operand has a higher rank than the output");
        const Dims& dv = d(v);
        for (size_t k = 0; k < dv.size(); ++k) {
          const int64_t out = d(y)[r - dv.size() + k];
          if (dv[k] != out && dv[k] != 1) return no("operand dims do not broadcast to the output");
        }
      }
      if (node_.op() == Op::PRelu && d(x) != d(y)) return no("X must have the output's shape");
      return Status::ok();
    }
    case Op::Softmax:
      return Status::ok();
    case Op::Transpose:
      return Status::ok();
    case Op::ChannelShuffle: {
      Result<ir::ChannelShuffleAttrs> shuffle = ir::ChannelShuffleAttrs::read(attrs);
      if (!shuffle.ok()) return no("group has the wrong type or is missing");
      if (d(x).size() < 2) return no("X must be [N, C, ...]");
      if (shuffle->group < 1 || d(x)[1] % shuffle->group != 0) {
        return no("group does not divide the channels");
      }
      if (!(d(x) == d(y))) return no("Y must have X's shape");
      return Status::ok();
    }
    case Op::Concat:
      for (int i = 0; i < num_inputs(node_); ++i) {
        if (!valid(input_of(node_, i))) return no("missing input %d", i);
      }
      return Status::ok();
    case Op::Pad: {
      Result<ir::PadAttrs> pad = ir::PadAttrs::read(attrs);
      if (!pad.ok() || pad->mode != "constant")
        return no("only constant padding maps to ArmNN's Pad");
      if (!pad->axes.empty()) return no("the axes attribute is not converted");
      const Span<const int64_t> pads = pad->pads;
      if (pads.size() != 2 * d(x).size()) return no("pads must have 2 x rank entries");
      for (int64_t p : pads) {
        if (p < 0) return no("negative pads (cropping)");
      }
      return Status::ok();
    }
    case Op::ReduceMean: {
      Result<ir::ReduceAttrs> reduce = ir::ReduceAttrs::read(attrs);
      if (!reduce.ok() || reduce->noop_with_empty_axes != 0) return no("noop_with_empty_axes=1");
      return Status::ok();
    }
    case Op::GlobalAveragePool:
      if (d(x).size() != 4) return no("only rank-4 NCHW input maps to ArmNN pooling");
      return Status::ok();
    case Op::MaxPool:
    case Op::AveragePool:
      return check_pool();
    case Op::BatchNormalization: {
      if (d(x).size() != 4) return no("only rank-4 NCHW input maps to ArmNN's batch norm");
      for (int i = 1; i < 5; ++i) {
        if (!is_constant(graph_, input_of(node_, i))) return no("input %d must be a constant", i);
      }
      Result<ir::BatchNormalizationAttrs> bn = ir::BatchNormalizationAttrs::read(attrs);
      if (!bn.ok() || bn->training_mode != 0) return no("training_mode=1");
      return Status::ok();
    }
    case Op::LayerNormalization: {
      const int scale = input_of(node_, 1), bias = input_of(node_, 2);
      if (!is_constant(graph_, scale)) return no("Scale must be a constant");
      if (bias >= 0 && !is_constant(graph_, bias)) return no("B must be a constant");
      if (output_of(node_, 1) >= 0 || output_of(node_, 2) >= 0) {
        return no("the Mean and InvStdDev outputs are not computed");
      }
      return Status::ok();
    }
    case Op::Resize: {
      if (d(x).size() != 4 || d(x)[0] != d(y)[0] || d(x)[1] != d(y)[1]) {
        return no("only resizing H and W of a rank-4 NCHW tensor maps to ArmNN");
      }
      Result<ir::ResizeAttrs> resize = ir::ResizeAttrs::read(attrs);
      if (!resize.ok()) return no("bad attribute types");
      const std::string_view* mode = &resize->mode;
      const std::string_view* ctm = &resize->coordinate_transformation_mode;
      const std::string_view* nearest = &resize->nearest_mode;
      if (*mode == "nearest") {
        if (*ctm != "asymmetric" || *nearest != "floor") {
          return no(
              "nearest resizing maps to ArmNN only with asymmetric coordinates and floor "
              "rounding");
        }
      } else if (*mode == "linear") {
        const bool pytorch_one = *ctm == "pytorch_half_pixel" && (d(y)[2] == 1 || d(y)[3] == 1);
        if ((*ctm != "half_pixel" && *ctm != "pytorch_half_pixel" && *ctm != "align_corners" &&
             *ctm != "asymmetric") ||
            pytorch_one) {
          return no("coordinate_transformation_mode '%.*s' has no ArmNN equivalent",
                    static_cast<int>(ctm->size()), ctm->data());
        }
      } else {
        return no("mode '%.*s' has no ArmNN equivalent", static_cast<int>(mode->size()),
                  mode->data());
      }
      const Span<const float>* scales = &resize->scales;
      if (scales->size() == 4) {
        for (size_t k = 2; k < 4; ++k) {
          const double ratio = static_cast<double>(d(y)[k]) / static_cast<double>(d(x)[k]);
          if (std::fabs((*scales)[k] - ratio) > 1e-6 * ratio) {
            return no(
                "scales differ from the output/input size ratio (ArmNN derives the scale "
                "from the sizes)");
          }
        }
      }
      return Status::ok();
    }
    case Op::ConvTranspose:
    case Op::Pow:
    case Op::ReduceSum:
    case Op::ReduceMax:
    case Op::Split:
    case Op::Slice:
    case Op::Gather:
    case Op::Cast:
    case Op::Reciprocal:
    case Op::Where:
    case Op::Equal:
    case Op::Less:
    case Op::Greater:
    case Op::Mish:
      return no("no ArmNN layer or composition is implemented for this op");
  }
  return no("op %d is not an OpType", static_cast<int>(node_.op()));
}

// Building ---------------------------------------------------------------------------------------

/// `rank` dims of 1.
Dims ones(int rank) {
  Dims dims;
  dims.rank = rank;
  for (int k = 0; k < rank; ++k) dims[static_cast<size_t>(k)] = 1;
  return dims;
}

armnn::TensorShape shape_of(const Dims& dims) {
  if (dims.rank == 0) return armnn::TensorShape({1});
  std::vector<unsigned> u(dims.begin(), dims.end());
  return armnn::TensorShape(static_cast<unsigned>(u.size()), u.data());
}
armnn::TensorInfo info_of(const Dims& dims) {
  return armnn::TensorInfo(shape_of(dims), armnn::DataType::Float32);
}

class Builder {
 public:
  explicit Builder(const PayloadGraph& view) : view_(view), graph_(view.graph()) {}

  Result<BuiltNetwork> build();

 private:
  Status resolve();
  Status convert(const fb::Node& node);
  /// The slot that produces value `v` (a constant becomes a constant layer on first use).
  Result<armnn::IOutputSlot*> slot(int v);
  /// `v`'s slot reshaped to rank `rank` by leading 1s (ArmNN broadcasts equal ranks only).
  Result<armnn::IOutputSlot*> slot_at_rank(int v, size_t rank);
  Result<std::vector<float>> constant(int v);
  Result<armnn::IOutputSlot*> constant_layer(const std::vector<float>& data, const Dims& dims);
  armnn::IOutputSlot* out(armnn::IConnectableLayer* layer, const Dims& dims, int index = 0);
  void connect(armnn::IOutputSlot* from, armnn::IConnectableLayer* to, unsigned input = 0) {
    from->Connect(to->GetInputSlot(input));
  }
  armnn::IOutputSlot* reshape(armnn::IOutputSlot* from, const Dims& dims);
  armnn::IOutputSlot* activation(armnn::IOutputSlot* from, const Dims& dims,
                                 armnn::ActivationFunction f, float a = 0.0f, float b = 0.0f);
  /// Applies the node's fused activation (Relu, Clip) to `from`.
  armnn::IOutputSlot* fused(const fb::Node& node, armnn::IOutputSlot* from, const Dims& dims);
  armnn::IOutputSlot* binary(Op op, armnn::IOutputSlot* a, armnn::IOutputSlot* b, const Dims& dims);
  Result<armnn::IOutputSlot*> conv(const fb::Node& node);
  Result<armnn::IOutputSlot*> pool(const fb::Node& node);
  Result<armnn::IOutputSlot*> layer_norm(const fb::Node& node);
  const Dims& d(int v) const { return view_.dims(v); }

  const PayloadGraph& view_;
  const fb::Graph& graph_;
  std::vector<armnn::IOutputSlot*> slots_;
  BuiltNetwork net_;
};

Status Builder::resolve() {
  const size_t n = view_.num_values();
  slots_.assign(n, nullptr);
  for (size_t i = 0; i < n; ++i) {
    const Dims& dims = view_.dims(static_cast<int32_t>(i));
    for (int64_t x : dims) {
      if (x > INT32_MAX) {
        return Status::error(Error::InvalidProgram, "armnn: value %zu has dim %lld", i,
                             static_cast<long long>(x));
      }
    }
  }
  return Status::ok();
}

Result<std::vector<float>> Builder::constant(int v) {
  const PayloadValue& pv = view_.value(v);
  if (!pv.is_constant()) {
    return Status::error(Error::InvalidProgram, "armnn: value %d is not a constant", v);
  }
  const Span<const uint8_t> bytes = pv.data;
  const size_t count = static_cast<size_t>(d(v).numel());
  if (bytes.size() < count * sizeof(float)) {
    return Status::error(Error::InvalidProgram, "armnn: constant %d has %zu bytes, expected %zu",
                         pv.constant, bytes.size(), count * sizeof(float));
  }
  std::vector<float> data(count);
  std::memcpy(data.data(), bytes.data(), count * sizeof(float));
  return data;
}

Result<armnn::IOutputSlot*> Builder::constant_layer(const std::vector<float>& data,
                                                    const Dims& dims) {
  armnn::ConstTensor t(info_of(dims), data.data());
  armnn::IConnectableLayer* layer = net_.network->AddConstantLayer(t);
  return out(layer, dims);
}

Result<armnn::IOutputSlot*> Builder::slot(int v) {
  if (slots_[static_cast<size_t>(v)] != nullptr) return slots_[static_cast<size_t>(v)];
  if (is_constant(graph_, v)) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<float> data, constant(v));
    TESSERA_ASSIGN_OR_RETURN(armnn::IOutputSlot * s, constant_layer(data, d(v)));
    slots_[static_cast<size_t>(v)] = s;
    return s;
  }
  return Status::error(Error::InvalidProgram, "armnn: value %d is read before it is produced", v);
}

Result<armnn::IOutputSlot*> Builder::slot_at_rank(int v, size_t rank) {
  if (d(v).size() >= rank) return slot(v);
  Dims dims;
  dims.rank = static_cast<int>(rank);
  const size_t lead = rank - d(v).size();
  for (size_t k = 0; k < rank; ++k) dims[k] = k < lead ? 1 : d(v)[k - lead];
  if (is_constant(graph_, v)) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<float> data, constant(v));
    return constant_layer(data, dims);
  }
  TESSERA_ASSIGN_OR_RETURN(armnn::IOutputSlot * s, slot(v));
  return reshape(s, dims);
}

armnn::IOutputSlot* Builder::out(armnn::IConnectableLayer* layer, const Dims& dims, int index) {
  armnn::IOutputSlot& s = layer->GetOutputSlot(static_cast<unsigned>(index));
  s.SetTensorInfo(info_of(dims));
  ++net_.layers;
  return &s;
}

armnn::IOutputSlot* Builder::reshape(armnn::IOutputSlot* from, const Dims& dims) {
  armnn::ReshapeDescriptor desc;
  desc.m_TargetShape = shape_of(dims);
  armnn::IConnectableLayer* layer = net_.network->AddReshapeLayer(desc);
  connect(from, layer);
  return out(layer, dims);
}

armnn::IOutputSlot* Builder::activation(armnn::IOutputSlot* from, const Dims& dims,
                                        armnn::ActivationFunction f, float a, float b) {
  armnn::ActivationDescriptor desc;
  desc.m_Function = f;
  desc.m_A = a;
  desc.m_B = b;
  armnn::IConnectableLayer* layer = net_.network->AddActivationLayer(desc);
  connect(from, layer);
  return out(layer, dims);
}

armnn::IOutputSlot* Builder::fused(const fb::Node& node, armnn::IOutputSlot* from,
                                   const Dims& dims) {
  if (node.activation() == fb::Activation::Relu) {
    return activation(from, dims, armnn::ActivationFunction::ReLu);
  }
  if (node.activation() == fb::Activation::Clip) {
    const float lo = std::isinf(node.activation_min()) ? -FLT_MAX : node.activation_min();
    const float hi = std::isinf(node.activation_max()) ? FLT_MAX : node.activation_max();
    return activation(from, dims, armnn::ActivationFunction::BoundedReLu, hi, lo);
  }
  return from;
}

armnn::IOutputSlot* Builder::binary(Op op, armnn::IOutputSlot* a, armnn::IOutputSlot* b,
                                    const Dims& dims) {
  armnn::IConnectableLayer* layer = nullptr;
  switch (op) {
    case Op::Add:
      layer = net_.network->AddAdditionLayer();
      break;
    case Op::Sub:
      layer = net_.network->AddSubtractionLayer();
      break;
    case Op::Mul:
      layer = net_.network->AddMultiplicationLayer();
      break;
    case Op::Div:
      layer = net_.network->AddDivisionLayer();
      break;
    case Op::Max:
      layer = net_.network->AddMaximumLayer();
      break;
    case Op::Min:
      layer = net_.network->AddMinimumLayer();
      break;
    case Op::PRelu:
      layer = net_.network->AddPreluLayer();
      break;
    default:  // not reached: convert() calls binary() for the ops above only
      assert(false);
      layer = net_.network->AddPreluLayer();
      break;
  }
  connect(a, layer, 0);
  connect(b, layer, 1);
  return out(layer, dims);
}

Result<armnn::IOutputSlot*> Builder::conv(const fb::Node& node) {
  const int x = input_of(node, 0), w = input_of(node, 1), bias_v = input_of(node, 2);
  const int y = output_of(node, 0);
  TESSERA_ASSIGN_OR_RETURN(const ir::ConvAttrs attrs, ir::ConvAttrs::read(ir::AttrView(&node)));
  const int64_t group = attrs.group;
  const Dims& dx = d(x);
  const Dims& dw = d(w);
  const Dims& dy = d(y);
  if (dw.size() != 4 || group < 1 || dx[1] != dw[1] * group || dy[1] != dw[0] ||
      dw[0] % group != 0) {
    return Status::error(Error::InvalidProgram, "armnn: Conv weights [%lld, %lld, ...] do not fit",
                         static_cast<long long>(dw.size() > 0 ? dw[0] : 0),
                         static_cast<long long>(dw.size() > 1 ? dw[1] : 0));
  }
  const std::vector<int64_t> strides(attrs.strides.begin(), attrs.strides.end());
  const std::vector<int64_t> dilations(attrs.dilations.begin(), attrs.dilations.end());
  std::vector<int64_t> pads(attrs.pads.begin(), attrs.pads.end());
  if (pads.size() != 4) pads.assign(4, 0);
  TESSERA_ASSIGN_OR_RETURN(std::vector<float> weights, constant(w));
  std::vector<float> bias;
  if (bias_v >= 0) {
    TESSERA_ASSIGN_OR_RETURN(bias, constant(bias_v));
  }
  auto fill = [&](auto& desc) {
    desc.m_PadTop = static_cast<uint32_t>(pads[0]);
    desc.m_PadLeft = static_cast<uint32_t>(pads[1]);
    desc.m_PadBottom = static_cast<uint32_t>(pads[2]);
    desc.m_PadRight = static_cast<uint32_t>(pads[3]);
    desc.m_StrideY = static_cast<uint32_t>(strides.size() == 2 ? strides[0] : 1);
    desc.m_StrideX = static_cast<uint32_t>(strides.size() == 2 ? strides[1] : 1);
    desc.m_DilationY = static_cast<uint32_t>(dilations.size() == 2 ? dilations[0] : 1);
    desc.m_DilationX = static_cast<uint32_t>(dilations.size() == 2 ? dilations[1] : 1);
    desc.m_BiasEnabled = bias_v >= 0;
    desc.m_DataLayout = armnn::DataLayout::NCHW;
  };
  TESSERA_ASSIGN_OR_RETURN(armnn::IOutputSlot * in, slot(x));
  const char* name = node.name() ? node.name()->c_str() : nullptr;
  const int64_t kh = dw[2], kw = dw[3];
  if (group == 1) {
    armnn::Convolution2dDescriptor desc;
    fill(desc);
    armnn::ConstTensor wt(info_of(dw), weights.data());
    armnn::Optional<armnn::ConstTensor> bt;
    if (bias_v >= 0) bt = armnn::ConstTensor(info_of({dw[0]}), bias.data());
    armnn::IConnectableLayer* layer = net_.network->AddConvolution2dLayer(desc, wt, bt, name);
    connect(in, layer);
    return out(layer, dy);
  }
  if (dw[1] == 1 && group == dx[1]) {
    // Depthwise: ArmNN 20.08 wants weights [M, C, H, W] with output channel c * M + m.
    const int64_t channels = dx[1], multiplier = dw[0] / channels;
    std::vector<float> dwt(weights.size());
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t m = 0; m < multiplier; ++m) {
        std::memcpy(&dwt[static_cast<size_t>((m * channels + c) * kh * kw)],
                    &weights[static_cast<size_t>((c * multiplier + m) * kh * kw)],
                    static_cast<size_t>(kh * kw) * sizeof(float));
      }
    }
    armnn::DepthwiseConvolution2dDescriptor desc;
    fill(desc);
    armnn::ConstTensor wt(info_of({multiplier, channels, kh, kw}), dwt.data());
    armnn::Optional<armnn::ConstTensor> bt;
    if (bias_v >= 0) bt = armnn::ConstTensor(info_of({dw[0]}), bias.data());
    armnn::IConnectableLayer* layer =
        net_.network->AddDepthwiseConvolution2dLayer(desc, wt, bt, name);
    connect(in, layer);
    return out(layer, dy);
  }
  // Grouped: split the channels, one convolution per group, concatenate (ArmNN 20.08 has no
  // grouped convolution layer).
  const int64_t cin = dw[1], cout = dw[0] / group;
  armnn::ViewsDescriptor views(static_cast<uint32_t>(group), 4);
  for (int64_t g = 0; g < group; ++g) {
    const uint32_t view = static_cast<uint32_t>(g);
    for (uint32_t k = 0; k < 4; ++k) {
      views.SetViewOriginCoord(view, k, k == 1 ? static_cast<uint32_t>(g * cin) : 0);
      views.SetViewSize(view, k,
                        k == 1 ? static_cast<uint32_t>(cin) : static_cast<uint32_t>(dx[k]));
    }
  }
  armnn::IConnectableLayer* split = net_.network->AddSplitterLayer(views);
  connect(in, split);
  std::vector<armnn::TensorShape> shapes;
  std::vector<armnn::IOutputSlot*> parts;
  const Dims part_out = {dy[0], cout, dy[2], dy[3]};
  const size_t per_group = static_cast<size_t>(cout * cin * kh * kw);
  for (int64_t g = 0; g < group; ++g) {
    armnn::IOutputSlot* s = out(split, {dx[0], cin, dx[2], dx[3]}, static_cast<int>(g));
    armnn::Convolution2dDescriptor desc;
    fill(desc);
    armnn::ConstTensor wt(info_of({cout, cin, kh, kw}),
                          weights.data() + static_cast<size_t>(g) * per_group);
    armnn::Optional<armnn::ConstTensor> bt;
    if (bias_v >= 0) {
      bt = armnn::ConstTensor(info_of({cout}), bias.data() + static_cast<size_t>(g * cout));
    }
    armnn::IConnectableLayer* layer = net_.network->AddConvolution2dLayer(desc, wt, bt);
    s->Connect(layer->GetInputSlot(0));
    parts.push_back(out(layer, part_out));
    shapes.push_back(shape_of(part_out));
  }
  armnn::OriginsDescriptor origins =
      armnn::CreateDescriptorForConcatenation(shapes.begin(), shapes.end(), 1);
  armnn::IConnectableLayer* concat = net_.network->AddConcatLayer(origins, name);
  for (size_t g = 0; g < parts.size(); ++g) connect(parts[g], concat, static_cast<unsigned>(g));
  return out(concat, dy);
}

Result<armnn::IOutputSlot*> Builder::pool(const fb::Node& node) {
  const int x = input_of(node, 0), y = output_of(node, 0);
  ir::AttrView attrs(&node);
  armnn::Pooling2dDescriptor desc;
  desc.m_DataLayout = armnn::DataLayout::NCHW;
  if (node.op() == Op::GlobalAveragePool) {
    desc.m_PoolType = armnn::PoolingAlgorithm::Average;
    desc.m_PoolHeight = static_cast<uint32_t>(d(x)[2]);
    desc.m_PoolWidth = static_cast<uint32_t>(d(x)[3]);
    desc.m_StrideX = desc.m_StrideY = 1;
  } else {
    TESSERA_ASSIGN_OR_RETURN(const ir::PoolAttrs pool, ir::PoolAttrs::read(attrs));
    const std::vector<int64_t> kernel(pool.kernel_shape.begin(), pool.kernel_shape.end());
    const std::vector<int64_t> strides(pool.strides.begin(), pool.strides.end());
    std::vector<int64_t> pads(pool.pads.begin(), pool.pads.end());
    if (pads.size() != 4) pads.assign(4, 0);
    const int64_t ceil_mode = pool.ceil_mode;
    const int64_t include_pad = pool.count_include_pad;
    desc.m_PoolType =
        node.op() == Op::MaxPool ? armnn::PoolingAlgorithm::Max : armnn::PoolingAlgorithm::Average;
    desc.m_PoolHeight = static_cast<uint32_t>(kernel[0]);
    desc.m_PoolWidth = static_cast<uint32_t>(kernel[1]);
    desc.m_StrideY = static_cast<uint32_t>(strides.size() == 2 ? strides[0] : 1);
    desc.m_StrideX = static_cast<uint32_t>(strides.size() == 2 ? strides[1] : 1);
    desc.m_PadTop = static_cast<uint32_t>(pads[0]);
    desc.m_PadLeft = static_cast<uint32_t>(pads[1]);
    desc.m_PadBottom = static_cast<uint32_t>(pads[2]);
    desc.m_PadRight = static_cast<uint32_t>(pads[3]);
    desc.m_OutputShapeRounding =
        ceil_mode != 0 ? armnn::OutputShapeRounding::Ceiling : armnn::OutputShapeRounding::Floor;
    desc.m_PaddingMethod =
        include_pad != 0 ? armnn::PaddingMethod::IgnoreValue : armnn::PaddingMethod::Exclude;
  }
  TESSERA_ASSIGN_OR_RETURN(armnn::IOutputSlot * in, slot(x));
  armnn::IConnectableLayer* layer = net_.network->AddPooling2dLayer(desc);
  connect(in, layer);
  return fused(node, out(layer, d(y)), d(y));
}

// LayerNormalization over X.shape[axis:]: mean, centred, variance, rsqrt, scale, shift.
Result<armnn::IOutputSlot*> Builder::layer_norm(const fb::Node& node) {
  const int x = input_of(node, 0), scale = input_of(node, 1), bias = input_of(node, 2);
  const int y = output_of(node, 0);
  TESSERA_ASSIGN_OR_RETURN(const ir::LayerNormalizationAttrs attrs,
                           ir::LayerNormalizationAttrs::read(ir::AttrView(&node)));
  int64_t axis = attrs.axis;
  const float eps = attrs.epsilon;
  const Dims& dx = d(x);
  const int64_t rank = static_cast<int64_t>(dx.size());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) {
    return Status::error(Error::InvalidProgram, "armnn: LayerNormalization axis out of range");
  }
  armnn::MeanDescriptor mean_desc;
  Dims reduced = dx;
  for (int64_t k = axis; k < rank; ++k) {
    mean_desc.m_Axis.push_back(static_cast<unsigned>(k));
    reduced[static_cast<size_t>(k)] = 1;
  }
  mean_desc.m_KeepDims = true;
  TESSERA_ASSIGN_OR_RETURN(armnn::IOutputSlot * in, slot(x));
  armnn::IConnectableLayer* mean = net_.network->AddMeanLayer(mean_desc);
  connect(in, mean);
  armnn::IOutputSlot* mu = out(mean, reduced);
  armnn::IOutputSlot* centred = binary(Op::Sub, in, mu, dx);
  armnn::IOutputSlot* sq = binary(Op::Mul, centred, centred, dx);
  armnn::IConnectableLayer* var_layer = net_.network->AddMeanLayer(mean_desc);
  connect(sq, var_layer);
  armnn::IOutputSlot* var = out(var_layer, reduced);
  TESSERA_ASSIGN_OR_RETURN(armnn::IOutputSlot * eps_slot,
                           constant_layer({eps}, ones(static_cast<int>(rank))));
  armnn::IOutputSlot* var_eps = binary(Op::Add, var, eps_slot, reduced);
  armnn::ElementwiseUnaryDescriptor rsqrt_desc(armnn::UnaryOperation::Rsqrt);
  armnn::IConnectableLayer* rsqrt = net_.network->AddElementwiseUnaryLayer(rsqrt_desc);
  connect(var_eps, rsqrt);
  armnn::IOutputSlot* inv = out(rsqrt, reduced);
  armnn::IOutputSlot* normed = binary(Op::Mul, centred, inv, dx);
  TESSERA_ASSIGN_OR_RETURN(armnn::IOutputSlot * s, slot_at_rank(scale, dx.size()));
  armnn::IOutputSlot* result = binary(Op::Mul, normed, s, dx);
  if (bias >= 0) {
    TESSERA_ASSIGN_OR_RETURN(armnn::IOutputSlot * b, slot_at_rank(bias, dx.size()));
    result = binary(Op::Add, result, b, dx);
  }
  return fused(node, result, d(y));
}

Status Builder::convert(const fb::Node& node) {
  const int x = input_of(node, 0), y = output_of(node, 0);
  const Dims& dy = d(y);
  ir::AttrView attrs(&node);
  armnn::IOutputSlot* result = nullptr;
  auto act = [&](armnn::ActivationFunction f, float a = 0.0f, float b = 0.0f) -> Status {
    TESSERA_ASSIGN_OR_RETURN(armnn::IOutputSlot * in, slot(x));
    result = activation(in, dy, f, a, b);
    return Status::ok();
  };
  auto unary = [&](armnn::UnaryOperation u) -> Status {
    TESSERA_ASSIGN_OR_RETURN(armnn::IOutputSlot * in, slot(x));
    armnn::IConnectableLayer* layer =
        net_.network->AddElementwiseUnaryLayer(armnn::ElementwiseUnaryDescriptor(u));
    connect(in, layer);
    result = out(layer, dy);
    return Status::ok();
  };
  switch (node.op()) {
    case Op::Identity: {
      TESSERA_ASSIGN_OR_RETURN(result, slot(x));
      break;
    }
    case Op::Relu:
      TESSERA_RETURN_IF_ERROR(act(armnn::ActivationFunction::ReLu));
      break;
    case Op::Sigmoid:
      TESSERA_RETURN_IF_ERROR(act(armnn::ActivationFunction::Sigmoid));
      break;
    case Op::Tanh:
      TESSERA_RETURN_IF_ERROR(act(armnn::ActivationFunction::TanH, 1.0f, 1.0f));
      break;
    case Op::HardSwish:
      TESSERA_RETURN_IF_ERROR(act(armnn::ActivationFunction::HardSwish));
      break;
    case Op::LeakyRelu: {
      TESSERA_ASSIGN_OR_RETURN(const ir::LeakyReluAttrs a, ir::LeakyReluAttrs::read(attrs));
      TESSERA_RETURN_IF_ERROR(act(armnn::ActivationFunction::LeakyReLu, a.alpha));
      break;
    }
    case Op::Elu: {
      TESSERA_ASSIGN_OR_RETURN(const ir::EluAttrs a, ir::EluAttrs::read(attrs));
      TESSERA_RETURN_IF_ERROR(act(armnn::ActivationFunction::Elu, a.alpha));
      break;
    }
    case Op::Clip: {
      TESSERA_ASSIGN_OR_RETURN(const ir::ClipAttrs a, ir::ClipAttrs::read(attrs));
      const float lo = a.min, hi = a.max;
      TESSERA_RETURN_IF_ERROR(act(armnn::ActivationFunction::BoundedReLu,
                                  std::isinf(hi) ? FLT_MAX : hi, std::isinf(lo) ? -FLT_MAX : lo));
      break;
    }
    case Op::HardSigmoid: {
      TESSERA_ASSIGN_OR_RETURN(const ir::HardSigmoidAttrs a, ir::HardSigmoidAttrs::read(attrs));
      TESSERA_RETURN_IF_ERROR(act(armnn::ActivationFunction::Linear, a.alpha, a.beta));
      result = activation(result, dy, armnn::ActivationFunction::BoundedReLu, 1.0f, 0.0f);
      break;
    }
    case Op::Neg:
      TESSERA_RETURN_IF_ERROR(unary(armnn::UnaryOperation::Neg));
      break;
    case Op::Abs:
      TESSERA_RETURN_IF_ERROR(unary(armnn::UnaryOperation::Abs));
      break;
    case Op::Sqrt:
      TESSERA_RETURN_IF_ERROR(unary(armnn::UnaryOperation::Sqrt));
      break;
    case Op::Exp:
      TESSERA_RETURN_IF_ERROR(unary(armnn::UnaryOperation::Exp));
      break;
    case Op::Reshape:
    case Op::Flatten:
    case Op::Squeeze:
    case Op::Unsqueeze: {
      TESSERA_ASSIGN_OR_RETURN(armnn::IOutputSlot * in, slot(x));
      result = reshape(in, dy);
      break;
    }
    case Op::Conv: {
      TESSERA_ASSIGN_OR_RETURN(result, conv(node));
      result = fused(node, result, dy);
      break;
    }
    case Op::Gemm:
    case Op::MatMul: {
      const int b = input_of(node, 1), c = input_of(node, 2);
      TESSERA_ASSIGN_OR_RETURN(std::vector<float> weights, constant(b));
      float alpha = 1.0f, beta = 1.0f;
      int64_t trans_b = 0;
      if (node.op() == Op::Gemm) {
        TESSERA_ASSIGN_OR_RETURN(const ir::GemmAttrs gemm, ir::GemmAttrs::read(attrs));
        alpha = gemm.alpha;
        beta = gemm.beta;
        trans_b = gemm.transB;
      }
      if (alpha != 1.0f) {
        for (float& w : weights) w *= alpha;
      }
      const Dims& dx = d(x);
      const int64_t k = dx[dx.size() - 1];
      const int64_t rows = dx.numel() / k;
      const int64_t n = dy[dy.size() - 1];
      armnn::FullyConnectedDescriptor desc;
      desc.m_TransposeWeightMatrix = trans_b != 0;  // weights [N, K]
      std::vector<float> bias;
      if (node.op() == Op::Gemm && c >= 0) {
        TESSERA_ASSIGN_OR_RETURN(bias, constant(c));
        for (float& v : bias) v *= beta;
        desc.m_BiasEnabled = true;
      }
      armnn::ConstTensor wt(info_of(trans_b != 0 ? Dims{n, k} : Dims{k, n}), weights.data());
      armnn::Optional<armnn::ConstTensor> bt;
      if (desc.m_BiasEnabled) bt = armnn::ConstTensor(info_of({n}), bias.data());
      TESSERA_ASSIGN_OR_RETURN(armnn::IOutputSlot * in, slot(x));
      if (dx.size() != 2) in = reshape(in, {rows, k});
      armnn::IConnectableLayer* layer = net_.network->AddFullyConnectedLayer(
          desc, wt, bt, node.name() ? node.name()->c_str() : nullptr);
      connect(in, layer);
      result = out(layer, {rows, n});
      if (dy.size() != 2) result = reshape(result, dy);
      result = fused(node, result, dy);
      break;
    }
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Div:
    case Op::Max:
    case Op::Min:
    case Op::PRelu: {
      TESSERA_ASSIGN_OR_RETURN(armnn::IOutputSlot * a, slot_at_rank(x, dy.size()));
      TESSERA_ASSIGN_OR_RETURN(armnn::IOutputSlot * b, slot_at_rank(input_of(node, 1), dy.size()));
      result = fused(node, binary(node.op(), a, b, dy), dy);
      break;
    }
    case Op::Softmax: {
      TESSERA_ASSIGN_OR_RETURN(const ir::SoftmaxAttrs softmax, ir::SoftmaxAttrs::read(attrs));
      int64_t axis = softmax.axis;
      const int64_t rank = static_cast<int64_t>(dy.size());
      if (axis < 0) axis += rank;
      armnn::SoftmaxDescriptor desc;
      desc.m_Axis = static_cast<int>(axis);
      TESSERA_ASSIGN_OR_RETURN(armnn::IOutputSlot * in, slot(x));
      armnn::IConnectableLayer* layer = net_.network->AddSoftmaxLayer(desc);
      connect(in, layer);
      result = out(layer, dy);
      break;
    }
    case Op::Transpose: {
      TESSERA_ASSIGN_OR_RETURN(const ir::TransposeAttrs transpose, ir::TransposeAttrs::read(attrs));
      std::vector<int64_t> perm(transpose.perm.begin(), transpose.perm.end());
      const size_t rank = d(x).size();
      if (perm.empty()) {
        for (size_t k = 0; k < rank; ++k) perm.push_back(static_cast<int64_t>(rank - 1 - k));
      }
      // ArmNN's Transpose: output dim i is input dim perm[i], as ONNX.
      std::vector<unsigned> p(perm.begin(), perm.end());
      armnn::TransposeDescriptor desc(
          armnn::PermutationVector(p.data(), static_cast<unsigned>(p.size())));
      TESSERA_ASSIGN_OR_RETURN(armnn::IOutputSlot * in, slot(x));
      armnn::IConnectableLayer* layer = net_.network->AddTransposeLayer(desc);
      connect(in, layer);
      result = out(layer, dy);
      break;
    }
    case Op::ChannelShuffle: {
      // ArmNN 20.08 has no ChannelShuffle layer: Reshape to [N, g, C/g, S], Transpose 0 2 1 3
      // (rank 4, which every ArmNN backend's Transpose takes), Reshape back.
      TESSERA_ASSIGN_OR_RETURN(const ir::ChannelShuffleAttrs shuffle,
                               ir::ChannelShuffleAttrs::read(attrs));
      const Dims& dx = d(x);
      const int64_t g = shuffle.group, spatial = dx.numel() / (dx[0] * dx[1]);
      const Dims split{dx[0], g, dx[1] / g, spatial};
      const Dims swapped{dx[0], dx[1] / g, g, spatial};
      TESSERA_ASSIGN_OR_RETURN(armnn::IOutputSlot * in, slot(x));
      const unsigned perm[] = {0, 2, 1, 3};
      armnn::TransposeDescriptor desc(armnn::PermutationVector(perm, 4));
      armnn::IConnectableLayer* layer = net_.network->AddTransposeLayer(desc);
      connect(reshape(in, split), layer);
      result = reshape(out(layer, swapped), dy);
      break;
    }
    case Op::Concat: {
      TESSERA_ASSIGN_OR_RETURN(const ir::ConcatAttrs concat, ir::ConcatAttrs::read(attrs));
      int64_t axis = concat.axis;
      const int64_t rank = static_cast<int64_t>(dy.size());
      if (axis < 0) axis += rank;
      std::vector<armnn::TensorShape> shapes;
      std::vector<armnn::IOutputSlot*> ins;
      for (int i = 0; i < num_inputs(node); ++i) {
        const int v = input_of(node, i);
        TESSERA_ASSIGN_OR_RETURN(armnn::IOutputSlot * s, slot(v));
        ins.push_back(s);
        shapes.push_back(shape_of(d(v)));
      }
      armnn::OriginsDescriptor origins = armnn::CreateDescriptorForConcatenation(
          shapes.begin(), shapes.end(), static_cast<unsigned>(axis));
      armnn::IConnectableLayer* layer = net_.network->AddConcatLayer(origins);
      for (size_t i = 0; i < ins.size(); ++i) connect(ins[i], layer, static_cast<unsigned>(i));
      result = fused(node, out(layer, dy), dy);
      break;
    }
    case Op::Pad: {
      TESSERA_ASSIGN_OR_RETURN(const ir::PadAttrs pad, ir::PadAttrs::read(attrs));
      const std::vector<int64_t> pads(pad.pads.begin(), pad.pads.end());
      const float value = pad.value;
      armnn::PadDescriptor desc;
      const size_t rank = d(x).size();
      for (size_t k = 0; k < rank; ++k) {
        desc.m_PadList.emplace_back(static_cast<unsigned>(pads[k]),
                                    static_cast<unsigned>(pads[k + rank]));
      }
      desc.m_PadValue = value;
      TESSERA_ASSIGN_OR_RETURN(armnn::IOutputSlot * in, slot(x));
      armnn::IConnectableLayer* layer = net_.network->AddPadLayer(desc);
      connect(in, layer);
      result = out(layer, dy);
      break;
    }
    case Op::ReduceMean: {
      TESSERA_ASSIGN_OR_RETURN(const ir::ReduceAttrs reduce, ir::ReduceAttrs::read(attrs));
      std::vector<int64_t> axes(reduce.axes.begin(), reduce.axes.end());
      const int64_t keep = reduce.keepdims;
      const int64_t rank = static_cast<int64_t>(d(x).size());
      armnn::MeanDescriptor desc;
      if (axes.empty()) {
        for (int64_t k = 0; k < rank; ++k) axes.push_back(k);
      }
      for (int64_t a : axes) desc.m_Axis.push_back(static_cast<unsigned>(a < 0 ? a + rank : a));
      std::sort(desc.m_Axis.begin(), desc.m_Axis.end());
      desc.m_KeepDims = keep != 0;
      TESSERA_ASSIGN_OR_RETURN(armnn::IOutputSlot * in, slot(x));
      armnn::IConnectableLayer* layer = net_.network->AddMeanLayer(desc);
      connect(in, layer);
      result = out(layer, dy);
      break;
    }
    case Op::GlobalAveragePool:
    case Op::MaxPool:
    case Op::AveragePool: {
      TESSERA_ASSIGN_OR_RETURN(result, pool(node));
      break;
    }
    case Op::BatchNormalization: {
      TESSERA_ASSIGN_OR_RETURN(const ir::BatchNormalizationAttrs bn,
                               ir::BatchNormalizationAttrs::read(attrs));
      const float eps = bn.epsilon;
      std::vector<float> params[4];
      for (int i = 0; i < 4; ++i) {
        TESSERA_ASSIGN_OR_RETURN(params[i], constant(input_of(node, i + 1)));
      }
      const Dims c = {d(x)[1]};
      armnn::BatchNormalizationDescriptor desc;
      desc.m_Eps = eps;
      desc.m_DataLayout = armnn::DataLayout::NCHW;
      armnn::ConstTensor gamma(info_of(c), params[0].data()), beta(info_of(c), params[1].data()),
          mean(info_of(c), params[2].data()), var(info_of(c), params[3].data());
      TESSERA_ASSIGN_OR_RETURN(armnn::IOutputSlot * in, slot(x));
      armnn::IConnectableLayer* layer =
          net_.network->AddBatchNormalizationLayer(desc, mean, var, beta, gamma);
      connect(in, layer);
      result = fused(node, out(layer, dy), dy);
      break;
    }
    case Op::LayerNormalization: {
      TESSERA_ASSIGN_OR_RETURN(result, layer_norm(node));
      break;
    }
    case Op::Resize: {
      TESSERA_ASSIGN_OR_RETURN(const ir::ResizeAttrs resize, ir::ResizeAttrs::read(attrs));
      const std::string_view mode = resize.mode, ctm = resize.coordinate_transformation_mode;
      armnn::ResizeDescriptor desc;
      desc.m_DataLayout = armnn::DataLayout::NCHW;
      desc.m_TargetHeight = static_cast<uint32_t>(dy[2]);
      desc.m_TargetWidth = static_cast<uint32_t>(dy[3]);
      desc.m_Method =
          mode == "linear" ? armnn::ResizeMethod::Bilinear : armnn::ResizeMethod::NearestNeighbor;
      desc.m_AlignCorners = ctm == "align_corners";
      desc.m_HalfPixelCenters = ctm == "half_pixel" || ctm == "pytorch_half_pixel";
      TESSERA_ASSIGN_OR_RETURN(armnn::IOutputSlot * in, slot(x));
      armnn::IConnectableLayer* layer = net_.network->AddResizeLayer(desc);
      connect(in, layer);
      result = out(layer, dy);
      break;
    }
    case Op::ConvTranspose:
    case Op::Pow:
    case Op::Erf:
    case Op::Gelu:
    case Op::ReduceSum:
    case Op::ReduceMax:
    case Op::Split:
    case Op::Slice:
    case Op::Gather:
    case Op::Cast:
    case Op::Reciprocal:
    case Op::Where:
    case Op::Equal:
    case Op::Less:
    case Op::Greater:
    case Op::Mish:  // check_node rejects these
      return Status::error(Error::NotSupported, "armnn: op %s is not converted",
                           fb::EnumNameOpType(node.op()));
  }
  if (node.op() != Op::Conv && node.op() != Op::Gemm && node.op() != Op::MatMul &&
      node.op() != Op::Add && node.op() != Op::Sub && node.op() != Op::Mul &&
      node.op() != Op::Div && node.op() != Op::Max && node.op() != Op::Min &&
      node.op() != Op::PRelu && node.op() != Op::Concat && node.op() != Op::MaxPool &&
      node.op() != Op::AveragePool && node.op() != Op::GlobalAveragePool &&
      node.op() != Op::BatchNormalization && node.op() != Op::LayerNormalization) {
    result = fused(node, result, dy);
  }
  slots_[static_cast<size_t>(y)] = result;
  return Status::ok();
}

Result<BuiltNetwork> Builder::build() {
  TESSERA_RETURN_IF_ERROR(resolve());
  for (size_t k = 0; k < view_.num_nodes(); ++k) {
    TESSERA_RETURN_IF_ERROR(check_node(graph_, view_.node(k), view_.dims()));
  }
  net_.network = armnn::INetwork::Create();
  const Span<const int32_t> inputs = view_.inputs();
  const Span<const int32_t> outputs = view_.outputs();
  for (uint32_t i = 0; i < inputs.size(); ++i) {
    const int v = inputs[i];
    armnn::IConnectableLayer* layer = net_.network->AddInputLayer(static_cast<int>(i));
    slots_[static_cast<size_t>(v)] = out(layer, d(v));
    net_.input_infos.push_back(info_of(d(v)));
  }
  for (size_t k = 0; k < view_.num_nodes(); ++k) TESSERA_RETURN_IF_ERROR(convert(view_.node(k)));
  for (uint32_t i = 0; i < outputs.size(); ++i) {
    const int v = outputs[i];
    TESSERA_ASSIGN_OR_RETURN(armnn::IOutputSlot * s, slot(v));
    armnn::IConnectableLayer* layer = net_.network->AddOutputLayer(static_cast<int>(i));
    s->Connect(layer->GetInputSlot(0));
    ++net_.layers;
    net_.output_infos.push_back(info_of(d(v)));
  }
  return std::move(net_);
}

}  // namespace

std::vector<Dims> stored_dims(const fb::Graph& graph) {
  std::vector<Dims> dims;
  if (graph.values() == nullptr) return dims;
  dims.resize(graph.values()->size());
  for (uint32_t i = 0; i < graph.values()->size(); ++i) {
    const fb::Value* v = graph.values()->Get(i);
    const uint32_t rank = v->dims() ? v->dims()->size() : 0;
    dims[i].rank = static_cast<int>(std::min<uint32_t>(rank, kMaxDims));
    for (int k = 0; k < dims[i].rank; ++k) dims[i][k] = v->dims()->Get(k)->value();
  }
  return dims;
}

Status check_node(const fb::Graph& graph, const fb::Node& node, Span<const Dims> dims) {
  return Checker(graph, node, dims).run();
}

Result<BuiltNetwork> build_network(const PayloadGraph& view) {
  try {
    return Builder(view).build();
  } catch (const armnn::Exception& e) {
    return Status::error(Error::DelegateInvalidCompatibility,
                         "armnn: building the network failed: %s", e.what());
  }
}

}  // namespace tessera::armnn_backend
