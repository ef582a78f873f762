#include "tessera/backends/opencl/codegen.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>

#include "tessera/core/string_format.h"
#include "tessera/ir/attributes.h"
#include "tessera/ir/op_attrs.h"

namespace tessera::opencl {
namespace {

using Op = fb::OpType;

std::string float_literal(float f) {
  if (std::isinf(f)) return f > 0 ? "INFINITY" : "(-INFINITY)";
  return string_format("%.9ef", static_cast<double>(f));
}

// A 2-D (or 1-D, as H = KH = 1) convolution with group 1, as the GEMM
// Y[n] (M x P) = W (M x KC) * col(X[n]) (KC x P), P = OH * OW, KC = C * KH * KW.
struct ConvGeometry {
  int64_t n, c, h, w, m, kh, kw, oh, ow;
  int64_t sh, sw, dh, dw, pt, pl;
  bool bias;
};

// Register tile of the generated GEMM: each work item computes kTileRows rows (output channels)
// by kTileCols columns (output pixels, two float16 vectors). 8 x 32 keeps 16 float16
// accumulators and two B vectors in registers (AVX-512's 32 zmm registers on a CPU device).
constexpr int64_t kTileRows = 8;
constexpr int64_t kTileCols = 32;

// Builds one KernelPlan; holds the node for error messages.
class Planner {
 public:
  Planner(const fb::Graph& graph, int index, Span<const Dims> shapes, NodePlan* plan,
          const ResidualFusion* fusion, GemmImpl gemm)
      : gemm_impl_(gemm),
        graph_(graph),
        node_(*graph.nodes()->Get(static_cast<uint32_t>(index))),
        attrs_(&node_),
        shapes_(shapes),
        plan_(plan),
        fusion_(fusion),
        act_(fusion ? fusion->activation : node_.activation()),
        act_min_(fusion ? fusion->activation_min : node_.activation_min()),
        act_max_(fusion ? fusion->activation_max : node_.activation_max()) {
    k().name = std::string(1, 'k') + std::to_string(index);
    k().label = std::string(fb::EnumNameOpType(node_.op())) + " " + std::string(attrs_.node_name());
  }

  Status run();

 private:
  KernelPlan& k() { return plan_->kernel; }
  const char* op_name() const { return fb::EnumNameOpType(node_.op()); }

  Status fail(Error code, const char* what) const {
    return Status::error(code, "opencl: %s node '%.*s': %s", op_name(),
                         static_cast<int>(attrs_.node_name().size()), attrs_.node_name().data(),
                         what);
  }
  Status unsupported(const std::string& what) const {
    return fail(Error::NotSupported, what.c_str());
  }

  int num_inputs() const { return node_.inputs() ? static_cast<int>(node_.inputs()->size()) : 0; }
  int input_value(int i) const {
    return i < num_inputs() ? node_.inputs()->Get(static_cast<uint32_t>(i)) : -1;
  }
  const Dims& shape(int value) const { return shapes_[static_cast<size_t>(value)]; }
  const Dims& in_shape(int i) const { return shape(input_value(i)); }
  const Dims& out_shape() const { return shape(plan_->kernel.output); }

  // Binds input slot `i` as the next in<k>.
  void bind_input(int i) { k().inputs.push_back(input_value(i)); }
  std::string param(const std::string& name, int64_t value) {
    k().params.push_back({name, value});
    return "P_" + name;
  }
  void line(const std::string& s) {
    k().body += "  ";
    k().body += s;
    k().body += "\n";
  }
  // "int i0 = ...; int i1 = ..." from `t` over dims named <prefix><k> (innermost last).
  void decompose(const char* var, const Dims& s, const char* prefix, const char* index) {
    line(string_format("int t_ = %s;", var));
    for (int d = s.rank - 1; d >= 0; --d) {
      const std::string p = param(string_format("%s%d", prefix, d), s.d[d]);
      if (d == 0) {
        line(string_format("const int %s%d = t_;", index, d));
      } else {
        line(string_format("const int %s%d = t_ %% %s; t_ /= %s;", index, d, p.c_str(), p.c_str()));
      }
    }
  }
  // The fused activation applied to `var` (a float or a floatN).
  // With a residual fusion, the Add's activation replaces the Conv's (which is None).
  std::string activation(const std::string& var = "v") const {
    switch (act_) {
      case fb::Activation::Relu:
        return var + " = fmax(" + var + ", 0.0f);";
      case fb::Activation::Clip:
        return var + " = fmin(fmax(" + var + ", " + float_literal(act_min_) + "), " +
               float_literal(act_max_) + ");";
      default:
        return "";
    }
  }
  void store() { store_at("gid"); }
  void store_at(const char* index) {
    const std::string act = activation();
    if (!act.empty()) line(act);
    line(std::string("out0[") + index + "] = v;");
  }
  // An elementwise kernel without broadcast: work item `gid` takes elements [base_, base_ + 8)
  // of the output as one float8 (`load8` declares the operands at base_, `load1` at i; `expr`,
  // of them, is valid for float8 as for float), and the tensor's tail one by one.
  void vectorised(const std::string& load8, const std::string& load1, const std::string& expr) {
    const int64_t total = out_shape().numel();
    k().work_items = (total + 7) / 8;
    const std::string T = param("T", total);
    const std::string act = activation();
    line("const int base_ = gid * 8;");
    line("if (base_ + 8 <= " + T + ") {");
    line("  " + load8);
    line("  float8 v = " + expr + ";");
    if (!act.empty()) line("  " + act);
    line("  vstore8(v, 0, out0 + base_);");
    line("} else {");
    line("  for (int i = base_; i < " + T + "; ++i) {");
    line("    " + load1);
    line("    float v = " + expr + ";");
    store_at("i");
    line("  }");
    line("}");
  }
  // A library GEMM needs no epilogue: its call becomes the node's kernel.
  void library_call_is_the_kernel() {
    k() = std::move(plan_->before.back());
    plan_->before.pop_back();
  }

  Status check_values();
  Status unary();
  Status binary();
  Status conv();
  Status conv_gemm(const struct ConvGeometry& g);
  Status conv_epilogue(int64_t m, int64_t p, bool bias);
  Status gemm();
  Status matmul();
  Status pool();
  Status global_average_pool();
  Status softmax();
  Status layer_norm();
  Status batch_norm();
  Status transpose();
  Status channel_shuffle();
  Status concat();
  Status reshape_like();
  Status spatial_dims(const Dims& x, Span<const int64_t> kernel, int64_t* h, int64_t* w,
                      int64_t* kh, int64_t* kw);

  // The library GEMM `call` (its inputs and output already set) runs before the node's main
  // kernel, which the caller then writes as the epilogue.
  void run_library_first(KernelPlan call) {
    call.library = true;
    call.params.clear();
    call.body.clear();
    plan_->before.push_back(std::move(call));
  }

  GemmImpl gemm_impl_;
  const fb::Graph& graph_;
  const fb::Node& node_;
  ir::AttrView attrs_;
  Span<const Dims> shapes_;
  NodePlan* plan_;
  const ResidualFusion* fusion_;
  fb::Activation act_;
  float act_min_, act_max_;
};

Status Planner::check_values() {
  const auto* values = graph_.values();
  const int nvalues = values ? static_cast<int>(values->size()) : 0;
  auto check = [&](int v, bool optional) -> Status {
    if (v < 0) return optional ? Status::ok() : fail(Error::InvalidProgram, "missing input");
    if (v >= nvalues) return fail(Error::InvalidProgram, "value index out of range");
    const fb::Value* value = values->Get(static_cast<uint32_t>(v));
    if (value->kind() != fb::ValueKind::Tensor) return unsupported("non-tensor value");
    if (value->dtype() != fb::ScalarType::Float32) {
      return unsupported(string_format("dtype %s (only float32)", fb::EnumNameScalarType(value->dtype())));
    }
    if (shape(v).rank > kMaxDims) return unsupported("rank above 8");
    if (shape(v).numel() >= (int64_t{1} << 31)) return unsupported("more than 2^31 elements");
    return Status::ok();
  };
  if (!node_.outputs() || node_.outputs()->size() == 0) {
    return fail(Error::InvalidProgram, "no output");
  }
  for (uint32_t i = 0; i < node_.outputs()->size(); ++i) {
    const int v = node_.outputs()->Get(i);
    if (i > 0) {
      if (v >= 0) return unsupported("optional outputs");
      continue;
    }
    TESSERA_RETURN_IF_ERROR(check(v, false));
  }
  k().output = node_.outputs()->Get(0);
  for (int i = 0; i < num_inputs(); ++i) TESSERA_RETURN_IF_ERROR(check(input_value(i), i > 0));
  if (num_inputs() == 0 && node_.op() != Op::Concat) return fail(Error::InvalidProgram, "no input");
  if (act_ == fb::Activation::Clip &&
      (std::isnan(act_min_) || std::isnan(act_max_) || act_min_ > act_max_)) {
    return fail(Error::InvalidProgram, "bad fused Clip bounds");
  }
  if (fusion_ != nullptr) {
    if (node_.op() != Op::Conv || node_.activation() != fb::Activation::None) {
      return fail(Error::InvalidProgram, "a residual fuses only into a Conv without activation");
    }
    TESSERA_RETURN_IF_ERROR(check(fusion_->residual, false));
    if (!(shape(fusion_->residual) == out_shape())) {
      return fail(Error::ShapeMismatch, "the fused residual's shape differs from the output's");
    }
  }
  return Status::ok();
}

Status Planner::run() {
  TESSERA_RETURN_IF_ERROR(check_values());
  k().work_items = out_shape().numel();
  switch (node_.op()) {
    case Op::Relu: case Op::Clip: case Op::Sigmoid: case Op::Tanh: case Op::HardSigmoid:
    case Op::HardSwish: case Op::LeakyRelu: case Op::Gelu: case Op::Erf: case Op::Sqrt:
    case Op::Exp:
    case Op::Neg:
    case Op::Abs:
    case Op::Reciprocal:
    case Op::Mish:
    case Op::Elu:
      TESSERA_RETURN_IF_ERROR(unary());
      break;
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Pow:
      TESSERA_RETURN_IF_ERROR(binary());
      break;
    case Op::Conv:
      TESSERA_RETURN_IF_ERROR(conv());
      break;
    case Op::Gemm:
      TESSERA_RETURN_IF_ERROR(gemm());
      break;
    case Op::MatMul:
      TESSERA_RETURN_IF_ERROR(matmul());
      break;
    case Op::MaxPool: case Op::AveragePool:
      TESSERA_RETURN_IF_ERROR(pool());
      break;
    case Op::GlobalAveragePool:
      TESSERA_RETURN_IF_ERROR(global_average_pool());
      break;
    case Op::Softmax:
      TESSERA_RETURN_IF_ERROR(softmax());
      break;
    case Op::LayerNormalization:
      TESSERA_RETURN_IF_ERROR(layer_norm());
      break;
    case Op::BatchNormalization:
      TESSERA_RETURN_IF_ERROR(batch_norm());
      break;
    case Op::Transpose:
      TESSERA_RETURN_IF_ERROR(transpose());
      break;
    case Op::ChannelShuffle:
      TESSERA_RETURN_IF_ERROR(channel_shuffle());
      break;
    case Op::Concat:
      TESSERA_RETURN_IF_ERROR(concat());
      break;
    case Op::Identity: case Op::Reshape: case Op::Flatten: case Op::Squeeze: case Op::Unsqueeze:
      TESSERA_RETURN_IF_ERROR(reshape_like());
      break;
    case Op::ConvTranspose:
    case Op::PRelu:
    case Op::ReduceMean:
    case Op::ReduceSum:
    case Op::Split:
    case Op::Slice:
    case Op::Gather:
    case Op::Pad:
    case Op::Resize:
    case Op::Cast:
    case Op::Where:
    case Op::Equal:
    case Op::Less:
    case Op::Greater:
    case Op::ReduceMax:
    case Op::Min:
    case Op::Max:
      return unsupported("op not implemented by the opencl backend");
  }
  param("total", k().work_items);
  return Status::ok();
}

Status Planner::unary() {
  if (num_inputs() != 1) return fail(Error::InvalidProgram, "takes one input");
  if (!(in_shape(0) == out_shape())) return fail(Error::ShapeMismatch, "output shape differs from input");
  std::string expr;
  switch (node_.op()) {
    case Op::Relu: expr = "fmax(x, 0.0f)"; break;
    case Op::Sigmoid: expr = "1.0f / (1.0f + exp(-x))"; break;
    case Op::Tanh: expr = "tanh(x)"; break;
    case Op::Erf: expr = "erf(x)"; break;
    case Op::Sqrt: expr = "sqrt(x)"; break;
    case Op::Exp: expr = "exp(x)"; break;
    case Op::Neg: expr = "-x"; break;
    case Op::Abs: expr = "fabs(x)"; break;
    case Op::Reciprocal: expr = "1.0f / x"; break;
    case Op::HardSwish: expr = "x * fmin(fmax(x / 6.0f + 0.5f, 0.0f), 1.0f)"; break;
    case Op::Mish:
      expr = "x * tanh(log1p(exp(x)))";
      break;
    case Op::Clip: {
      TESSERA_ASSIGN_OR_RETURN(const ir::ClipAttrs a, ir::ClipAttrs::read(attrs_));
      expr = "fmin(fmax(x, " + float_literal(a.min) + "), " + float_literal(a.max) + ")";
      break;
    }
    case Op::HardSigmoid: {
      TESSERA_ASSIGN_OR_RETURN(const ir::HardSigmoidAttrs a, ir::HardSigmoidAttrs::read(attrs_));
      expr = "fmin(fmax(" + float_literal(a.alpha) + " * x + " + float_literal(a.beta) +
             ", 0.0f), 1.0f)";
      break;
    }
    case Op::LeakyRelu: {
      TESSERA_ASSIGN_OR_RETURN(const ir::LeakyReluAttrs a, ir::LeakyReluAttrs::read(attrs_));
      expr = "x >= 0.0f ? x : " + float_literal(a.alpha) + " * x";
      break;
    }
    case Op::Elu: {
      TESSERA_ASSIGN_OR_RETURN(const ir::EluAttrs a, ir::EluAttrs::read(attrs_));
      expr = "x >= 0.0f ? x : " + float_literal(a.alpha) + " * expm1(x)";
      break;
    }
    case Op::Gelu: {
      TESSERA_ASSIGN_OR_RETURN(const ir::GeluAttrs a, ir::GeluAttrs::read(attrs_));
      const std::string_view approx = a.approximate;
      if (approx == "none") {
        expr = "0.5f * x * (1.0f + erf(x * 0.70710678118654752f))";
      } else if (approx == "tanh") {
        expr = "0.5f * x * (1.0f + tanh(0.79788456080286536f * (x + 0.044715f * x * x * x)))";
      } else {
        return fail(Error::InvalidProgram, "approximate must be none or tanh");
      }
      break;
    }
    default:
      return unsupported("unary op");
  }
  // Eight elements per work item, as one float8 (the expressions are valid for float8 as for
  // float), and the tail of the tensor one by one.
  bind_input(0);
  vectorised("const float8 x = vload8(0, in0 + base_);", "const float x = in0[i];", expr);
  return Status::ok();
}

Status Planner::binary() {
  if (num_inputs() != 2) return fail(Error::InvalidProgram, "takes two inputs");
  const char* fmt = nullptr;
  switch (node_.op()) {
    case Op::Add: fmt = "a + b"; break;
    case Op::Sub: fmt = "a - b"; break;
    case Op::Mul: fmt = "a * b"; break;
    case Op::Div: fmt = "a / b"; break;
    default: fmt = "pow(a, b)"; break;
  }
  const Dims& out = out_shape();
  const Dims* ins[2] = {&in_shape(0), &in_shape(1)};
  // Broadcast check and strides (0 along broadcast dims).
  int64_t strides[2][kMaxDims] = {};
  for (int s = 0; s < 2; ++s) {
    const Dims& x = *ins[s];
    if (x.rank > out.rank) return fail(Error::ShapeMismatch, "input rank above output rank");
    int64_t stride = 1;
    for (int d = out.rank - 1; d >= 0; --d) {
      const int xd = d - (out.rank - x.rank);
      const int64_t size = xd >= 0 ? x.d[xd] : 1;
      if (size != out.d[d] && size != 1) {
        return fail(Error::ShapeMismatch, "inputs do not broadcast to the output shape");
      }
      strides[s][d] = size == 1 ? 0 : stride;
      stride *= size;
    }
  }
  bind_input(0);
  bind_input(1);
  std::string a = "in0[gid]", b = "in1[gid]";
  const bool same0 = *ins[0] == out, same1 = *ins[1] == out;
  if (same0 && same1) {
    vectorised("const float8 a = vload8(0, in0 + base_), b = vload8(0, in1 + base_);",
               "const float a = in0[i], b = in1[i];", fmt);
    return Status::ok();
  }
  if (!same0 || !same1) {
    decompose("gid", out, "od", "i");
    std::string oa = "0", ob = "0";
    for (int d = 0; d < out.rank; ++d) {
      if (!same0 && strides[0][d] != 0) oa += string_format(" + i%d * ", d) + param(string_format("sa%d", d), strides[0][d]);
      if (!same1 && strides[1][d] != 0) ob += string_format(" + i%d * ", d) + param(string_format("sb%d", d), strides[1][d]);
    }
    if (!same0) a = "in0[" + oa + "]";
    if (!same1) b = "in1[" + ob + "]";
  }
  line("const float a = " + a + ";");
  line("const float b = " + b + ";");
  line(std::string("float v = ") + fmt + ";");
  store();
  return Status::ok();
}

// Maps a 1-D or 2-D spatial input [N, C, (H,) W] to 2-D sizes.
Status Planner::spatial_dims(const Dims& x, Span<const int64_t> kernel, int64_t* h, int64_t* w,
                             int64_t* kh, int64_t* kw) {
  if (x.rank != 3 && x.rank != 4) return unsupported("only 1-D and 2-D spatial ops");
  const size_t sd = static_cast<size_t>(x.rank - 2);
  if (kernel.size() != sd) return fail(Error::InvalidProgram, "kernel_shape rank differs from input");
  *h = sd == 2 ? x.d[2] : 1;
  *w = x.d[x.rank - 1];
  *kh = sd == 2 ? kernel[0] : 1;
  *kw = kernel[sd - 1];
  return Status::ok();
}

struct Window {
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0, pb = 0, pr = 0;
};

Status read_window(const ir::WindowAttrs& attrs, size_t sd, Window* win) {
  const Span<const int64_t> strides = attrs.strides, dilations = attrs.dilations, pads = attrs.pads;
  const std::string_view auto_pad = attrs.auto_pad;
  if (auto_pad != "NOTSET" && auto_pad != "VALID") {
    return Status::error(Error::NotSupported, "opencl: auto_pad %.*s",
                         static_cast<int>(auto_pad.size()), auto_pad.data());
  }
  if ((!strides.empty() && strides.size() != sd) || (!dilations.empty() && dilations.size() != sd) ||
      (!pads.empty() && pads.size() != 2 * sd)) {
    return Status(Error::InvalidProgram, "opencl: strides, dilations or pads of the wrong length");
  }
  if (!strides.empty()) {
    win->sh = sd == 2 ? strides[0] : 1;
    win->sw = strides[sd - 1];
  }
  if (!dilations.empty()) {
    win->dh = sd == 2 ? dilations[0] : 1;
    win->dw = dilations[sd - 1];
  }
  if (!pads.empty() && auto_pad == "NOTSET") {
    if (sd == 2) {
      win->pt = pads[0];
      win->pl = pads[1];
      win->pb = pads[2];
      win->pr = pads[3];
    } else {
      win->pl = pads[0];
      win->pr = pads[1];
    }
  }
  if (win->sh < 1 || win->sw < 1 || win->dh < 1 || win->dw < 1 || win->pt < 0 || win->pl < 0 ||
      win->pb < 0 || win->pr < 0) {
    return Status(Error::InvalidProgram, "opencl: non-positive stride or dilation, or negative pad");
  }
  return Status::ok();
}

Status Planner::conv() {
  if (num_inputs() < 2 || num_inputs() > 3) return fail(Error::InvalidProgram, "takes 2 or 3 inputs");
  const Dims& x = in_shape(0);
  const Dims& wt = in_shape(1);
  const Dims& y = out_shape();
  if (wt.rank != x.rank || y.rank != x.rank) return fail(Error::ShapeMismatch, "X, W and Y ranks differ");
  TESSERA_ASSIGN_OR_RETURN(const ir::ConvAttrs attrs, ir::ConvAttrs::read(attrs_));
  const Span<const int64_t> kshape = attrs.kernel_shape;
  const Span<const int64_t> wspatial(wt.d + 2, static_cast<size_t>(wt.rank - 2));
  if (!kshape.empty()) {
    for (size_t i = 0; i < kshape.size() && i < wspatial.size(); ++i) {
      if (kshape[i] != wspatial[i]) return fail(Error::InvalidProgram, "kernel_shape differs from W");
    }
  }
  int64_t h, w, kh, kw;
  TESSERA_RETURN_IF_ERROR(spatial_dims(x, wspatial, &h, &w, &kh, &kw));
  Window win;
  Status s = read_window(ir::window_of(attrs), static_cast<size_t>(x.rank - 2), &win);
  if (!s.is_ok()) return fail(s.code(), s.message());
  const int64_t group = attrs.group;
  const int64_t n = x.d[0], c = x.d[1], m = wt.d[0];
  if (group < 1 || c % group != 0 || m % group != 0 || wt.d[1] != c / group) {
    return fail(Error::InvalidProgram, "group does not divide the channels or W's shape");
  }
  const int64_t oh = (h + win.pt + win.pb - ((kh - 1) * win.dh + 1)) / win.sh + 1;
  const int64_t ow = (w + win.pl + win.pr - ((kw - 1) * win.dw + 1)) / win.sw + 1;
  const int64_t yh = y.rank == 4 ? y.d[2] : 1;
  if (y.d[0] != n || y.d[1] != m || yh != oh || y.d[y.rank - 1] != ow) {
    return fail(Error::ShapeMismatch, string_format("output shape does not match computed [%lld, %lld, %lld, %lld]",
                                             (long long)n, (long long)m, (long long)oh, (long long)ow).c_str());
  }
  const bool bias = input_value(2) >= 0;
  if (bias && in_shape(2).numel() != m) return fail(Error::ShapeMismatch, "bias size differs from M");
  const ConvGeometry geometry{n,  c,      h,      w,      m,      kh,     kw,     oh,
                              ow, win.sh, win.sw, win.dh, win.dw, win.pt, win.pl, bias};
  if (group == 1) return conv_gemm(geometry);
  if (fusion_ != nullptr) return fail(Error::InvalidProgram, "a residual fuses only into group 1");
  bind_input(0);
  bind_input(1);
  if (bias) bind_input(2);
  const std::string OW = param("OW", ow), OH = param("OH", oh), M = param("M", m);
  const std::string MPG = param("MPG", m / group), CPG = param("CPG", c / group);
  const std::string C = param("C", c), H = param("H", h), W = param("W", w);
  const std::string KH = param("KH", kh), KW = param("KW", kw);
  const std::string SH = param("SH", win.sh), SW = param("SW", win.sw);
  const std::string DH = param("DH", win.dh), DW = param("DW", win.dw);
  const std::string PT = param("PT", win.pt), PL = param("PL", win.pl);
  // Grouped (e.g. depthwise): one work item computes RPI output rows of one channel (about 64
  // outputs: a work item costs PoCL enough that short rows need several), adding each tap's
  // weight times a contiguous (or strided) input row segment into the row, so the compiler can
  // vectorise along the row.
  const int64_t rows =
      std::max<int64_t>(1, std::min<int64_t>(oh, (64 + ow - 1) / std::max<int64_t>(ow, 1)));
  const int64_t ohb = (oh + rows - 1) / rows;
  k().work_items = n * m * ohb;
  k().preferred_local = 8;
  const std::string RPI = param("RPI", rows), OHB = param("OHB", ohb);
  line("const int oh0 = (gid % " + OHB + ") * " + RPI + "; int t_ = gid / " + OHB + ";");
  line("const int m = t_ % " + M + "; const int n = t_ / " + M + ";");
  line("const int g = m / " + MPG + ";");
  line("for (int oh = oh0; oh < min(oh0 + " + RPI + ", " + OH + "); ++oh) {");
  line("__global float* yp = out0 + ((n * " + M + " + m) * " + OH + " + oh) * " + OW + ";");
  line(std::string("const float b = ") + (bias ? "in2[m]" : "0.0f") + ";");
  line("for (int ow = 0; ow < " + OW + "; ++ow) yp[ow] = b;");
  line("const __global float* wp = in1 + m * (" + CPG + " * " + KH + " * " + KW + ");");
  line("for (int c = 0; c < " + CPG + "; ++c) {");
  line("  const __global float* xp = in0 + ((n * " + C + " + g * " + CPG + " + c) * " + H + ") * " + W + ";");
  line("  for (int kh = 0; kh < " + KH + "; ++kh) {");
  line("    const int ih = oh * " + SH + " - " + PT + " + kh * " + DH + ";");
  line("    if (ih < 0 || ih >= " + H + ") continue;");
  line("    const __global float* xr = xp + ih * " + W + ";");
  line("    for (int kw = 0; kw < " + KW + "; ++kw) {");
  line("      const float wv = wp[(c * " + KH + " + kh) * " + KW + " + kw];");
  line("      const int off = kw * " + DW + " - " + PL + ";");
  line("      const int lo = off < 0 ? min((-off + " + SW + " - 1) / " + SW + ", " + OW + ") : 0;");
  line("      const int hi = max(lo, min(" + OW + ", (" + W + " - off + " + SW + " - 1) / " + SW +
       "));");
  line("      if (" + SW + " == 1) {");
  line("        for (int ow = lo; ow < hi; ++ow) yp[ow] += wv * xr[ow + off];");
  line("      } else if (" + SW + " == 2) {");
  line("        for (int ow = lo; ow < hi; ++ow) yp[ow] += wv * xr[ow * 2 + off];");
  line("      } else {");
  line("        for (int ow = lo; ow < hi; ++ow) yp[ow] += wv * xr[ow * " + SW + " + off];");
  line("      }");
  line("    }");
  line("  }");
  line("}");
  const std::string act = activation();
  if (!act.empty()) {
    line("for (int ow = 0; ow < " + OW + "; ++ow) { float v = yp[ow]; " + act + " yp[ow] = v; }");
  }
  line("}");
  return Status::ok();
}

Status Planner::conv_gemm(const ConvGeometry& g) {
  const int64_t p = g.oh * g.ow, kc = g.c * g.kh * g.kw;
  const int64_t p_pad = (p + kTileCols - 1) / kTileCols * kTileCols;
  // A 1x1, stride-1, unpadded convolution reads X itself; when the pixel count leaves a partial
  // last column tile, that tile's loop loads B element by element within the row.
  const bool direct = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.pt == 0 && g.pl == 0 &&
                      g.oh == g.h && g.ow == g.w;
  const bool ragged = direct && p % kTileCols != 0;
  const int64_t ldb = direct ? p : p_pad;
  if (g.n * kc * ldb >= (int64_t{1} << 31)) return unsupported("im2col matrix above 2^31 elements");
  if (!direct) {
    // im2col: scratch[n][r][q] = X[n, c, oh*SH - PT + kh*DH, ow*SW - PL + kw*DW] (0 outside X),
    // r = (c, kh, kw), q = oh * OW + ow; the padding columns q >= P are never read into a stored
    // output. One work item writes one output row (OW values) of one r: a contiguous copy of
    // an input row segment between zeros.
    KernelPlan main = std::move(k());
    k() = KernelPlan();
    k().name = main.name + "_im2col";
    k().label = "Conv:im2col " + std::string(attrs_.node_name());
    k().output = kScratchValue;
    k().work_items = g.n * kc * g.oh;
    k().preferred_local = 8;
    bind_input(0);
    const std::string OH = param("OH", g.oh), PP = param("PP", p_pad), KC = param("KC", kc);
    const std::string KW = param("KW", g.kw), KH = param("KH", g.kh), OW = param("OW", g.ow);
    const std::string C = param("C", g.c), H = param("H", g.h), W = param("W", g.w);
    const std::string SH = param("SH", g.sh), SW = param("SW", g.sw), DH = param("DH", g.dh);
    const std::string DW = param("DW", g.dw), PT = param("PT", g.pt), PL = param("PL", g.pl);
    line("const int oh = gid % " + OH + "; int t_ = gid / " + OH + ";");
    line("const int r = t_ % " + KC + "; const int n = t_ / " + KC + ";");
    line("const int kw = r % " + KW + "; const int kh = (r / " + KW + ") % " + KH + ";");
    line("const int c = r / (" + KW + " * " + KH + ");");
    line("__global float* dst = out0 + (n * " + KC + " + r) * " + PP + " + oh * " + OW + ";");
    line("const int ih = oh * " + SH + " - " + PT + " + kh * " + DH + ";");
    line("if (ih < 0 || ih >= " + H + ") {");
    line("  for (int ow = 0; ow < " + OW + "; ++ow) dst[ow] = 0.0f;");
    line("  return;");
    line("}");
    line("const __global float* src = in0 + ((n * " + C + " + c) * " + H + " + ih) * " + W + ";");
    line("const int off = kw * " + DW + " - " + PL + ";");
    line("const int lo = off < 0 ? min((-off + " + SW + " - 1) / " + SW + ", " + OW + ") : 0;");
    line("const int hi = max(lo, min(" + OW + ", (" + W + " - off + " + SW + " - 1) / " + SW +
         "));");
    line("for (int ow = 0; ow < lo; ++ow) dst[ow] = 0.0f;");
    line("if (" + SW + " == 1) {");
    line("  for (int ow = lo; ow < hi; ++ow) dst[ow] = src[ow + off];");
    line("} else {");
    line("  for (int ow = lo; ow < hi; ++ow) dst[ow] = src[ow * " + SW + " + off];");
    line("}");
    line("for (int ow = hi; ow < " + OW + "; ++ow) dst[ow] = 0.0f;");
    param("total", k().work_items);
    plan_->before.push_back(std::move(k()));
    k() = std::move(main);
    plan_->scratch_floats = g.n * kc * p_pad;
  }
  if (gemm_impl_ == GemmImpl::Clblast) {
    // CLBlast: Y[n] (M x P) = W (M x KC) * B[n] (KC x P, rows LDB apart), then one epilogue
    // kernel adds the bias and the residual and applies the activation in place.
    KernelPlan call = k();
    call.name = k().name + "_gemm";
    call.label = "Conv:gemm " + std::string(attrs_.node_name());
    call.inputs = {input_value(1), direct ? input_value(0) : kScratchValue};
    call.gemm = LibraryGemm{g.m, p, kc, g.n, false, false, kc, ldb, p, 0, kc * ldb, g.m * p, 1.0f};
    run_library_first(std::move(call));
    return conv_epilogue(g.m, p, g.bias);
  }
  // The GEMM: work item (n, column tile, row tile).
  const int64_t mt = (g.m + kTileRows - 1) / kTileRows, nt = p_pad / kTileCols;
  k().work_items = g.n * mt * nt;
  k().preferred_local = 4;
  if (direct) {
    bind_input(0);
  } else {
    k().inputs.push_back(kScratchValue);
  }
  bind_input(1);
  if (g.bias) bind_input(2);
  // The residual operand (a fused Add) is the next input after the bias, if any.
  const std::string res = "in" + std::to_string(k().inputs.size());
  if (fusion_ != nullptr) k().inputs.push_back(fusion_->residual);
  const std::string NT = param("NT", nt), MT = param("MT", mt), M = param("M", g.m);
  const std::string KC = param("KC", kc), LDB = param("LDB", ldb), P = param("P", p);
  // Row tiles fastest: neighbouring work items share one column tile's B panel (K x 32 floats),
  // which stays in cache while the weight rows stream.
  line("const int i0 = (gid % " + MT + ") * " + std::to_string(kTileRows) + "; int t_ = gid / " +
       MT + ";");
  line("const int jt = t_ % " + NT + "; const int n = t_ / " + NT + ";");
  line("const int j = jt * " + std::to_string(kTileCols) + ";");
  line("const __global float* bp = in0 + n * " + KC + " * " + LDB + " + j;");
  for (int r = 0; r < kTileRows; ++r) {
    line(string_format("const __global float* a%d = in1 + min(i0 + %d, %s - 1) * %s;", r, r,
                       M.c_str(), KC.c_str()));
    line(string_format("float16 c%d_0 = 0.0f, c%d_1 = 0.0f;", r, r));
  }
  auto accumulate = [&](const char* indent) {
    for (int r = 0; r < kTileRows; ++r) {
      line(
          string_format("%s{ const float16 a = (float16)(a%d[k]); c%d_0 = fma(a, b0, c%d_0); "
                        "c%d_1 = fma(a, b1, c%d_1); }",
                        indent, r, r, r, r, r));
    }
  };
  const std::string TC = std::to_string(kTileCols);
  if (ragged) {
    // The last column tile of a direct 1x1: B's row ends inside it, so load within the row.
    line("if (j + " + TC + " > " + P + ") {");
    line("  for (int k = 0; k < " + KC + "; ++k, bp += " + LDB + ") {");
    line("    float tb[" + TC + "];");
    line("    for (int l = 0; l < " + TC + "; ++l) tb[l] = j + l < " + P + " ? bp[l] : 0.0f;");
    line("    const float16 b0 = vload16(0, tb), b1 = vload16(1, tb);");
    accumulate("    ");
    line("  }");
    line("} else {");
  }
  line("for (int k = 0; k < " + KC + "; ++k, bp += " + LDB + ") {");
  line("  const float16 b0 = vload16(0, bp), b1 = vload16(1, bp);");
  accumulate("  ");
  line("}");
  if (ragged) line("}");
  const std::string act0 = activation("v0"), act1 = activation("v1"), act = activation("v");
  for (int r = 0; r < kTileRows; ++r) {
    line(string_format("if (i0 + %d < %s) {", r, M.c_str()));
    line(string_format("  const int m = i0 + %d;", r));
    if (g.bias) {
      line(string_format("  float16 v0 = c%d_0 + in2[m], v1 = c%d_1 + in2[m];", r, r));
    } else {
      line(string_format("  float16 v0 = c%d_0, v1 = c%d_1;", r, r));
    }
    line("  const int o_ = (n * " + M + " + m) * " + P + " + j;");
    line("  __global float* o = out0 + o_;");
    line("  if (j + " + TC + " <= " + P + ") {");
    if (fusion_ != nullptr)
      line("    v0 += vload16(0, " + res + " + o_); v1 += vload16(1, " + res + " + o_);");
    if (!act0.empty()) line("    " + act0 + " " + act1);
    line("    vstore16(v0, 0, o); vstore16(v1, 1, o);");
    line("  } else {");
    line("    float tmp[" + TC + "]; vstore16(v0, 0, tmp); vstore16(v1, 1, tmp);");
    line("    for (int l = 0; l < " + P + " - j; ++l) {");
    line(std::string("      float v = tmp[l]") +
         (fusion_ != nullptr ? " + " + res + "[o_ + l]" : "") + ";");
    if (!act.empty()) line("      " + act);
    line("      o[l] = v;");
    line("    }");
    line("  }");
    line("}");
  }
  return Status::ok();
}

// After a library GEMM wrote Y (N x M x P): Y += bias[m] (+ residual), then the activation, in
// place, one element per work item. With none of the three, the GEMM call is the node's kernel.
Status Planner::conv_epilogue(int64_t m, int64_t p, bool bias) {
  const std::string act = activation();
  if (!bias && fusion_ == nullptr && act.empty()) {
    library_call_is_the_kernel();
    return Status::ok();
  }
  k().inputs.clear();
  if (bias) bind_input(2);
  const std::string res = "in" + std::to_string(k().inputs.size());
  if (fusion_ != nullptr) k().inputs.push_back(fusion_->residual);
  const std::string M = param("M", m), P = param("P", p);
  line("float v = out0[gid];");
  if (bias) line("v += in0[(gid / " + P + ") % " + M + "];");
  if (fusion_ != nullptr) line("v += " + res + "[gid];");
  store();
  return Status::ok();
}

Status Planner::gemm() {
  if (num_inputs() < 2 || num_inputs() > 3) return fail(Error::InvalidProgram, "takes 2 or 3 inputs");
  const Dims& a = in_shape(0);
  const Dims& b = in_shape(1);
  if (a.rank != 2 || b.rank != 2) return fail(Error::InvalidProgram, "A and B must be 2-D");
  TESSERA_ASSIGN_OR_RETURN(const ir::GemmAttrs attrs, ir::GemmAttrs::read(attrs_));
  const int64_t ta = attrs.transA, tb = attrs.transB;
  const float alpha = attrs.alpha, beta = attrs.beta;
  const int64_t m = ta ? a.d[1] : a.d[0], kk = ta ? a.d[0] : a.d[1];
  const int64_t k2 = tb ? b.d[1] : b.d[0], n = tb ? b.d[0] : b.d[1];
  const Dims& y = out_shape();
  if (kk != k2) return fail(Error::ShapeMismatch, "inner dimensions differ");
  if (y.rank != 2 || y.d[0] != m || y.d[1] != n) return fail(Error::ShapeMismatch, "output is not [M, N]");
  const bool has_c = input_value(2) >= 0;
  int64_t csm = 0, csn = 0;
  if (has_c) {
    const Dims& c = in_shape(2);
    if (c.rank > 2) return fail(Error::ShapeMismatch, "C has rank above 2");
    const int64_t cm = c.rank == 2 ? c.d[0] : 1, cn = c.rank >= 1 ? c.d[c.rank - 1] : 1;
    if ((cm != 1 && cm != m) || (cn != 1 && cn != n)) return fail(Error::ShapeMismatch, "C does not broadcast to [M, N]");
    csn = cn == 1 ? 0 : 1;
    csm = cm == 1 ? 0 : cn;
  }
  if (gemm_impl_ == GemmImpl::Clblast) {
    // CLBlast: Y = alpha * op(A) * op(B); the epilogue adds beta * C and the activation.
    KernelPlan call = k();
    call.name = k().name + "_gemm";
    call.label = "Gemm:gemm " + std::string(attrs_.node_name());
    call.inputs = {input_value(0), input_value(1)};
    call.gemm =
        LibraryGemm{m, n, kk, 1, ta != 0, tb != 0, ta ? m : kk, tb ? kk : n, n, 0, 0, 0, alpha};
    run_library_first(std::move(call));
    const bool add_c = has_c && beta != 0.0f;
    const std::string act = activation();
    if (!add_c && act.empty()) {
      library_call_is_the_kernel();
      return Status::ok();
    }
    if (add_c) bind_input(2);
    const std::string N = param("N", n);
    line("float v = out0[gid];");
    if (add_c) {
      // One parameter per statement: the operands of + are unsequenced, and the parameter list
      // (so the kernel's text, and every cache key made from it) must not depend on the compiler.
      const std::string CSM = param("CSM", csm);
      const std::string CSN = param("CSN", csn);
      line("v += " + float_literal(beta) + " * in0[(gid / " + N + ") * " + CSM + " + (gid % " + N +
           ") * " + CSN + "];");
    }
    store();
    return Status::ok();
  }
  bind_input(0);
  bind_input(1);
  if (has_c) bind_input(2);
  const std::string N = param("N", n), M = param("M", m), K = param("K", kk);
  line("const int nn = gid % " + N + "; const int mm = gid / " + N + ";");
  line("float acc = 0.0f;");
  if (!ta && tb) {
    // A row times a B row (a fully connected layer): both contiguous, 16 lanes at a time.
    line("const __global float* ap = in0 + mm * " + K + "; const __global float* bp = in1 + nn * " +
         K + ";");
    line("float16 acc16 = 0.0f; int k = 0;");
    line("for (; k + 16 <= " + K +
         "; k += 16) acc16 = fma(vload16(0, ap + k), vload16(0, bp + k), acc16);");
    line("const float8 h8 = acc16.lo + acc16.hi; const float4 h4 = h8.lo + h8.hi;");
    line("acc = (h4.x + h4.y) + (h4.z + h4.w);");
    line("for (; k < " + K + "; ++k) acc += ap[k] * bp[k];");
  } else {
    line("for (int k = 0; k < " + K + "; ++k) {");
    line(std::string("  acc += in0[") + (ta ? "k * " + M + " + mm" : "mm * " + K + " + k") +
         "] * in1[" + (tb ? "nn * " + K + " + k" : "k * " + N + " + nn") + "];");
    line("}");
  }
  std::string v = float_literal(alpha) + " * acc";
  if (has_c && beta != 0.0f) {
    const std::string CSM = param("CSM", csm);  // in this order, whatever the compiler (above)
    const std::string CSN = param("CSN", csn);
    v += " + " + float_literal(beta) + " * in2[mm * " + CSM + " + nn * " + CSN + "]";
  }
  line("float v = " + v + ";");
  store();
  return Status::ok();
}

Status Planner::matmul() {
  if (num_inputs() != 2) return fail(Error::InvalidProgram, "takes two inputs");
  const Dims& a = in_shape(0);
  const Dims& b = in_shape(1);
  if (a.rank < 1 || b.rank < 1) return fail(Error::InvalidProgram, "scalar operand");
  const bool a1 = a.rank == 1, b1 = b.rank == 1;
  const int64_t m = a1 ? 1 : a.d[a.rank - 2], kk = a.d[a.rank - 1];
  const int64_t k2 = b1 ? b.d[0] : b.d[b.rank - 2], n = b1 ? 1 : b.d[b.rank - 1];
  if (kk != k2) return fail(Error::ShapeMismatch, "inner dimensions differ");
  const int ra = a1 ? 0 : a.rank - 2, rb = b1 ? 0 : b.rank - 2;
  const int rank = ra > rb ? ra : rb;
  Dims batch;
  batch.rank = rank;
  int64_t sa[kMaxDims] = {}, sb[kMaxDims] = {};
  int64_t stride_a = m * kk, stride_b = kk * n;
  for (int d = rank - 1; d >= 0; --d) {
    const int da = d - (rank - ra), db = d - (rank - rb);
    const int64_t xa = da >= 0 ? a.d[da] : 1, xb = db >= 0 ? b.d[db] : 1;
    if (xa != xb && xa != 1 && xb != 1) return fail(Error::ShapeMismatch, "batch dims do not broadcast");
    batch.d[d] = xa > xb ? xa : xb;
    sa[d] = xa == 1 ? 0 : stride_a;
    sb[d] = xb == 1 ? 0 : stride_b;
    stride_a *= xa;
    stride_b *= xb;
  }
  Dims want = batch;
  if (!a1) want.d[want.rank++] = m;
  if (!b1) want.d[want.rank++] = n;
  if (!(want == out_shape())) return fail(Error::ShapeMismatch, "output shape differs from the computed one");
  bind_input(0);
  bind_input(1);
  const std::string N = param("N", n), M = param("M", m), K = param("K", kk);
  line("const int nn = gid % " + N + "; int t_ = gid / " + N + ";");
  line("const int mm = t_ % " + M + "; t_ /= " + M + ";");
  line("int oa = 0, ob = 0;");
  for (int d = rank - 1; d >= 0; --d) {
    // One parameter per statement (see gemm above: the order of a function's arguments is
    // unspecified, and the parameter list is part of the kernel's text).
    const std::string bd = param(string_format("bd%d", d), batch.d[d]);
    const std::string sad = param(string_format("sa%d", d), sa[d]);
    const std::string sbd = param(string_format("sb%d", d), sb[d]);
    line(string_format("{ const int i = t_ %% %s; t_ /= %s; oa += i * %s; ob += i * %s; }",
                       bd.c_str(), bd.c_str(), sad.c_str(), sbd.c_str()));
  }
  line("const __global float* ap = in0 + oa + mm * " + K + ";");
  line("const __global float* bp = in1 + ob + nn;");
  line("float v = 0.0f;");
  line("for (int k = 0; k < " + K + "; ++k) v += ap[k] * bp[k * " + N + "];");
  store();
  return Status::ok();
}

Status Planner::pool() {
  if (num_inputs() != 1) return fail(Error::InvalidProgram, "takes one input");
  const Dims& x = in_shape(0);
  const Dims& y = out_shape();
  TESSERA_ASSIGN_OR_RETURN(const ir::PoolAttrs attrs, ir::PoolAttrs::read(attrs_));
  const Span<const int64_t> kshape = attrs.kernel_shape;
  if (kshape.empty()) return fail(Error::InvalidProgram, "kernel_shape is required");
  int64_t h, w, kh, kw;
  TESSERA_RETURN_IF_ERROR(spatial_dims(x, kshape, &h, &w, &kh, &kw));
  Window win;
  Status s = read_window(ir::window_of(attrs), static_cast<size_t>(x.rank - 2), &win);
  if (!s.is_ok()) return fail(s.code(), s.message());
  const int64_t ceil_mode = attrs.ceil_mode;
  const int64_t include_pad = attrs.count_include_pad;
  auto out_size = [&](int64_t in, int64_t k, int64_t st, int64_t dl, int64_t p0, int64_t p1) {
    const int64_t span = in + p0 + p1 - ((k - 1) * dl + 1);
    int64_t o = (ceil_mode ? (span + st - 1) / st : span / st) + 1;
    if (ceil_mode && (o - 1) * st >= in + p0) --o;
    return o;
  };
  const int64_t oh = out_size(h, kh, win.sh, win.dh, win.pt, win.pb);
  const int64_t ow = out_size(w, kw, win.sw, win.dw, win.pl, win.pr);
  if (y.rank != x.rank || y.d[0] != x.d[0] || y.d[1] != x.d[1] || (y.rank == 4 ? y.d[2] : 1) != oh ||
      y.d[y.rank - 1] != ow) {
    return fail(Error::ShapeMismatch, "output shape does not match the computed one");
  }
  const bool is_max = node_.op() == Op::MaxPool;
  bind_input(0);
  const std::string OW = param("OW", ow), OH = param("OH", oh), H = param("H", h), W = param("W", w);
  const std::string KH = param("KH", kh), KW = param("KW", kw), SH = param("SH", win.sh), SW = param("SW", win.sw);
  const std::string DH = param("DH", win.dh), DW = param("DW", win.dw), PT = param("PT", win.pt), PL = param("PL", win.pl);
  if (is_max) {
    // One work item per output row: each tap updates the row's maxima from an input row
    // segment, a loop the compiler vectorises. A window wholly in the padding gives -inf.
    k().work_items = y.numel() / (ow == 0 ? 1 : ow);
    k().preferred_local = 8;
    line("const int oh = gid % " + OH + "; const int nc = gid / " + OH + ";");
    line("const __global float* xp = in0 + nc * " + H + " * " + W + ";");
    line("__global float* yp = out0 + gid * " + OW + ";");
    line("for (int ow = 0; ow < " + OW + "; ++ow) yp[ow] = -INFINITY;");
    line("for (int kh = 0; kh < " + KH + "; ++kh) {");
    line("  const int ih = oh * " + SH + " - " + PT + " + kh * " + DH + ";");
    line("  if (ih < 0 || ih >= " + H + ") continue;");
    line("  const __global float* xr = xp + ih * " + W + ";");
    line("  for (int kw = 0; kw < " + KW + "; ++kw) {");
    line("    const int off = kw * " + DW + " - " + PL + ";");
    line("    const int lo = off < 0 ? min((-off + " + SW + " - 1) / " + SW + ", " + OW + ") : 0;");
    line("    const int hi = max(lo, min(" + OW + ", (" + W + " - off + " + SW + " - 1) / " + SW +
         "));");
    line("    for (int ow = lo; ow < hi; ++ow) yp[ow] = fmax(yp[ow], xr[ow * " + SW + " + off]);");
    line("  }");
    line("}");
    const std::string act = activation();
    if (!act.empty()) {
      line("for (int ow = 0; ow < " + OW + "; ++ow) { float v = yp[ow]; " + act + " yp[ow] = v; }");
    }
    return Status::ok();
  }
  line("const int ow = gid % " + OW + "; int t_ = gid / " + OW + ";");
  line("const int oh = t_ % " + OH + "; const int nc = t_ / " + OH + ";");
  line("const __global float* xp = in0 + nc * " + H + " * " + W + ";");
  line(std::string("float v = ") + (is_max ? "-INFINITY" : "0.0f") + "; int count = 0;");
  line("for (int kh = 0; kh < " + KH + "; ++kh) {");
  line("  const int ih = oh * " + SH + " - " + PT + " + kh * " + DH + ";");
  line("  for (int kw = 0; kw < " + KW + "; ++kw) {");
  line("    const int iw = ow * " + SW + " - " + PL + " + kw * " + DW + ";");
  line("    const int inside = ih >= 0 && ih < " + H + " && iw >= 0 && iw < " + W + ";");
  if (is_max) {
    line("    if (inside) v = fmax(v, xp[ih * " + W + " + iw]);");
  } else if (include_pad) {
    const std::string PB = param("PB", win.pb), PR = param("PR", win.pr);
    line("    if (inside) v += xp[ih * " + W + " + iw];");
    line("    if (ih < " + H + " + " + PB + " && iw < " + W + " + " + PR + ") ++count;");
  } else {
    line("    if (inside) { v += xp[ih * " + W + " + iw]; ++count; }");
  }
  line("  }");
  line("}");
  if (!is_max) line("v = count > 0 ? v / (float)count : 0.0f;");
  store();
  return Status::ok();
}

Status Planner::global_average_pool() {
  const Dims& x = in_shape(0);
  if (x.rank < 3) return fail(Error::InvalidProgram, "input must be [N, C, spatial...]");
  const int64_t spatial = x.numel() / (x.d[0] * x.d[1]);
  if (out_shape().numel() != x.d[0] * x.d[1]) return fail(Error::ShapeMismatch, "output is not [N, C, 1...]");
  bind_input(0);
  const std::string S = param("S", spatial);
  line("const __global float* xp = in0 + gid * " + S + ";");
  line("float v = 0.0f;");
  line("for (int i = 0; i < " + S + "; ++i) v += xp[i];");
  line("v /= (float)" + S + ";");
  store();
  return Status::ok();
}

Status Planner::softmax() {
  const Dims& x = in_shape(0);
  if (!(x == out_shape())) return fail(Error::ShapeMismatch, "output shape differs from input");
  TESSERA_ASSIGN_OR_RETURN(const ir::SoftmaxAttrs attrs, ir::SoftmaxAttrs::read(attrs_));
  int64_t axis = attrs.axis;
  if (axis < 0) axis += x.rank;
  if (axis < 0 || axis >= x.rank) return fail(Error::InvalidProgram, "axis out of range");
  int64_t inner = 1;
  for (int d = static_cast<int>(axis) + 1; d < x.rank; ++d) inner *= x.d[d];
  const int64_t len = x.d[axis];
  k().work_items = x.numel() / (len == 0 ? 1 : len);
  bind_input(0);
  const std::string I = param("I", inner), A = param("A", len);
  line("const int base = (gid / " + I + ") * " + A + " * " + I + " + gid % " + I + ";");
  line("const __global float* xp = in0 + base; __global float* yp = out0 + base;");
  line("float mx = -INFINITY;");
  line("for (int a = 0; a < " + A + "; ++a) mx = fmax(mx, xp[a * " + I + "]);");
  line("float sum = 0.0f;");
  line("for (int a = 0; a < " + A + "; ++a) { const float e = exp(xp[a * " + I + "] - mx); yp[a * " + I + "] = e; sum += e; }");
  line("const float inv = 1.0f / sum;");
  const std::string act = activation();
  line("for (int a = 0; a < " + A + "; ++a) { float v = yp[a * " + I + "] * inv; " + act + " yp[a * " + I + "] = v; }");
  return Status::ok();
}

Status Planner::layer_norm() {
  if (num_inputs() < 2 || num_inputs() > 3) return fail(Error::InvalidProgram, "takes 2 or 3 inputs");
  const Dims& x = in_shape(0);
  if (!(x == out_shape())) return fail(Error::ShapeMismatch, "output shape differs from input");
  TESSERA_ASSIGN_OR_RETURN(const ir::LayerNormalizationAttrs attrs,
                           ir::LayerNormalizationAttrs::read(attrs_));
  int64_t axis = attrs.axis;
  const float eps = attrs.epsilon;
  if (axis < 0) axis += x.rank;
  if (axis < 0 || axis >= x.rank) return fail(Error::InvalidProgram, "axis out of range");
  int64_t len = 1;
  for (int d = static_cast<int>(axis); d < x.rank; ++d) len *= x.d[d];
  const bool bias = input_value(2) >= 0;
  const int64_t ns = in_shape(1).numel(), nb = bias ? in_shape(2).numel() : len;
  if ((ns != len && ns != 1) || (nb != len && nb != 1)) {
    return unsupported("Scale/B must have X.shape[axis:] elements or one");
  }
  k().work_items = len == 0 ? 0 : x.numel() / len;
  bind_input(0);
  bind_input(1);
  if (bias) bind_input(2);
  const std::string L = param("L", len);
  line("const __global float* xp = in0 + gid * " + L + "; __global float* yp = out0 + gid * " + L + ";");
  line("float mean = 0.0f;");
  line("for (int i = 0; i < " + L + "; ++i) mean += xp[i];");
  line("mean /= (float)" + L + ";");
  line("float var = 0.0f;");
  line("for (int i = 0; i < " + L + "; ++i) { const float d = xp[i] - mean; var += d * d; }");
  line("const float inv = rsqrt(var / (float)" + L + " + " + float_literal(eps) + ");");
  const std::string act = activation();
  line("for (int i = 0; i < " + L + "; ++i) {");
  line(std::string("  float v = (xp[i] - mean) * inv * in1[") + (ns == 1 ? "0" : "i") + "]" +
       (bias ? std::string(" + in2[") + (nb == 1 ? "0" : "i") + "]" : "") + ";");
  line("  " + act + " yp[i] = v;");
  line("}");
  return Status::ok();
}

Status Planner::batch_norm() {
  if (num_inputs() != 5) return fail(Error::InvalidProgram, "takes five inputs");
  TESSERA_ASSIGN_OR_RETURN(const ir::BatchNormalizationAttrs attrs,
                           ir::BatchNormalizationAttrs::read(attrs_));
  if (attrs.training_mode != 0) return unsupported("training_mode");
  const float eps = attrs.epsilon;
  const Dims& x = in_shape(0);
  if (x.rank < 2 || !(x == out_shape())) return fail(Error::ShapeMismatch, "X must be [N, C, ...] like Y");
  for (int i = 1; i < 5; ++i) {
    if (in_shape(i).numel() != x.d[1]) return fail(Error::ShapeMismatch, "parameters must have C elements");
  }
  for (int i = 0; i < 5; ++i) bind_input(i);
  const std::string S = param("S", x.numel() / (x.d[0] * x.d[1])), C = param("C", x.d[1]);
  line("const int c = (gid / " + S + ") % " + C + ";");
  line("float v = (in0[gid] - in3[c]) * (in1[c] * rsqrt(in4[c] + " + float_literal(eps) + ")) + in2[c];");
  store();
  return Status::ok();
}

Status Planner::transpose() {
  const Dims& x = in_shape(0);
  const Dims& y = out_shape();
  TESSERA_ASSIGN_OR_RETURN(const ir::TransposeAttrs attrs, ir::TransposeAttrs::read(attrs_));
  const Span<const int64_t> perm_attr = attrs.perm;
  int perm[kMaxDims];
  bool seen[kMaxDims] = {};
  for (int d = 0; d < x.rank; ++d) {
    const int64_t p = perm_attr.empty() ? x.rank - 1 - d
                      : (static_cast<size_t>(d) < perm_attr.size() ? perm_attr[static_cast<size_t>(d)] : -1);
    if (p < 0 || p >= x.rank || seen[p]) return fail(Error::InvalidProgram, "perm is not a permutation");
    seen[p] = true;
    perm[d] = static_cast<int>(p);
  }
  if (!perm_attr.empty() && perm_attr.size() != static_cast<size_t>(x.rank)) {
    return fail(Error::InvalidProgram, "perm has the wrong length");
  }
  int64_t xs[kMaxDims];
  int64_t stride = 1;
  for (int d = x.rank - 1; d >= 0; --d) {
    xs[d] = stride;
    stride *= x.d[d];
  }
  if (y.rank != x.rank) return fail(Error::ShapeMismatch, "output rank differs");
  for (int d = 0; d < x.rank; ++d) {
    if (y.d[d] != x.d[perm[d]]) return fail(Error::ShapeMismatch, "output shape is not the permuted input");
  }
  bind_input(0);
  decompose("gid", y, "od", "i");
  std::string off = "0";
  for (int d = 0; d < y.rank; ++d) off += string_format(" + i%d * ", d) + param(string_format("xs%d", d), xs[perm[d]]);
  line("float v = in0[" + off + "];");
  store();
  return Status::ok();
}

// One gather: output channel c = j*g + i reads input channel i*(C/g) + j, at the same n and
// spatial offset.
Status Planner::channel_shuffle() {
  const Dims& x = in_shape(0);
  TESSERA_ASSIGN_OR_RETURN(const ir::ChannelShuffleAttrs attrs,
                           ir::ChannelShuffleAttrs::read(attrs_));
  if (x.rank < 2) return fail(Error::InvalidProgram, "input must be [N, C, ...]");
  if (!(x == out_shape()))
    return fail(Error::ShapeMismatch, "output shape differs from the input's");
  if (attrs.group < 1 || x.d[1] % attrs.group != 0) {
    return fail(Error::InvalidProgram, "group does not divide the channels");
  }
  bind_input(0);
  const int64_t spatial = x.numel() / (x.d[0] * x.d[1]);
  const std::string S = param("S", spatial), C = param("C", x.d[1]), G = param("G", attrs.group),
                    CPG = param("CPG", x.d[1] / attrs.group);
  line("const int c = (gid / " + S + ") % " + C + ";");
  line("const int from = (c % " + G + ") * " + CPG + " + c / " + G + ";");
  line("float v = in0[gid + (from - c) * " + S + "];");
  store();
  return Status::ok();
}

Status Planner::concat() {
  const Dims& y = out_shape();
  TESSERA_ASSIGN_OR_RETURN(const ir::ConcatAttrs attrs, ir::ConcatAttrs::read(attrs_));
  int64_t axis = attrs.axis;
  if (axis < 0) axis += y.rank;
  if (axis < 0 || axis >= y.rank || num_inputs() < 1) return fail(Error::InvalidProgram, "axis out of range");
  int64_t inner = 1;
  for (int d = static_cast<int>(axis) + 1; d < y.rank; ++d) inner *= y.d[d];
  int64_t total = 0;
  for (int i = 0; i < num_inputs(); ++i) {
    const Dims& x = in_shape(i);
    if (input_value(i) < 0 || x.rank != y.rank) return fail(Error::ShapeMismatch, "input rank differs");
    for (int d = 0; d < y.rank; ++d) {
      if (d != axis && x.d[d] != y.d[d]) return fail(Error::ShapeMismatch, "inputs differ off the axis");
    }
    total += x.d[axis];
  }
  if (total != y.d[axis]) return fail(Error::ShapeMismatch, "axis sizes do not add up to the output's");
  const std::string I = param("I", inner), A = param("A", y.d[axis]);
  line("const int i = gid % " + I + "; int t_ = gid / " + I + ";");
  line("const int a = t_ % " + A + "; const int o = t_ / " + A + ";");
  line("float v;");
  int64_t begin = 0;
  for (int j = 0; j < num_inputs(); ++j) {
    bind_input(j);
    const int64_t len = in_shape(j).d[axis];
    const std::string B = param(string_format("b%d", j), begin), L = param(string_format("l%d", j), len);
    line(std::string(j == 0 ? "" : "else ") + "if (a < " + B + " + " + L + ") v = in" + std::to_string(j) +
         "[(o * " + L + " + (a - " + B + ")) * " + I + " + i];");
    begin += len;
  }
  line("else v = 0.0f;");
  store();
  return Status::ok();
}

Status Planner::reshape_like() {
  if (in_shape(0).numel() != out_shape().numel()) {
    return fail(Error::ShapeMismatch, "element counts differ");
  }
  if (node_.activation() == fb::Activation::None) {
    plan_->alias = true;
    plan_->alias_of = input_value(0);
    return Status::ok();
  }
  bind_input(0);
  line("float v = in0[gid];");
  store();
  return Status::ok();
}

}  // namespace

Status plan_node(const fb::Graph& graph, int node_index, Span<const Dims> shapes, NodePlan* plan,
                 const ResidualFusion* fusion, GemmImpl gemm) {
  *plan = NodePlan();
  if (graph.nodes() == nullptr || node_index < 0 ||
      static_cast<uint32_t>(node_index) >= graph.nodes()->size()) {
    return Status(Error::InvalidArgument, "opencl: node index out of range");
  }
  Planner planner(graph, node_index, shapes, plan, fusion, gemm);
  return planner.run();
}

bool can_fuse_residual(const fb::Graph& graph, int conv_index, Span<const Dims> shapes) {
  if (graph.nodes() == nullptr || conv_index < 0 ||
      static_cast<uint32_t>(conv_index) >= graph.nodes()->size()) {
    return false;
  }
  const fb::Node& node = *graph.nodes()->Get(static_cast<uint32_t>(conv_index));
  if (node.op() != Op::Conv || node.activation() != fb::Activation::None) return false;
  if (node.outputs() == nullptr || node.outputs()->size() != 1) return false;
  Result<ir::ConvAttrs> attrs = ir::ConvAttrs::read(ir::AttrView(&node));
  if (!attrs.ok() || attrs->group != 1) return false;
  const int out = node.outputs()->Get(0);
  return out >= 0 && static_cast<size_t>(out) < shapes.size() && shapes[out].rank <= kMaxDims;
}

std::vector<Dims> stored_shapes(const fb::Graph& graph) {
  std::vector<Dims> shapes(graph.values() ? graph.values()->size() : 0);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const fb::Value* v = graph.values()->Get(static_cast<uint32_t>(i));
    const size_t rank = v->dims() ? v->dims()->size() : 0;
    shapes[i].rank = static_cast<int>(rank > kMaxDims ? kMaxDims + 1 : rank);
    for (size_t d = 0; d < rank && d < kMaxDims; ++d) {
      shapes[i].d[d] = v->dims()->Get(static_cast<uint32_t>(d))->value();
    }
  }
  return shapes;
}

std::string kernel_source(const KernelPlan& plan, bool specialize) {
  std::string s;
  if (specialize) {
    for (const auto& [name, value] : plan.params) {
      s += string_format("#define P_%s %lld\n", name.c_str(), static_cast<long long>(value));
    }
  }
  s += "__kernel void " + plan.name + "(__global float* restrict out0";
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    s += string_format(", __global const float* restrict in%zu", i);
  }
  if (!specialize) {
    for (const auto& p : plan.params) s += ", const int P_" + p.first;
  }
  s += ") {\n  const int gid = (int)get_global_id(0);\n  if (gid >= P_total) return;\n";
  s += plan.body;
  s += "}\n";
  if (specialize) {
    for (const auto& p : plan.params) s += "#undef P_" + p.first + "\n";
  }
  return s;
}

}  // namespace tessera::opencl
