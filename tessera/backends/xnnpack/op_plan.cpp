#include "tessera/backends/xnnpack/op_plan.h"

#include <xnnpack.h>

#include <cmath>
#include <cstdarg>
#include <cstdio>

#include "tessera/ir/attributes.h"
#include "tessera/ir/op.h"
#include "tessera/ir/op_attrs.h"

namespace tessera::xnnpack {
namespace {

using Op = fb::OpType;

constexpr int64_t kMaxAttr = int64_t{1} << 31;

[[gnu::format(printf, 3, 4)]] Status fail(Error code, const NodeReader& n, const char* format,
                                          ...) {
  char detail[160];
  va_list args;
  va_start(args, format);
  std::vsnprintf(detail, sizeof detail, format, args);
  va_end(args);
  const std::string_view name = n.name();
  return Status::error(code, "xnnpack: %s node '%.*s': %s", ir::op_name(n.op()),
                       static_cast<int>(name.size()), name.data(), detail);
}

#define XNN_UNSUPPORTED(n, ...) fail(Error::NotSupported, n, __VA_ARGS__)
#define XNN_INVALID(n, ...) fail(Error::InvalidProgram, n, __VA_ARGS__)

// The node's typed attributes (defaults from tessera/ir/op_attrs.def); InvalidProgram naming the
// attribute when one has the wrong type.
template <typename A>
Status read_attrs(const NodeReader& n, A* out) {
  Result<A> r = n.fb_node() ? A::read(ir::AttrView(n.fb_node())) : A::read(*n.ir_node());
  if (!r.ok()) return r.status();
  *out = *r;
  return Status::ok();
}

// The window attributes of a Conv, ConvTranspose or pooling node.
Status read_window_attrs(const NodeReader& n, ir::WindowAttrs* w) {
  if (n.op() == Op::Conv) {
    ir::ConvAttrs a;
    TESSERA_RETURN_IF_ERROR(read_attrs(n, &a));
    *w = ir::window_of(a);
  } else if (n.op() == Op::ConvTranspose) {
    ir::ConvTransposeAttrs a;
    TESSERA_RETURN_IF_ERROR(read_attrs(n, &a));
    *w = ir::window_of(a);
  } else {
    ir::PoolAttrs a;
    TESSERA_RETURN_IF_ERROR(read_attrs(n, &a));
    *w = ir::window_of(a);
  }
  return Status::ok();
}

// Every present input and the single output are float32 tensors of rank 1..6.
Status check_tensors(const NodeReader& n, int min_inputs, int max_inputs) {
  if (n.num_inputs() < min_inputs || n.num_inputs() > max_inputs) {
    return XNN_UNSUPPORTED(n, "%d inputs (this op takes %d to %d here)", n.num_inputs(), min_inputs,
                           max_inputs);
  }
  if (n.num_outputs() != 1) return XNN_UNSUPPORTED(n, "%d outputs (only 1)", n.num_outputs());
  for (int i = 0; i < n.num_inputs() + 1; ++i) {
    const bool is_output = i == n.num_inputs();
    ValueFacts v = is_output ? n.output(0) : n.input(i);
    if (!v.present) {
      if (!is_output && i >= min_inputs) continue;  // absent optional input
      return XNN_INVALID(n, "%s %d is missing", is_output ? "output" : "input", is_output ? 0 : i);
    }
    if (!v.is_tensor || v.dtype != ScalarType::Float32) {
      return XNN_UNSUPPORTED(n, "%s %d is %s (only float32 tensors)",
                             is_output ? "output" : "input", is_output ? 0 : i,
                             v.is_tensor ? scalar_type_name(v.dtype) : "not a tensor");
    }
    // Rank-0 constants are fine as broadcast operands; everything else needs rank 1..6.
    const bool scalar_ok = !is_output && v.constant >= 0 && v.dims.rank == 0;
    if ((v.dims.rank < 1 && !scalar_ok) || v.dims.rank > kMaxXnnDims) {
      return XNN_UNSUPPORTED(n, "%s %d has rank %d (XNNPACK takes 1 to %d)",
                             is_output ? "output" : "input", is_output ? 0 : i, v.dims.rank,
                             kMaxXnnDims);
    }
  }
  return Status::ok();
}

bool is_static(const ValueFacts& v) {
  return !v.symbolic;
}

Status fused_activation(const NodeReader& n, OpPlan* plan) {
  switch (n.activation()) {
    case fb::Activation::None:
      return Status::ok();
    case fb::Activation::Relu:
      plan->output_min = 0.0f;
      return Status::ok();
    case fb::Activation::Clip: {
      const float lo = n.activation_min(), hi = n.activation_max();
      if (!(lo < hi)) {
        return XNN_UNSUPPORTED(n, "fused clip range [%g, %g] is empty (XNNPACK needs min < max)",
                               lo, hi);
      }
      plan->output_min = lo;
      plan->output_max = hi;
      return Status::ok();
    }
  }
  return XNN_INVALID(n, "unknown fused activation %d", static_cast<int>(n.activation()));
}

Status no_fused_activation(const NodeReader& n) {
  if (n.activation() != fb::Activation::None) {
    return XNN_UNSUPPORTED(n, "a fused activation on this op");
  }
  return Status::ok();
}

// check_tensors() for the ops that have no fused activation in XNNPACK.
Status check_unfused(const NodeReader& n, int min_inputs, int max_inputs) {
  TESSERA_RETURN_IF_ERROR(check_tensors(n, min_inputs, max_inputs));
  return no_fused_activation(n);
}

bool fits_u32(int64_t v) {
  return v >= 0 && v < kMaxAttr;
}

// Reads a list attribute of `count` entries, each >= lo, or fills `fallback` when absent.
// `name` is the attribute's, for messages.
Status read_list(const NodeReader& n, Span<const int64_t> v, size_t count, int64_t lo,
                 int64_t fallback, int64_t* out, const char* name) {
  if (v.empty()) {
    for (size_t i = 0; i < count; ++i) out[i] = fallback;
    return Status::ok();
  }
  if (v.size() != count) {
    return XNN_INVALID(n, "'%s' has %zu entries, expected %zu", name, v.size(), count);
  }
  for (size_t i = 0; i < count; ++i) {
    if (v[i] < lo || v[i] >= kMaxAttr) {
      return XNN_UNSUPPORTED(n, "'%s'[%zu] = %lld is out of range", name, i,
                             static_cast<long long>(v[i]));
    }
    out[i] = v[i];
  }
  return Status::ok();
}

struct Spatial2d {
  int64_t kernel[2] = {1, 1};
  int64_t stride[2] = {1, 1};
  int64_t dilation[2] = {1, 1};
  int64_t pad_begin[2] = {0, 0};
  int64_t pad_end[2] = {0, 0};
  int64_t extent(int i) const { return (kernel[i] - 1) * dilation[i] + 1; }
};

// strides, dilations, pads and auto_pad (NOTSET or VALID) of a 2-D window op.
Status read_spatial(const NodeReader& n, Spatial2d* s) {
  ir::WindowAttrs w;
  TESSERA_RETURN_IF_ERROR(read_window_attrs(n, &w));
  const std::string_view auto_pad = w.auto_pad;
  if (auto_pad != "NOTSET" && auto_pad != "VALID") {
    return XNN_UNSUPPORTED(n, "auto_pad '%.*s' (the compiler emits explicit pads)",
                           static_cast<int>(auto_pad.size()), auto_pad.data());
  }
  const Span<const int64_t> ks = w.kernel_shape;
  if (!ks.empty()) {
    if (ks.size() != 2)
      return XNN_UNSUPPORTED(n, "kernel_shape has %zu entries (2-D only)", ks.size());
    for (int i = 0; i < 2; ++i) {
      if (ks[i] != s->kernel[i]) {
        return XNN_INVALID(n, "kernel_shape[%d] = %lld but the weights have %lld", i,
                           static_cast<long long>(ks[i]), static_cast<long long>(s->kernel[i]));
      }
    }
  }
  TESSERA_RETURN_IF_ERROR(read_list(n, w.strides, 2, 1, 1, s->stride, "strides"));
  TESSERA_RETURN_IF_ERROR(read_list(n, w.dilations, 2, 1, 1, s->dilation, "dilations"));
  int64_t pads[4];
  TESSERA_RETURN_IF_ERROR(read_list(n, w.pads, 4, 0, 0, pads, "pads"));
  for (int i = 0; i < 2; ++i) {
    s->pad_begin[i] = pads[i];
    s->pad_end[i] = pads[2 + i];
  }
  return Status::ok();
}

void set_window(const Spatial2d& s, Window* w) {
  for (int i = 0; i < 2; ++i) {
    w->kernel[i] = static_cast<uint32_t>(s.kernel[i]);
    w->stride[i] = static_cast<uint32_t>(s.stride[i]);
    w->dilation[i] = static_cast<uint32_t>(s.dilation[i]);
  }
  w->pad_top = static_cast<uint32_t>(s.pad_begin[0]);
  w->pad_left = static_cast<uint32_t>(s.pad_begin[1]);
  w->pad_bottom = static_cast<uint32_t>(s.pad_end[0]);
  w->pad_right = static_cast<uint32_t>(s.pad_end[1]);
}

Status check_rank(const NodeReader& n, const ValueFacts& v, int rank, const char* what) {
  if (v.dims.rank != rank) {
    return XNN_UNSUPPORTED(n, "%s has rank %d (XNNPACK needs %d here)", what, v.dims.rank, rank);
  }
  return Status::ok();
}

Status check_constant(const NodeReader& n, const ValueFacts& v, const char* what) {
  if (v.constant < 0) return XNN_UNSUPPORTED(n, "%s is not a constant", what);
  return Status::ok();
}

// XNNPACK's ops read their activations from external or internal values; a constant operand in
// that place is for the compiler to fold.
Status check_not_constant(const NodeReader& n, const ValueFacts& v, const char* what) {
  if (v.constant >= 0) return XNN_UNSUPPORTED(n, "%s is a constant", what);
  return Status::ok();
}

// Input 0 and the output are 4-D (NCHW), for the ops XNNPACK runs as 2-D spatial ops in NHWC.
Status check_4d(const NodeReader& n, const char* input_what) {
  TESSERA_RETURN_IF_ERROR(check_rank(n, n.input(0), 4, input_what));
  return check_rank(n, n.output(0), 4, "output");
}

// Maps an axis attribute in [-rank, rank) to [0, rank).
Status normalize_axis(const NodeReader& n, int rank, int64_t* axis) {
  if (*axis < -rank || *axis >= rank) {
    return XNN_INVALID(n, "axis %lld out of range", static_cast<long long>(*axis));
  }
  if (*axis < 0) *axis += rank;
  return Status::ok();
}

// XNNPACK's softmax and per-channel PReLU work along the innermost physical dim: the logical
// innermost dim as is, or the channels of a 4-D tensor in NHWC. False for any other axis.
bool innermost_layout(int axis, int rank, Layout* layout) {
  if (axis == rank - 1) {
    *layout = Layout::Identity;
  } else if (rank == 4 && axis == 1) {
    *layout = Layout::ChannelsLast;
  } else {
    return false;
  }
  return true;
}

// A window op's output size along spatial dim `i` against the one computed from the input;
// only comparable when both are static (symbolic dims hold upper bounds).
Status check_spatial_out(const NodeReader& n, const ValueFacts& x, const ValueFacts& y, int i,
                         int64_t computed, const char* by) {
  if (is_static(x) && is_static(y) && computed != y.dims.d[2 + i]) {
    return XNN_INVALID(n, "output spatial dim %d is %lld, %s gives %lld", i,
                       static_cast<long long>(y.dims.d[2 + i]), by,
                       static_cast<long long>(computed));
  }
  return Status::ok();
}

// The last step of most planners: which XNNPACK op, and where it wants its data.
Status fixed_layout(OpPlan* p, OpKind kind, Layout layout) {
  p->kind = kind;
  p->rule = LayoutRule::Fixed;
  p->layout = layout;
  return Status::ok();
}

Status follow_layout(OpPlan* p, OpKind kind) {
  p->kind = kind;
  p->rule = LayoutRule::Follow;
  return Status::ok();
}

// ---- convolutions ------------------------------------------------------------------------------

// Conv and ConvTranspose take the same operands: a 4-D input and output, constant 4-D weights
// whose last two dims are the window, and an optional constant bias vector.
struct ConvOperands {
  ValueFacts x, w, b, y;
};

Status read_conv_operands(const NodeReader& n, ConvOperands* c) {
  TESSERA_RETURN_IF_ERROR(check_tensors(n, 2, 3));
  c->x = n.input(0);
  c->w = n.input(1);
  c->b = n.input(2);
  c->y = n.output(0);
  TESSERA_RETURN_IF_ERROR(check_4d(n, "input (2-D only)"));
  TESSERA_RETURN_IF_ERROR(check_rank(n, c->w, 4, "weight"));
  TESSERA_RETURN_IF_ERROR(check_constant(n, c->w, "the weight"));
  if (c->b.present) {
    TESSERA_RETURN_IF_ERROR(check_constant(n, c->b, "the bias"));
    TESSERA_RETURN_IF_ERROR(check_rank(n, c->b, 1, "bias"));
  }
  return Status::ok();
}

Status check_conv_channels(const NodeReader& n, const ConvOperands& c, int64_t cout) {
  if (c.y.dims.d[1] != cout || (c.b.present && c.b.dims.d[0] != cout)) {
    return XNN_INVALID(n, "output or bias channels do not match %lld",
                       static_cast<long long>(cout));
  }
  return Status::ok();
}

// The window size comes from the weights; the attributes give the rest.
Status read_conv_window(const NodeReader& n, const ConvOperands& c, Spatial2d* s) {
  s->kernel[0] = c.w.dims.d[2];
  s->kernel[1] = c.w.dims.d[3];
  if (!fits_u32(s->kernel[0]) || !fits_u32(s->kernel[1]) || s->kernel[0] < 1 || s->kernel[1] < 1) {
    return XNN_INVALID(n, "kernel size out of range");
  }
  return read_spatial(n, s);
}

// Fuses the activation and sets what both convolution kinds share in the plan.
Status finish_conv(const NodeReader& n, const ConvOperands& c, const Spatial2d& s, OpPlan* p) {
  TESSERA_RETURN_IF_ERROR(fused_activation(n, p));
  set_window(s, &p->window);
  p->rule = LayoutRule::Fixed;
  p->layout = Layout::ChannelsLast;
  p->has_bias = c.b.present;
  return Status::ok();
}

Status plan_conv(const NodeReader& n, OpPlan* p) {
  ConvOperands c;
  TESSERA_RETURN_IF_ERROR(read_conv_operands(n, &c));
  const ValueFacts &x = c.x, &w = c.w, &y = c.y;
  ir::ConvAttrs attrs;
  TESSERA_RETURN_IF_ERROR(read_attrs(n, &attrs));
  const int64_t group = attrs.group;
  const int64_t cin = x.dims.d[1], cout = w.dims.d[0];
  if (group < 1 || !fits_u32(group) || w.dims.d[1] * group != cin || cout % group != 0) {
    return XNN_INVALID(n, "group %lld does not match input channels %lld and weight [%lld, %lld]",
                       static_cast<long long>(group), static_cast<long long>(cin),
                       static_cast<long long>(cout), static_cast<long long>(w.dims.d[1]));
  }
  TESSERA_RETURN_IF_ERROR(check_conv_channels(n, c, cout));
  Spatial2d s;
  TESSERA_RETURN_IF_ERROR(read_conv_window(n, c, &s));
  for (int i = 0; i < 2; ++i) {
    const int64_t padded = x.dims.d[2 + i] + s.pad_begin[i] + s.pad_end[i];
    if (s.extent(i) > padded) return XNN_INVALID(n, "kernel larger than the padded input");
    const int64_t out = (padded - s.extent(i)) / s.stride[i] + 1;
    TESSERA_RETURN_IF_ERROR(check_spatial_out(n, x, y, i, out, "the convolution"));
  }
  TESSERA_RETURN_IF_ERROR(finish_conv(n, c, s, p));
  if (group > 1 && group == cin && w.dims.d[1] == 1) {
    p->kind = OpKind::DepthwiseConvolution;
    p->depth_multiplier = static_cast<uint32_t>(cout / cin);
    p->group_input_channels = 1;
    p->group_output_channels = static_cast<size_t>(p->depth_multiplier);
  } else {
    p->kind = OpKind::Convolution;
    p->group_input_channels = static_cast<size_t>(w.dims.d[1]);
    p->group_output_channels = static_cast<size_t>(cout / group);
  }
  p->groups = static_cast<uint32_t>(group);
  return Status::ok();
}

Status plan_conv_transpose(const NodeReader& n, OpPlan* p) {
  ConvOperands c;
  TESSERA_RETURN_IF_ERROR(read_conv_operands(n, &c));
  const ValueFacts &x = c.x, &w = c.w, &y = c.y;
  if (n.has_attr("output_shape")) return XNN_UNSUPPORTED(n, "the output_shape attribute");
  ir::ConvTransposeAttrs attrs;
  TESSERA_RETURN_IF_ERROR(read_attrs(n, &attrs));
  const int64_t group = attrs.group;
  const int64_t cin = x.dims.d[1];
  if (group < 1 || !fits_u32(group) || w.dims.d[0] != cin || cin % group != 0) {
    return XNN_INVALID(n, "group %lld does not match input channels %lld and weight dim %lld",
                       static_cast<long long>(group), static_cast<long long>(cin),
                       static_cast<long long>(w.dims.d[0]));
  }
  const int64_t cout = w.dims.d[1] * group;
  TESSERA_RETURN_IF_ERROR(check_conv_channels(n, c, cout));
  Spatial2d s;
  TESSERA_RETURN_IF_ERROR(read_conv_window(n, c, &s));
  int64_t adj[2];
  TESSERA_RETURN_IF_ERROR(read_list(n, attrs.output_padding, 2, 0, 0, adj, "output_padding"));
  for (int i = 0; i < 2; ++i) {
    if (adj[i] >= s.stride[i]) {
      return XNN_UNSUPPORTED(n, "output_padding %lld is not below the stride %lld",
                             static_cast<long long>(adj[i]), static_cast<long long>(s.stride[i]));
    }
    const int64_t out =
        (x.dims.d[2 + i] - 1) * s.stride[i] + s.extent(i) + adj[i] - s.pad_begin[i] - s.pad_end[i];
    if (out < 1) return XNN_INVALID(n, "empty output");
    TESSERA_RETURN_IF_ERROR(check_spatial_out(n, x, y, i, out, "the deconvolution"));
    p->adjustment[i] = static_cast<uint32_t>(adj[i]);
  }
  TESSERA_RETURN_IF_ERROR(finish_conv(n, c, s, p));
  p->kind = OpKind::Deconvolution;
  p->groups = static_cast<uint32_t>(group);
  p->group_input_channels = static_cast<size_t>(cin / group);
  p->group_output_channels = static_cast<size_t>(w.dims.d[1]);
  return Status::ok();
}

// ---- fully connected ---------------------------------------------------------------------------

Status plan_gemm(const NodeReader& n, OpPlan* p) {
  TESSERA_RETURN_IF_ERROR(check_tensors(n, 2, 3));
  const ValueFacts a = n.input(0), b = n.input(1), c = n.input(2), y = n.output(0);
  TESSERA_RETURN_IF_ERROR(check_rank(n, a, 2, "A"));
  TESSERA_RETURN_IF_ERROR(check_rank(n, b, 2, "B"));
  TESSERA_RETURN_IF_ERROR(check_rank(n, y, 2, "output"));
  TESSERA_RETURN_IF_ERROR(check_not_constant(n, a, "A"));
  TESSERA_RETURN_IF_ERROR(check_constant(n, b, "B (the weights)"));
  ir::GemmAttrs attrs;
  TESSERA_RETURN_IF_ERROR(read_attrs(n, &attrs));
  const int64_t trans_b = attrs.transB;
  if (attrs.transA != 0) return XNN_UNSUPPORTED(n, "transA = 1");
  const float alpha = attrs.alpha, beta = attrs.beta;
  if (!std::isfinite(alpha) || !std::isfinite(beta))
    return XNN_UNSUPPORTED(n, "non-finite alpha/beta");
  const int64_t k = a.dims.d[1];
  const int64_t kb = trans_b ? b.dims.d[1] : b.dims.d[0];
  const int64_t nn = trans_b ? b.dims.d[0] : b.dims.d[1];
  if (k != kb || y.dims.d[1] != nn) return XNN_INVALID(n, "inner or output dims do not match");
  if (c.present) {
    TESSERA_RETURN_IF_ERROR(check_constant(n, c, "C (the bias)"));
    const int64_t cn = c.dims.numel();
    const bool row = cn == nn && (c.dims.rank == 1 || (c.dims.rank == 2 && c.dims.d[0] == 1));
    if (!row && cn != 1) {
      return XNN_UNSUPPORTED(n, "C must broadcast as one row of %lld (or a scalar)",
                             static_cast<long long>(nn));
    }
    p->bias_input = 2;
  }
  TESSERA_RETURN_IF_ERROR(fused_activation(n, p));
  p->transpose_weights = trans_b == 0;
  p->alpha = alpha;
  p->beta = beta;
  p->has_bias = c.present;
  return fixed_layout(p, OpKind::FullyConnected, Layout::Identity);
}

Status plan_matmul(const NodeReader& n, OpPlan* p) {
  TESSERA_RETURN_IF_ERROR(check_tensors(n, 2, 2));
  const ValueFacts a = n.input(0), b = n.input(1), y = n.output(0);
  TESSERA_RETURN_IF_ERROR(check_not_constant(n, a, "A"));
  if (b.constant < 0) {
    return XNN_UNSUPPORTED(n, "B is an activation (this XNNPACK has no batch matrix multiply)");
  }
  TESSERA_RETURN_IF_ERROR(check_rank(n, b, 2, "B (constant weights must be 2-D)"));
  if (a.dims.d[a.dims.rank - 1] != b.dims.d[0] || y.dims.rank != a.dims.rank ||
      y.dims.d[y.dims.rank - 1] != b.dims.d[1]) {
    return XNN_INVALID(n, "inner or output dims do not match");
  }
  TESSERA_RETURN_IF_ERROR(fused_activation(n, p));
  p->transpose_weights = true;
  return fixed_layout(p, OpKind::FullyConnected, Layout::Identity);
}

// ---- elementwise -------------------------------------------------------------------------------

Status plan_binary(const NodeReader& n, OpPlan* p) {
  TESSERA_RETURN_IF_ERROR(check_tensors(n, 2, 2));
  const ValueFacts a = n.input(0), b = n.input(1), y = n.output(0);
  if (a.constant >= 0 && b.constant >= 0) return XNN_UNSUPPORTED(n, "both operands are constants");
  const int rank = a.dims.rank > b.dims.rank ? a.dims.rank : b.dims.rank;
  if (y.dims.rank != rank) return XNN_INVALID(n, "output rank %d, expected %d", y.dims.rank, rank);
  const Dims ea = expand_rank(a.dims, rank), eb = expand_rank(b.dims, rank);
  for (int d = 0; d < rank; ++d) {
    const int64_t x = ea.d[d], z = eb.d[d];
    if (x != z && x != 1 && z != 1 && !a.symbolic && !b.symbolic) {
      return XNN_INVALID(n, "operands do not broadcast along dim %d (%lld vs %lld)", d,
                         static_cast<long long>(x), static_cast<long long>(z));
    }
  }
  switch (n.op()) {
    case Op::Add:
      p->binary = BinaryOp::Add;
      break;
    case Op::Sub:
      p->binary = BinaryOp::Subtract;
      break;
    case Op::Mul:
      p->binary = BinaryOp::Multiply;
      break;
    case Op::Div:
      p->binary = BinaryOp::Divide;
      break;
    case Op::Max:
      p->binary = BinaryOp::Maximum;
      break;
    default:
      p->binary = BinaryOp::Minimum;
      break;
  }
  if (p->binary == BinaryOp::Maximum || p->binary == BinaryOp::Minimum) {
    TESSERA_RETURN_IF_ERROR(no_fused_activation(n));
  } else {
    TESSERA_RETURN_IF_ERROR(fused_activation(n, p));
  }
  return follow_layout(p, OpKind::Binary);
}

// The unary ops' xnn_define_* calls (UnaryDefine): the plan's output range is the clamp's and
// the fused activation's; alpha is LeakyRelu's and Elu's.
xnn_status define_clamp(xnn_subgraph_t sg, const OpPlan& p, uint32_t x, uint32_t y) {
  return xnn_define_clamp(sg, p.output_min, p.output_max, x, y, 0);
}
xnn_status define_leaky_relu(xnn_subgraph_t sg, const OpPlan& p, uint32_t x, uint32_t y) {
  return xnn_define_leaky_relu(sg, p.alpha, x, y, 0);
}
xnn_status define_elu(xnn_subgraph_t sg, const OpPlan& p, uint32_t x, uint32_t y) {
  return xnn_define_elu(sg, p.alpha, x, y, 0);
}
xnn_status define_sigmoid(xnn_subgraph_t sg, const OpPlan&, uint32_t x, uint32_t y) {
  return xnn_define_sigmoid(sg, x, y, 0);
}
xnn_status define_hardswish(xnn_subgraph_t sg, const OpPlan&, uint32_t x, uint32_t y) {
  return xnn_define_hardswish(sg, x, y, 0);
}
xnn_status define_negate(xnn_subgraph_t sg, const OpPlan&, uint32_t x, uint32_t y) {
  return xnn_define_negate(sg, x, y, 0);
}
xnn_status define_abs(xnn_subgraph_t sg, const OpPlan&, uint32_t x, uint32_t y) {
  return xnn_define_abs(sg, x, y, 0);
}
xnn_status define_square_root(xnn_subgraph_t sg, const OpPlan&, uint32_t x, uint32_t y) {
  return xnn_define_square_root(sg, x, y, 0);
}

Status plan_unary(const NodeReader& n, OpPlan* p) {
  TESSERA_RETURN_IF_ERROR(check_unfused(n, 1, 1));
  const ValueFacts x = n.input(0), y = n.output(0);
  TESSERA_RETURN_IF_ERROR(check_not_constant(n, x, "the input"));
  if (x.dims.rank != y.dims.rank) return XNN_INVALID(n, "output rank differs from input rank");
  p->kind = OpKind::Unary;
  p->rule = LayoutRule::Follow;
  switch (n.op()) {
    case Op::Relu:
      p->unary = {"xnn_define_clamp", define_clamp};
      p->output_min = 0.0f;
      break;
    case Op::Clip: {
      ir::ClipAttrs attrs;
      TESSERA_RETURN_IF_ERROR(read_attrs(n, &attrs));
      const float lo = attrs.min, hi = attrs.max;
      if (!(lo < hi)) {
        return XNN_UNSUPPORTED(n, "clip range [%g, %g] is empty (XNNPACK needs min < max)", lo, hi);
      }
      p->unary = {"xnn_define_clamp", define_clamp};
      p->output_min = lo;
      p->output_max = hi;
      break;
    }
    case Op::LeakyRelu: {
      ir::LeakyReluAttrs attrs;
      TESSERA_RETURN_IF_ERROR(read_attrs(n, &attrs));
      p->alpha = attrs.alpha;
    }
      if (!std::isfinite(p->alpha)) return XNN_UNSUPPORTED(n, "non-finite alpha");
      p->unary = {"xnn_define_leaky_relu", define_leaky_relu};
      break;
    case Op::HardSigmoid: {
      ir::HardSigmoidAttrs attrs;
      TESSERA_RETURN_IF_ERROR(read_attrs(n, &attrs));
      p->alpha = attrs.alpha;
      p->beta = attrs.beta;
    }
      if (!std::isfinite(p->alpha) || !std::isfinite(p->beta)) {
        return XNN_UNSUPPORTED(n, "non-finite alpha/beta");
      }
      p->kind = OpKind::HardSigmoid;
      p->output_min = 0.0f;
      p->output_max = 1.0f;
      break;
    case Op::Sigmoid:
      p->unary = {"xnn_define_sigmoid", define_sigmoid};
      break;
    case Op::HardSwish:
      p->unary = {"xnn_define_hardswish", define_hardswish};
      break;
    case Op::Neg:
      p->unary = {"xnn_define_negate", define_negate};
      break;
    case Op::Abs:
      p->unary = {"xnn_define_abs", define_abs};
      break;
    case Op::Sqrt:
      p->unary = {"xnn_define_square_root", define_square_root};
      break;
    case Op::Elu: {
      ir::EluAttrs attrs;
      TESSERA_RETURN_IF_ERROR(read_attrs(n, &attrs));
      p->alpha = attrs.alpha;
      if (!std::isfinite(p->alpha)) return XNN_UNSUPPORTED(n, "non-finite alpha");
      p->unary = {"xnn_define_elu", define_elu};
      break;
    }
    case Op::Identity:
      p->kind = OpKind::Copy;
      break;
    default:
      return XNN_UNSUPPORTED(n, "no XNNPACK operator");
  }
  return Status::ok();
}

Status plan_softmax(const NodeReader& n, OpPlan* p) {
  TESSERA_RETURN_IF_ERROR(check_unfused(n, 1, 1));
  const ValueFacts x = n.input(0);
  ir::SoftmaxAttrs attrs;
  TESSERA_RETURN_IF_ERROR(read_attrs(n, &attrs));
  int64_t axis = attrs.axis;
  const int rank = x.dims.rank;
  TESSERA_RETURN_IF_ERROR(normalize_axis(n, rank, &axis));
  Layout layout;
  if (!innermost_layout(static_cast<int>(axis), rank, &layout)) {
    return XNN_UNSUPPORTED(n, "softmax over axis %lld of rank %d (XNNPACK: innermost dim only)",
                           static_cast<long long>(axis), rank);
  }
  return fixed_layout(p, OpKind::Softmax, layout);
}

// ---- pooling -----------------------------------------------------------------------------------

Status plan_pool(const NodeReader& n, OpPlan* p) {
  const bool is_max = n.op() == Op::MaxPool;
  TESSERA_RETURN_IF_ERROR(check_tensors(n, 1, 1));
  TESSERA_RETURN_IF_ERROR(fused_activation(n, p));
  const ValueFacts x = n.input(0), y = n.output(0);
  TESSERA_RETURN_IF_ERROR(check_4d(n, "input (2-D pooling only)"));
  ir::PoolAttrs attrs;
  TESSERA_RETURN_IF_ERROR(read_attrs(n, &attrs));
  const Span<const int64_t> ks = attrs.kernel_shape;
  if (ks.size() != 2)
    return XNN_UNSUPPORTED(n, "kernel_shape has %zu entries (2-D only)", ks.size());
  Spatial2d s;
  for (int i = 0; i < 2; ++i) {
    if (ks[i] < 1 || ks[i] >= kMaxAttr) return XNN_INVALID(n, "kernel_shape out of range");
    s.kernel[i] = ks[i];
  }
  if (s.kernel[0] * s.kernel[1] == 1) {
    return XNN_UNSUPPORTED(n, "a 1x1 pooling window (XNNPACK rejects it)");
  }
  TESSERA_RETURN_IF_ERROR(read_spatial(n, &s));
  const int64_t ceil_mode = attrs.ceil_mode, include_pad = attrs.count_include_pad;
  if (!is_max && (s.dilation[0] != 1 || s.dilation[1] != 1)) {
    return XNN_UNSUPPORTED(n, "dilated average pooling");
  }
  int64_t overhang[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    const int64_t in = x.dims.d[2 + i];
    const int64_t padded = in + s.pad_begin[i] + s.pad_end[i];
    if (s.extent(i) > padded) return XNN_INVALID(n, "window larger than the padded input");
    const int64_t span = padded - s.extent(i);
    int64_t out = (ceil_mode ? (span + s.stride[i] - 1) / s.stride[i] : span / s.stride[i]) + 1;
    if (ceil_mode && (out - 1) * s.stride[i] >= in + s.pad_begin[i]) --out;
    TESSERA_RETURN_IF_ERROR(check_spatial_out(n, x, y, i, out, "pooling"));
    // Ceil mode: windows that run past the end padding see only what is inside; XNNPACK
    // gets that as extra end padding, which it excludes.
    const int64_t over = (out - 1) * s.stride[i] + s.extent(i) - padded;
    overhang[i] = over > 0 ? over : 0;
  }
  const bool any_pad = (s.pad_begin[0] | s.pad_begin[1] | s.pad_end[0] | s.pad_end[1]) != 0;
  if (!is_max && include_pad && any_pad) {
    // count_include_pad: zero-pad explicitly, then pool with only the ceil overhang.
    p->explicit_pad = true;
    for (int i = 0; i < 2; ++i) {
      p->explicit_pad_begin[i] = static_cast<uint32_t>(s.pad_begin[i]);
      p->explicit_pad_end[i] = static_cast<uint32_t>(s.pad_end[i]);
      s.pad_begin[i] = 0;
      s.pad_end[i] = 0;
    }
  }
  for (int i = 0; i < 2; ++i) s.pad_end[i] += overhang[i];
  set_window(s, &p->window);
  return fixed_layout(p, is_max ? OpKind::MaxPooling : OpKind::AveragePooling,
                      Layout::ChannelsLast);
}

Status plan_global_average_pool(const NodeReader& n, OpPlan* p) {
  TESSERA_RETURN_IF_ERROR(check_unfused(n, 1, 1));
  TESSERA_RETURN_IF_ERROR(check_4d(n, "input (2-D pooling only)"));
  return fixed_layout(p, OpKind::GlobalAveragePooling, Layout::ChannelsLast);
}

// ReduceMean over the two spatial dims of a 4-D tensor is a global average pool.
Status plan_reduce_mean(const NodeReader& n, OpPlan* p) {
  TESSERA_RETURN_IF_ERROR(check_unfused(n, 1, 1));
  const ValueFacts x = n.input(0), y = n.output(0);
  TESSERA_RETURN_IF_ERROR(check_rank(n, x, 4, "input (spatial means of 4-D tensors only)"));
  ir::ReduceAttrs attrs;
  TESSERA_RETURN_IF_ERROR(read_attrs(n, &attrs));
  const Span<const int64_t> axes = attrs.axes;
  const int64_t keepdims = attrs.keepdims;
  bool reduced[4] = {};
  for (int64_t a : axes) {
    TESSERA_RETURN_IF_ERROR(normalize_axis(n, 4, &a));
    reduced[a] = true;
  }
  if (axes.size() != 2 || !reduced[2] || !reduced[3]) {
    return XNN_UNSUPPORTED(n, "a mean over axes other than the two spatial dims");
  }
  const int want_rank = keepdims ? 4 : 2;
  if (y.dims.rank != want_rank || y.dims.d[0] != x.dims.d[0] || y.dims.d[1] != x.dims.d[1]) {
    return XNN_INVALID(n, "output shape does not match a spatial mean");
  }
  return fixed_layout(p, OpKind::GlobalAveragePooling, Layout::ChannelsLast);
}

// ---- data movement -----------------------------------------------------------------------------

Status plan_pad(const NodeReader& n, OpPlan* p) {
  TESSERA_RETURN_IF_ERROR(check_unfused(n, 1, 1));
  const ValueFacts x = n.input(0);
  TESSERA_RETURN_IF_ERROR(check_not_constant(n, x, "the input"));
  ir::PadAttrs attrs;
  TESSERA_RETURN_IF_ERROR(read_attrs(n, &attrs));
  const std::string_view mode = attrs.mode;
  if (mode != "constant") {
    return XNN_UNSUPPORTED(n, "mode '%.*s' (constant only)", static_cast<int>(mode.size()),
                           mode.data());
  }
  const Span<const int64_t> pads = attrs.pads, axes = attrs.axes;
  p->pad_value = attrs.value;
  const int rank = x.dims.rank;
  const size_t n_axes = axes.empty() ? static_cast<size_t>(rank) : axes.size();
  if (n_axes > static_cast<size_t>(rank) || (!pads.empty() && pads.size() != 2 * n_axes)) {
    return XNN_INVALID(n, "pads/axes do not match rank %d", rank);
  }
  bool seen[kMaxDims] = {};
  for (size_t i = 0; i < n_axes && !pads.empty(); ++i) {
    int64_t d = axes.empty() ? static_cast<int64_t>(i) : axes[i];
    TESSERA_RETURN_IF_ERROR(normalize_axis(n, rank, &d));
    if (seen[d]) return XNN_INVALID(n, "axis %lld repeated", static_cast<long long>(d));
    seen[d] = true;
    const int64_t b = pads[i], e = pads[i + n_axes];
    if (b < 0 || e < 0) return XNN_UNSUPPORTED(n, "negative pads (cropping)");
    if (b >= kMaxAttr || e >= kMaxAttr) return XNN_INVALID(n, "pads out of range");
    p->pad_begin[d] = b;
    p->pad_end[d] = e;
  }
  return follow_layout(p, OpKind::ConstantPad);
}

Status plan_reshape(const NodeReader& n, OpPlan* p) {
  TESSERA_RETURN_IF_ERROR(check_unfused(n, 1, 1));  // the shape comes from the output value
  const ValueFacts x = n.input(0), y = n.output(0);
  TESSERA_RETURN_IF_ERROR(check_not_constant(n, x, "the input"));
  if (!x.symbolic && !y.symbolic && x.dims.numel() != y.dims.numel()) {
    return XNN_INVALID(n, "element counts differ");
  }
  return fixed_layout(p, OpKind::Reshape, Layout::Identity);
}

Status plan_concat(const NodeReader& n, OpPlan* p) {
  TESSERA_RETURN_IF_ERROR(check_unfused(n, 1, 64));
  const ValueFacts y = n.output(0);
  ir::ConcatAttrs attrs;
  TESSERA_RETURN_IF_ERROR(read_attrs(n, &attrs));
  int64_t axis = attrs.axis;
  const int rank = y.dims.rank;
  TESSERA_RETURN_IF_ERROR(normalize_axis(n, rank, &axis));
  int64_t total = 0;
  for (int i = 0; i < n.num_inputs(); ++i) {
    const ValueFacts x = n.input(i);
    if (!x.present) return XNN_INVALID(n, "input %d is missing", i);
    TESSERA_RETURN_IF_ERROR(check_not_constant(n, x, "an input"));
    if (x.dims.rank != rank)
      return XNN_INVALID(n, "input %d has rank %d, not %d", i, x.dims.rank, rank);
    for (int d = 0; d < rank; ++d) {
      if (d != axis && x.dims.d[d] != y.dims.d[d] && !x.symbolic && !y.symbolic) {
        return XNN_INVALID(n, "input %d differs from the output along dim %d", i, d);
      }
    }
    total += x.dims.d[axis];
  }
  if (total != y.dims.d[axis] && !y.symbolic)
    return XNN_INVALID(n, "inputs do not add up to the output");
  p->axis = static_cast<int>(axis);
  return follow_layout(p, OpKind::Concat);
}

// Inference-mode BatchNormalization (the compiler folds it into a preceding Conv when it can;
// this handles the rest, e.g. after a Concat): y = x * scale + shift per channel.
Status plan_batch_norm(const NodeReader& n, OpPlan* p) {
  TESSERA_RETURN_IF_ERROR(check_unfused(n, 5, 5));
  const ValueFacts x = n.input(0);
  TESSERA_RETURN_IF_ERROR(check_not_constant(n, x, "the input"));
  if (x.dims.rank < 2) return XNN_UNSUPPORTED(n, "input of rank %d", x.dims.rank);
  for (int i = 1; i < 5; ++i) {
    const ValueFacts c = n.input(i);
    TESSERA_RETURN_IF_ERROR(check_constant(n, c, "a scale, bias, mean or variance input"));
    if (c.dims.rank != 1 || c.dims.d[0] != x.dims.d[1]) {
      return XNN_INVALID(n, "input %d is not a vector of %lld channels", i,
                         static_cast<long long>(x.dims.d[1]));
    }
  }
  ir::BatchNormalizationAttrs attrs;
  TESSERA_RETURN_IF_ERROR(read_attrs(n, &attrs));
  if (attrs.training_mode != 0) return XNN_UNSUPPORTED(n, "training mode");
  p->epsilon = attrs.epsilon;
  if (!(p->epsilon >= 0.0f) || !std::isfinite(p->epsilon)) return XNN_INVALID(n, "bad epsilon");
  if (n.num_outputs() != 1) return XNN_UNSUPPORTED(n, "training outputs");
  return follow_layout(p, OpKind::BatchNorm);
}

Status plan_resize(const NodeReader& n, OpPlan* p) {
  TESSERA_RETURN_IF_ERROR(check_unfused(n, 1, 1));
  const ValueFacts x = n.input(0), y = n.output(0);
  TESSERA_RETURN_IF_ERROR(check_4d(n, "input"));
  if (x.dims.d[0] != y.dims.d[0] || x.dims.d[1] != y.dims.d[1]) {
    return XNN_UNSUPPORTED(n, "resizing the batch or channel dims");
  }
  ir::ResizeAttrs attrs;
  TESSERA_RETURN_IF_ERROR(read_attrs(n, &attrs));
  const std::string_view mode = attrs.mode, ctm = attrs.coordinate_transformation_mode;
  if (mode != "linear") {
    return XNN_UNSUPPORTED(n, "mode '%.*s' (this XNNPACK has bilinear resize only)",
                           static_cast<int>(mode.size()), mode.data());
  }
  if (attrs.antialias != 0) return XNN_UNSUPPORTED(n, "antialias");
  const Span<const int64_t> axes = attrs.axes;
  if (!axes.empty() &&
      !(axes.size() == 2 && (axes[0] == 2 || axes[0] == -2) && (axes[1] == 3 || axes[1] == -1))) {
    return XNN_UNSUPPORTED(n, "axes other than the two spatial dims");
  }
  const Span<const float> scales = attrs.scales;
  if (!scales.empty()) {
    const size_t first = scales.size() == 4 ? 2 : 0;
    if (scales.size() != 4 && scales.size() != 2)
      return XNN_INVALID(n, "scales has %zu entries", scales.size());
    if (first == 2 && (scales[0] != 1.0f || scales[1] != 1.0f)) {
      return XNN_UNSUPPORTED(n, "scaling the batch or channel dims");
    }
    for (int i = 0; i < 2; ++i) {
      // XNNPACK maps coordinates by the size ratio; a scale that is not that ratio differs.
      const double want = static_cast<double>(x.dims.d[2 + i]) * scales[first + i];
      if (!x.symbolic && !y.symbolic &&
          std::fabs(want - static_cast<double>(y.dims.d[2 + i])) > 1e-4) {
        return XNN_UNSUPPORTED(n, "scale %g is not the output/input size ratio", scales[first + i]);
      }
    }
  }
  if (ctm == "half_pixel") {
    p->resize_flags = 0;
  } else if (ctm == "pytorch_half_pixel") {
    if (y.dims.d[2] == 1 || y.dims.d[3] == 1) {
      return XNN_UNSUPPORTED(n, "pytorch_half_pixel with an output size of 1");
    }
    p->resize_flags = 0;
  } else if (ctm == "align_corners") {
    p->resize_flags = XNN_FLAG_ALIGN_CORNERS;
  } else if (ctm == "asymmetric") {
    p->resize_flags = XNN_FLAG_TENSORFLOW_LEGACY_MODE;
  } else {
    return XNN_UNSUPPORTED(n, "coordinate_transformation_mode '%.*s'", static_cast<int>(ctm.size()),
                           ctm.data());
  }
  return fixed_layout(p, OpKind::ResizeBilinear, Layout::ChannelsLast);
}

Status plan_prelu(const NodeReader& n, OpPlan* p) {
  TESSERA_RETURN_IF_ERROR(check_unfused(n, 2, 2));
  const ValueFacts x = n.input(0), slope = n.input(1);
  TESSERA_RETURN_IF_ERROR(check_not_constant(n, x, "the input"));
  TESSERA_RETURN_IF_ERROR(check_constant(n, slope, "the slope"));
  const int rank = x.dims.rank;
  if (slope.dims.rank > rank) return XNN_INVALID(n, "slope rank exceeds the input rank");
  if (slope.dims.numel() == 1) {
    p->slope_per_channel = false;
    return follow_layout(p, OpKind::PRelu);
  }
  const Dims e = expand_rank(slope.dims, rank);
  int axis = -1;
  for (int d = 0; d < rank; ++d) {
    if (e.d[d] == 1) continue;
    if (axis >= 0) return XNN_UNSUPPORTED(n, "a slope that varies along more than one dim");
    axis = d;
  }
  if (e.d[axis] != x.dims.d[axis]) return XNN_INVALID(n, "slope does not match the input");
  Layout layout;
  if (!innermost_layout(axis, rank, &layout)) {
    return XNN_UNSUPPORTED(n, "a slope along dim %d of rank %d (channels or innermost only)", axis,
                           rank);
  }
  p->slope_per_channel = true;
  return fixed_layout(p, OpKind::PRelu, layout);
}

}  // namespace

Status plan_op(const NodeReader& node, OpPlan* plan) {
  *plan = OpPlan{};
  switch (node.op()) {
    case Op::Conv:
      return plan_conv(node, plan);
    case Op::ConvTranspose:
      return plan_conv_transpose(node, plan);
    case Op::Gemm:
      return plan_gemm(node, plan);
    case Op::MatMul:
      return plan_matmul(node, plan);
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Div:
    case Op::Max:
    case Op::Min:
      return plan_binary(node, plan);
    case Op::Relu:
    case Op::Clip:
    case Op::LeakyRelu:
    case Op::HardSigmoid:
    case Op::Sigmoid:
    case Op::HardSwish:
    case Op::Neg:
    case Op::Abs:
    case Op::Sqrt:
    case Op::Elu:
    case Op::Identity:
      return plan_unary(node, plan);
    case Op::Softmax:
      return plan_softmax(node, plan);
    case Op::MaxPool:
    case Op::AveragePool:
      return plan_pool(node, plan);
    case Op::GlobalAveragePool:
      return plan_global_average_pool(node, plan);
    case Op::ReduceMean:
      return plan_reduce_mean(node, plan);
    case Op::Pad:
      return plan_pad(node, plan);
    case Op::Reshape:
    case Op::Flatten:
    case Op::Squeeze:
    case Op::Unsqueeze:
      return plan_reshape(node, plan);
    case Op::Resize:
      return plan_resize(node, plan);
    case Op::PRelu:
      return plan_prelu(node, plan);
    case Op::Concat:
      return plan_concat(node, plan);
    case Op::BatchNormalization:
      return plan_batch_norm(node, plan);
    case Op::Pow:
    case Op::Tanh:
    case Op::Erf:
    case Op::Gelu:
    case Op::Exp:
    case Op::LayerNormalization:
    case Op::ReduceSum:
    case Op::Transpose:
    case Op::Split:
    case Op::Slice:
    case Op::Gather:
    case Op::Cast:
    case Op::Reciprocal:
    case Op::Where:
    case Op::Equal:
    case Op::Less:
    case Op::Greater:
    case Op::ReduceMax:
    case Op::Mish:
      break;
    case Op::ChannelShuffle:
      // xnn_create_channel_shuffle_nc_x32 is an operator-API op only; a subgraph cannot hold it.
      return XNN_UNSUPPORTED(node,
                             "no channel shuffle (or transpose) node in this XNNPACK "
                             "version's subgraph API");
  }
  return XNN_UNSUPPORTED(node, "no operator in this XNNPACK version");
}

}  // namespace tessera::xnnpack
