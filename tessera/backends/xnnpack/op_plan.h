// OpPlan: how one portable-IR node maps onto this XNNPACK version's subgraph API, parsed once
// from the node's attributes and shapes. The support check (ahead of time) and the subgraph
// builder (at init) share it, so they never disagree about what is supported.
#pragma once

#include <xnnpack.h>

#include <cstddef>
#include <cstdint>

#include "tessera/backends/xnnpack/layout.h"
#include "tessera/backends/xnnpack/node_reader.h"
#include "tessera/core/status.h"

namespace tessera::xnnpack {

enum class OpKind : uint8_t {
  Convolution,           // xnn_define_convolution_2d (incl. grouped)
  DepthwiseConvolution,  // xnn_define_depthwise_convolution_2d
  Deconvolution,         // xnn_define_deconvolution_2d (ConvTranspose)
  FullyConnected,        // Gemm, MatMul with constant weights
  Binary,                // add2, subtract, multiply2, divide, maximum2, minimum2
  Unary,                 // clamp, leaky_relu, sigmoid, hardswish, negate, abs, square_root
  HardSigmoid,           // multiply2 + add2 with output range [0, 1]
  Softmax,
  MaxPooling,
  AveragePooling,  // optionally after a static_constant_pad (count_include_pad)
  GlobalAveragePooling,
  ConstantPad,
  Reshape,  // Reshape, Flatten, Squeeze, Unsqueeze
  ResizeBilinear,
  PRelu,
  Copy,       // Identity
  Concat,     // no XNNPACK node in this version: a copy step between runtimes
  BatchNorm,  // inference BatchNormalization: multiply2 + add2 per channel
};

enum class BinaryOp : uint8_t { Add, Subtract, Multiply, Divide, Maximum, Minimum };
struct OpPlan;
/// How a unary op enters an XNNPACK subgraph: plan_unary (op_plan.cpp) picks the xnn_define_*
/// call, the subgraph builder makes it, so a new unary op is decided in op_plan.cpp alone.
struct UnaryDefine {
  const char* name = nullptr;  // the xnn_define_* function, for messages
  /// Defines the op from `input` to `output` (value ids); reads the plan's alpha and output range.
  xnn_status (*define)(xnn_subgraph_t subgraph, const OpPlan& plan, uint32_t input,
                       uint32_t output) = nullptr;
};

/// Where an op wants its data.
enum class LayoutRule : uint8_t {
  Fixed,   // inputs and output in `OpPlan::layout`
  Follow,  // the output takes the layout of the (first activation) input; others adapt
};

/// 2-D window parameters in XNNPACK's terms.
struct Window {
  uint32_t kernel[2] = {1, 1};  // height, width
  uint32_t stride[2] = {1, 1};
  uint32_t dilation[2] = {1, 1};
  uint32_t pad_top = 0, pad_right = 0, pad_bottom = 0, pad_left = 0;
};

struct OpPlan {
  OpKind kind = OpKind::Copy;
  LayoutRule rule = LayoutRule::Follow;
  Layout layout = Layout::Identity;      // for LayoutRule::Fixed
  float output_min = -__builtin_inff();  // fused activation as an output range
  float output_max = __builtin_inff();

  // Convolution, DepthwiseConvolution, Deconvolution, MaxPooling, AveragePooling.
  Window window;
  uint32_t groups = 1;
  size_t group_input_channels = 0;
  size_t group_output_channels = 0;
  uint32_t depth_multiplier = 1;
  uint32_t adjustment[2] = {0, 0};  // Deconvolution
  bool has_bias = false;

  // FullyConnected.
  bool transpose_weights = false;   // weights are [K, N] (MatMul, Gemm transB=0)
  float alpha = 1.0f, beta = 1.0f;  // Gemm scales (also LeakyRelu slope, HardSigmoid a and b)
  int bias_input = -1;              // input slot of the bias, or -1

  BinaryOp binary = BinaryOp::Add;
  UnaryDefine unary;

  // AveragePooling with count_include_pad: zero padding applied before the pool, as
  // [top, left] and [bottom, right] of the spatial dims.
  bool explicit_pad = false;
  uint32_t explicit_pad_begin[2] = {0, 0};
  uint32_t explicit_pad_end[2] = {0, 0};

  // ConstantPad, per logical dim.
  int64_t pad_begin[kMaxDims] = {};
  int64_t pad_end[kMaxDims] = {};
  float pad_value = 0.0f;

  // ResizeBilinear.
  uint32_t resize_flags = 0;

  // PRelu: the slope broadcasts along the physical last dim (`true`) or is one scalar.
  bool slope_per_channel = false;

  // Concat: the (normalised) logical axis.
  int axis = 0;

  // BatchNorm.
  float epsilon = 1e-5f;
};

/// Parses `node` into `plan`. NotSupported (with the reason: op, node name and the limit hit)
/// when this XNNPACK version cannot run it; InvalidProgram for malformed attributes.
Status plan_op(const NodeReader& node, OpPlan* plan);

}  // namespace tessera::xnnpack
