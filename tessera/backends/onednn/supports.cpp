#include "tessera/backends/onednn/supports.h"

#include <oneapi/dnnl/dnnl_types.h>

#include <algorithm>
#include <cfloat>
#include <cmath>

namespace tessera::onednn {

// ---- NodeView ----------------------------------------------------------------------------------

std::string_view NodeView::name() const {
  return node_.name() ? std::string_view(node_.name()->c_str(), node_.name()->size())
                      : std::string_view();
}

int NodeView::num_inputs() const {
  return node_.inputs() ? static_cast<int>(node_.inputs()->size()) : 0;
}

int NodeView::num_outputs() const {
  return node_.outputs() ? static_cast<int>(node_.outputs()->size()) : 0;
}

int NodeView::input(int i) const {
  if (i < 0 || i >= num_inputs()) return -1;
  return node_.inputs()->Get(static_cast<uint32_t>(i));
}

int NodeView::output(int i) const {
  if (i < 0 || i >= num_outputs()) return -1;
  return node_.outputs()->Get(static_cast<uint32_t>(i));
}

const fb::Value* NodeView::value(int index) const {
  const auto* values = graph_.values();
  if (values == nullptr || index < 0 || static_cast<uint32_t>(index) >= values->size()) {
    return nullptr;
  }
  return values->Get(static_cast<uint32_t>(index));
}

Dims NodeView::dims(int index) const {
  if (view_ != nullptr && index >= 0 && static_cast<size_t>(index) < view_->num_values()) {
    return view_->dims(index);
  }
  Dims out;
  const fb::Value* v = value(index);
  if (v == nullptr || v->dims() == nullptr) return out;
  // A rank above kMaxDims is cut to kMaxDims, still above what check_node accepts.
  out.rank = std::min(static_cast<int>(v->dims()->size()), kMaxDims);
  for (int d = 0; d < out.rank; ++d) {
    out[static_cast<size_t>(d)] = v->dims()->Get(static_cast<uint32_t>(d))->value();
  }
  return out;
}

bool NodeView::is_constant(int index) const {
  const fb::Value* v = value(index);
  return v != nullptr && v->constant() >= 0;
}

bool NodeView::is_float_tensor(int index) const {
  const fb::Value* v = value(index);
  return v != nullptr && v->kind() == fb::ValueKind::Tensor &&
         v->dtype() == fb::ScalarType::Float32;
}

// ---- checks ------------------------------------------------------------------------------------

namespace {

constexpr int kMaxRank = 6;

struct Checker {
  const NodeView& n;
  Status fail(const char* what) const {
    return Status::error(Error::NotSupported, "onednn: %s node '%.*s': %s",
                         fb::EnumNameOpType(n.op()), static_cast<int>(n.name().size()),
                         n.name().data(), what);
  }
};

bool broadcastable(const Dims& small, const Dims& full) {
  if (small.size() > full.size()) return false;
  const size_t off = full.size() - small.size();
  for (size_t i = 0; i < small.size(); ++i) {
    if (small[i] != 1 && small[i] != full[off + i]) return false;
  }
  return true;
}

bool is_commutative(fb::OpType op) {
  return op == fb::OpType::Add || op == fb::OpType::Mul || op == fb::OpType::Min ||
         op == fb::OpType::Max;
}

Status check_window(const Checker& c, bool is_conv) {
  const NodeView& n = c.n;
  const Dims x = n.dims(n.input(0));
  const Dims y = n.dims(n.output(0));
  if (x.size() != 4 || y.size() != 4) return c.fail("only 2-D (rank-4 NCHW) windows are lowered");
  ir::WindowAttrs win;
  ir::PoolAttrs pool;
  if (is_conv) {
    ir::ConvAttrs conv;
    if (!n.attrs(&conv)) return c.fail("an attribute has the wrong type");
    win = ir::window_of(conv);
  } else {
    if (!n.attrs(&pool)) return c.fail("an attribute has the wrong type");
    win = ir::window_of(pool);
  }
  std::vector<int64_t> kernel(win.kernel_shape.begin(), win.kernel_shape.end());
  const Span<const int64_t> strides = win.strides, dilations = win.dilations, pads = win.pads;
  const std::string_view auto_pad = win.auto_pad;
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && !auto_pad.empty()) {
    return c.fail("auto_pad other than NOTSET or VALID");
  }
  if (is_conv && kernel.empty()) {
    const Dims w = n.dims(n.input(1));
    if (w.size() == 4) kernel = {w[2], w[3]};
  }
  if (kernel.size() != 2) return c.fail("kernel_shape must have 2 entries");
  if ((!strides.empty() && strides.size() != 2) || (!dilations.empty() && dilations.size() != 2) ||
      (!pads.empty() && pads.size() != 4)) {
    return c.fail("strides, dilations or pads of the wrong length");
  }
  for (int64_t v : strides) {
    if (v < 1) return c.fail("stride < 1");
  }
  for (int64_t v : dilations) {
    if (v < 1) return c.fail("dilation < 1");
  }
  for (int64_t v : pads) {
    if (v < 0) return c.fail("negative padding");
  }
  if (!is_conv && n.op() == fb::OpType::AveragePool) {
    for (int64_t v : dilations) {
      if (v != 1) return c.fail("dilated AveragePool");
    }
  }
  const Window w = read_window(n);
  for (int d = 0; d < 2; ++d) {
    if (w.pad_end[d] < 0 && !is_conv) return c.fail("window does not fit the output size");
    const int64_t span = (w.kernel[d] - 1) * (w.dilation[d] + 1) + 1;
    const int64_t expect =
        (x[2 + d] + w.pad_begin[d] + w.pad_end[d] - span) / w.stride[d] + 1;
    if (expect != y[2 + d]) return c.fail("output size does not match the window");
  }
  if (n.op() == fb::OpType::AveragePool) {
    const int64_t include = pool.count_include_pad;
    // With count_include_pad, ONNX does not count the cells ceil_mode adds past the padding.
    if (include != 0) {
      for (int d = 0; d < 2; ++d) {
        const int64_t declared = pads.empty() ? 0 : pads[2 + static_cast<size_t>(d)];
        if (w.pad_end[d] > declared) return c.fail("count_include_pad with ceil_mode overhang");
      }
    }
  }
  return Status::ok();
}

Status check_matmul_like(const Checker& c) {
  const NodeView& n = c.n;
  const int a = n.input(0), b = n.input(1);
  const Dims da = n.dims(a), db = n.dims(b), dy = n.dims(n.output(0));
  if (n.op() == fb::OpType::Gemm) {
    ir::GemmAttrs attrs;
    if (!n.attrs(&attrs)) return c.fail("an attribute has the wrong type");
    const int64_t trans_a = attrs.transA, trans_b = attrs.transB;
    const float alpha = attrs.alpha;
    if (da.size() != 2 || db.size() != 2) return c.fail("A and B must be rank 2");
    if (!n.is_constant(b)) return c.fail("B must be a constant");
    if (alpha != 1.0f) return c.fail("alpha != 1");
    const int64_t k = trans_a ? da[0] : da[1];
    const int64_t kb = trans_b ? db[1] : db[0];
    const int64_t cols = trans_b ? db[0] : db[1];
    if (k != kb || dy.size() != 2 || dy[1] != cols) return c.fail("shapes do not match");
    const int cv = n.input(2);
    if (cv >= 0) {
      if (!n.is_constant(cv) || !n.is_float_tensor(cv)) return c.fail("C must be a constant");
      const Dims dc = n.dims(cv);
      if (dc.numel() != cols || dc.size() > 2 || (dc.size() == 2 && dc[0] != 1)) {
        return c.fail("C must be a row of N values");
      }
    }
    return Status::ok();
  }
  if (da.size() < 2 || db.size() < 2 || da.size() > 4 || db.size() > 4) {
    return c.fail("MatMul operands must be rank 2 to 4");
  }
  if (da.back() != db[db.size() - 2]) return c.fail("inner dims differ");
  if (db.size() == 2 && n.is_constant(b)) return Status::ok();  // weights path
  if (da.size() != db.size()) return c.fail("activation operands of different ranks");
  for (size_t i = 0; i + 2 < da.size(); ++i) {
    if (da[i] != db[i] && da[i] != 1 && db[i] != 1) return c.fail("batch dims do not broadcast");
  }
  return Status::ok();
}

Status check_layer_norm(const Checker& c) {
  const NodeView& n = c.n;
  const Dims dx = n.dims(n.input(0));
  const Result<ir::LayerNormalizationAttrs> attrs =
      ir::LayerNormalizationAttrs::read(ir::AttrView(&n.node()));
  if (!attrs.ok()) return c.fail(attrs.status().message());  // names the attribute and types
  const int64_t axis = attrs->axis;
  const float epsilon = attrs->epsilon;
  const int64_t r = static_cast<int64_t>(dx.size());
  if (r < 1) return c.fail("input must have rank >= 1");
  if (axis < -r || axis >= r) return c.fail("axis out of range");
  if (!(epsilon >= 0.0f) || std::isinf(epsilon)) return c.fail("epsilon must be finite and >= 0");
  if (n.num_inputs() < 2 || n.num_inputs() > 3 || n.input(1) < 0) {
    return c.fail("expects X, Scale and an optional B");
  }
  if (n.dims(n.output(0)) != dx) return c.fail("output shape differs from the input's");
  const Dims norm(dx.span().subspan(static_cast<size_t>(axis < 0 ? axis + r : axis)));
  for (int i = 1; i < n.num_inputs(); ++i) {
    const int p = n.input(i);
    if (p < 0) continue;
    if (!n.is_constant(p)) return c.fail("Scale and B must be constants");
    if (!broadcastable(n.dims(p), norm)) {
      return c.fail("Scale or B does not broadcast to the normalized shape X.shape[axis:]");
    }
  }
  return Status::ok();
}

Status check_conv_transpose(const Checker& c) {
  const NodeView& n = c.n;
  const Dims dx = n.dims(n.input(0)), dy = n.dims(n.output(0));
  const int w = n.input(1), b = n.input(2);
  if (w < 0 || !n.is_constant(w)) return c.fail("weights must be a constant");
  if (n.num_inputs() > 3) return c.fail("too many inputs");
  const Dims dw = n.dims(w);
  if (dx.size() < 3 || dx.size() > 5) {
    return c.fail("only 1-D, 2-D and 3-D ConvTranspose is lowered");
  }
  if (dw.size() != dx.size() || dy.size() != dx.size()) {
    return c.fail("weights or output rank differs from the input's");
  }
  ir::ConvTransposeAttrs attrs;
  if (!n.attrs(&attrs)) return c.fail("an attribute has the wrong type");
  const int64_t group = attrs.group;
  if (group < 1 || dx[1] % group != 0 || dw[0] != dx[1]) {
    return c.fail("channels do not match the group count");
  }
  const int64_t cout = dw[1] * group;
  if (dy[0] != dx[0] || dy[1] != cout) return c.fail("output shape does not match");
  if (b >= 0 && (!n.is_constant(b) || n.dims(b).numel() != cout)) {
    return c.fail("bias must be a constant of Cout values");
  }
  DeconvWindow win;
  const char* why = nullptr;
  if (!read_deconv_window(n, &win, &why)) return c.fail(why);
  for (int d = 0; d < win.spatial; ++d) {
    const int64_t extent = (win.kernel[d] - 1) * (win.dilation[d] + 1) + 1;
    const int64_t full = win.stride[d] * (dx[2 + d] - 1) + win.output_padding[d] + extent;
    if (full - win.pad_begin[d] - win.pad_end[d] != dy[2 + static_cast<size_t>(d)]) {
      return c.fail("output size does not match the window");
    }
  }
  return Status::ok();
}

Status check_slice(const Checker& c) {
  const NodeView& n = c.n;
  if (n.num_inputs() != 1) return c.fail("starts, ends, axes or steps given as inputs");
  SliceSpec spec;
  const char* why = nullptr;
  if (!read_slice(n, &spec, &why)) return c.fail(why);
  if (Dims(spec.size) != n.dims(n.output(0))) {
    return c.fail("output shape does not match the slice");
  }
  return Status::ok();
}

Status check_split(const Checker& c) {
  const NodeView& n = c.n;
  if (n.num_inputs() != 1) return c.fail("split sizes given as an input");
  const Dims dx = n.dims(n.input(0));
  const int64_t r = static_cast<int64_t>(dx.size());
  ir::SplitAttrs attrs;
  if (!n.attrs(&attrs)) return c.fail("an attribute has the wrong type");
  int64_t axis = attrs.axis;
  const int64_t num_outputs = attrs.num_outputs;
  const Span<const int64_t> split = attrs.split;
  if (r < 1 || axis < -r || axis >= r) return c.fail("axis out of range");
  if (axis < 0) axis += r;
  if (!split.empty() && split.size() != static_cast<size_t>(n.num_outputs())) {
    return c.fail("split has a different length than the outputs");
  }
  if (num_outputs != 0 && num_outputs != n.num_outputs()) {
    return c.fail("num_outputs differs from the number of outputs");
  }
  int64_t total = 0;
  for (int i = 0; i < n.num_outputs(); ++i) {
    Dims dy = n.dims(n.output(i));
    if (dy.size() != dx.size()) return c.fail("outputs must have the input's rank");
    if (!split.empty() && split[static_cast<size_t>(i)] != dy[static_cast<size_t>(axis)]) {
      return c.fail("split does not match the output sizes");
    }
    total += dy[static_cast<size_t>(axis)];
    dy[static_cast<size_t>(axis)] = dx[static_cast<size_t>(axis)];
    if (dy != dx) return c.fail("outputs differ from the input outside the split axis");
  }
  if (total != dx[static_cast<size_t>(axis)]) return c.fail("outputs do not add up to the input");
  return Status::ok();
}

Status check_pad(const Checker& c) {
  const NodeView& n = c.n;
  if (n.num_inputs() != 1) return c.fail("pads or value given as inputs");
  ir::PadAttrs attrs;
  if (!n.attrs(&attrs)) return c.fail("an attribute has the wrong type");
  if (attrs.mode != "constant") return c.fail("only mode 'constant' is lowered");
  DimVector begin, end;
  const char* why = nullptr;
  if (!read_pads(n, &begin, &end, &why)) return c.fail(why);
  const Dims dx = n.dims(n.input(0)), dy = n.dims(n.output(0));
  if (dy.size() != dx.size()) return c.fail("output rank differs from the input's");
  for (size_t d = 0; d < dx.size(); ++d) {
    if (begin[d] < 0 || end[d] < 0) return c.fail("negative pads (cropping) are not lowered");
    if (dx[d] + begin[d] + end[d] != dy[d]) return c.fail("output shape does not match the pads");
  }
  return Status::ok();
}

Status check_prelu(const Checker& c) {
  const NodeView& n = c.n;
  if (n.num_inputs() != 2 || n.input(1) < 0) return c.fail("expects X and slope");
  const Dims dx = n.dims(n.input(0));
  if (n.dims(n.output(0)) != dx) return c.fail("output shape differs from the input's");
  if (!broadcastable(n.dims(n.input(1)), dx)) return c.fail("slope does not broadcast to X");
  return Status::ok();
}

Status check_batch_norm(const Checker& c) {
  const NodeView& n = c.n;
  const Dims dx = n.dims(n.input(0));
  ir::BatchNormalizationAttrs attrs;
  if (!n.attrs(&attrs)) return c.fail("an attribute has the wrong type");
  const int64_t training = attrs.training_mode;
  const float epsilon = attrs.epsilon;
  if (training != 0) return c.fail("training_mode is not lowered (inference only)");
  if (!(epsilon >= 0.0f) || std::isinf(epsilon)) return c.fail("epsilon must be finite and >= 0");
  if (dx.size() < 2 || dx.size() > 5) return c.fail("X must have rank 2 to 5 (N, C, ...)");
  if (n.dims(n.output(0)) != dx) return c.fail("output shape differs from the input's");
  if (n.num_inputs() != 5) return c.fail("expects X, scale, B, mean and var");
  for (int i = 1; i < 5; ++i) {
    const int p = n.input(i);
    if (p < 0 || !n.is_constant(p)) return c.fail("scale, B, mean and var must be constants");
    const Dims dp = n.dims(p);
    if (dp.size() != 1 || dp[0] != dx[1]) {
      return c.fail("scale, B, mean and var must have C values");
    }
  }
  return Status::ok();
}

}  // namespace

bool read_slice(const NodeView& n, SliceSpec* out, const char** why) {
  const Dims dx = n.dims(n.input(0));
  const size_t rank = dx.size();
  ir::SliceAttrs attrs;
  if (!n.attrs(&attrs)) {
    *why = "an attribute has the wrong type";
    return false;
  }
  const Span<const int64_t> starts = attrs.starts, ends = attrs.ends, axes = attrs.axes,
                            steps = attrs.steps;
  const size_t count = starts.size();
  if (ends.size() != count || (!axes.empty() && axes.size() != count) ||
      (!steps.empty() && steps.size() != count) || count > rank) {
    *why = "starts, ends, axes and steps of different lengths";
    return false;
  }
  SliceSpec s;
  s.start.assign(rank, 0);
  s.step.assign(rank, 1);
  s.size.assign(dx.begin(), dx.end());
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < count; ++i) {
    int64_t d = axes.empty() ? static_cast<int64_t>(i) : axes[i];
    if (d < 0) d += static_cast<int64_t>(rank);
    if (d < 0 || d >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(d)]) {
      *why = "an axis is out of range or repeated";
      return false;
    }
    const size_t a = static_cast<size_t>(d);
    seen[a] = true;
    const int64_t step = steps.empty() ? 1 : steps[i];
    if (step < 1) {
      *why = step == 0 ? "a step is 0" : "negative steps are not lowered";
      return false;
    }
    const int64_t dim = dx[a];
    int64_t b = starts[i], e = ends[i];
    if (b < 0) b += dim;
    if (e < 0) e += dim;
    b = std::clamp<int64_t>(b, 0, dim);
    e = std::clamp<int64_t>(e, 0, dim);
    s.start[a] = b;
    s.step[a] = step;
    s.size[a] = e > b ? 1 + (e - b - 1) / step : 0;
  }
  *out = std::move(s);
  return true;
}

bool read_pads(const NodeView& n, DimVector* begin, DimVector* end, const char** why) {
  const size_t rank = n.dims(n.input(0)).size();
  ir::PadAttrs attrs;
  if (!n.attrs(&attrs)) {
    *why = "an attribute has the wrong type";
    return false;
  }
  const Span<const int64_t> pads = attrs.pads, axes = attrs.axes;
  const size_t count = axes.empty() ? rank : axes.size();
  if (count > rank || (!pads.empty() && pads.size() != 2 * count)) {
    *why = "pads or axes of the wrong length";
    return false;
  }
  begin->assign(rank, 0);
  end->assign(rank, 0);
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < count; ++i) {
    int64_t d = axes.empty() ? static_cast<int64_t>(i) : axes[i];
    if (d < 0) d += static_cast<int64_t>(rank);
    if (d < 0 || d >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(d)]) {
      *why = "an axis is out of range or repeated";
      return false;
    }
    seen[static_cast<size_t>(d)] = true;
    if (!pads.empty()) {
      (*begin)[static_cast<size_t>(d)] = pads[i];
      (*end)[static_cast<size_t>(d)] = pads[count + i];
    }
  }
  return true;
}

bool read_deconv_window(const NodeView& n, DeconvWindow* out, const char** why) {
  DeconvWindow w;
  const Dims dx = n.dims(n.input(0)), dw = n.dims(n.input(1));
  if (dx.size() < 3 || dx.size() > 5 || dw.size() != dx.size()) {
    *why = "only 1-D, 2-D and 3-D ConvTranspose is lowered";
    return false;
  }
  const size_t sp = dx.size() - 2;
  w.spatial = static_cast<int>(sp);
  ir::ConvTransposeAttrs attrs;
  if (!n.attrs(&attrs)) {
    *why = "an attribute has the wrong type";
    return false;
  }
  const Span<const int64_t> kernel = attrs.kernel_shape, strides = attrs.strides,
                            dilations = attrs.dilations, pads = attrs.pads,
                            output_padding = attrs.output_padding,
                            output_shape = attrs.output_shape;
  const std::string_view auto_pad = attrs.auto_pad;
  const bool valid = auto_pad == "VALID";
  if (auto_pad != "NOTSET" && !valid && !auto_pad.empty()) {
    *why = "auto_pad other than NOTSET or VALID";
    return false;
  }
  if ((!kernel.empty() && kernel.size() != sp) || (!strides.empty() && strides.size() != sp) ||
      (!dilations.empty() && dilations.size() != sp) || (!pads.empty() && pads.size() != 2 * sp) ||
      (!output_padding.empty() && output_padding.size() != sp) ||
      (!output_shape.empty() && output_shape.size() != sp)) {
    *why =
        "kernel_shape, strides, dilations, pads, output_padding or output_shape of the wrong "
        "length";
    return false;
  }
  for (size_t d = 0; d < sp; ++d) {
    w.kernel[d] = dw[2 + d];
    if (!kernel.empty() && kernel[d] != w.kernel[d]) {
      *why = "kernel_shape does not match the weights";
      return false;
    }
    w.stride[d] = strides.empty() ? 1 : strides[d];
    const int64_t dilation = dilations.empty() ? 1 : dilations[d];
    w.output_padding[d] = output_padding.empty() ? 0 : output_padding[d];
    w.pad_begin[d] = pads.empty() || valid ? 0 : pads[d];
    w.pad_end[d] = pads.empty() || valid ? 0 : pads[sp + d];
    if (w.stride[d] < 1 || dilation < 1) {
      *why = "stride or dilation < 1";
      return false;
    }
    if (w.pad_begin[d] < 0 || w.pad_end[d] < 0) {
      *why = "negative padding";
      return false;
    }
    if (w.output_padding[d] < 0 || w.output_padding[d] >= w.stride[d]) {
      *why = "output_padding must be in [0, stride)";
      return false;
    }
    w.dilation[d] = dilation - 1;
    if (!output_shape.empty()) {
      // ONNX: the pads follow from the requested output size.
      const int64_t full =
          w.stride[d] * (dx[2 + d] - 1) + w.output_padding[d] + (w.kernel[d] - 1) * dilation + 1;
      const int64_t total = full - output_shape[d];
      if (output_shape[d] < 1 || total < 0) {
        *why = "output_shape larger than the full output";
        return false;
      }
      w.pad_begin[d] = total - total / 2;
      w.pad_end[d] = total / 2;
    }
  }
  *out = w;
  return true;
}

Window read_window(const NodeView& n) {
  Window w;
  // The node passed check_node: its attributes have their types.
  ir::WindowAttrs win;
  ir::ConvAttrs conv;
  ir::PoolAttrs pool;
  if (n.op() == fb::OpType::Conv) {
    n.attrs(&conv);
    win = ir::window_of(conv);
  } else {
    n.attrs(&pool);
    win = ir::window_of(pool);
  }
  std::vector<int64_t> kernel(win.kernel_shape.begin(), win.kernel_shape.end());
  const Span<const int64_t> strides = win.strides, dilations = win.dilations, pads = win.pads;
  const std::string_view auto_pad = win.auto_pad;
  if (kernel.size() != 2 && n.op() == fb::OpType::Conv) {
    const Dims wd = n.dims(n.input(1));
    if (wd.size() == 4) kernel = {wd[2], wd[3]};
  }
  const Dims x = n.dims(n.input(0));
  const Dims y = n.dims(n.output(0));
  for (size_t d = 0; d < 2; ++d) {
    w.kernel[d] = kernel.size() == 2 ? kernel[d] : 1;
    w.stride[d] = strides.size() == 2 ? strides[d] : 1;
    w.dilation[d] = (dilations.size() == 2 ? dilations[d] : 1) - 1;
    const bool valid = auto_pad == "VALID";
    w.pad_begin[d] = pads.size() == 4 && !valid ? pads[d] : 0;
    w.pad_end[d] = pads.size() == 4 && !valid ? pads[2 + d] : 0;
    if (x.size() == 4 && y.size() == 4) {
      // ceil_mode: grow the end padding until the last window fits (never shrink it).
      const int64_t span = (w.kernel[d] - 1) * (w.dilation[d] + 1) + 1;
      const int64_t needed = (y[2 + d] - 1) * w.stride[d] + span - x[2 + d] - w.pad_begin[d];
      if (needed > w.pad_end[d]) w.pad_end[d] = needed;
    }
  }
  return w;
}

OpLowering lowering_of(fb::OpType op) {
  using L = Lowering;
  switch (op) {
    case fb::OpType::Conv:
      return {L::Conv};
    case fb::OpType::ConvTranspose:
      return {L::ConvTranspose};
    case fb::OpType::Gemm:
    case fb::OpType::MatMul:
      return {L::MatMul};
    case fb::OpType::MaxPool:
    case fb::OpType::AveragePool:
      return {L::Pool};
    case fb::OpType::GlobalAveragePool:
      return {L::GlobalPool};
    case fb::OpType::ReduceMean:
      return {L::SpatialMean};
    case fb::OpType::Add:
    case fb::OpType::Sub:
    case fb::OpType::Mul:
    case fb::OpType::Div:
    case fb::OpType::Min:
    case fb::OpType::Max:
      return {L::Binary};
    case fb::OpType::Relu:
      return {L::Eltwise, dnnl_eltwise_relu};
    case fb::OpType::Sigmoid:
      return {L::Eltwise, dnnl_eltwise_logistic};
    case fb::OpType::Tanh:
      return {L::Eltwise, dnnl_eltwise_tanh};
    case fb::OpType::HardSwish:
      return {L::Eltwise, dnnl_eltwise_hardswish};
    case fb::OpType::Mish:
      return {L::Eltwise, dnnl_eltwise_mish};
    case fb::OpType::Sqrt:
      return {L::Eltwise, dnnl_eltwise_sqrt};
    case fb::OpType::Exp:
      return {L::Eltwise, dnnl_eltwise_exp};
    case fb::OpType::Abs:
      return {L::Eltwise, dnnl_eltwise_abs};
    case fb::OpType::Neg:
      return {L::Eltwise, dnnl_eltwise_linear, -1.0f};
    case fb::OpType::LeakyRelu:
    case fb::OpType::Clip:
    case fb::OpType::Elu:
    case fb::OpType::Gelu:
    case fb::OpType::HardSigmoid:
      return {L::Eltwise};
    case fb::OpType::Softmax:
      return {L::Softmax};
    case fb::OpType::Concat:
      return {L::Concat};
    case fb::OpType::Identity:
    case fb::OpType::Reshape:
    case fb::OpType::Flatten:
    case fb::OpType::Squeeze:
    case fb::OpType::Unsqueeze:
      return {L::Reshape};
    case fb::OpType::Transpose:
      return {L::Transpose};
    case fb::OpType::ChannelShuffle:
      return {L::Shuffle};
    case fb::OpType::LayerNormalization:
      return {L::LayerNorm};
    case fb::OpType::Slice:
      return {L::Slice};
    case fb::OpType::Split:
      return {L::Split};
    case fb::OpType::Pad:
      return {L::Pad};
    case fb::OpType::PRelu:
      return {L::PRelu};
    case fb::OpType::BatchNormalization:
      return {L::BatchNorm};
    case fb::OpType::Pow:
    case fb::OpType::Erf:
    case fb::OpType::ReduceSum:
    case fb::OpType::ReduceMax:
    case fb::OpType::Gather:
    case fb::OpType::Resize:
    case fb::OpType::Cast:
    case fb::OpType::Reciprocal:
    case fb::OpType::Where:
    case fb::OpType::Equal:
    case fb::OpType::Less:
    case fb::OpType::Greater:
      return {L::None};
  }
  return {L::None};
}

bool eltwise_of(const NodeView& n, EltwiseSpec* out) {
  const OpLowering row = lowering_of(n.op());
  if (row.lowering != Lowering::Eltwise) return false;
  EltwiseSpec s;
  s.algorithm = row.eltwise;
  s.alpha = row.alpha;
  if (n.op() == fb::OpType::LeakyRelu) {
    ir::LeakyReluAttrs attrs;
    if (!n.attrs(&attrs)) return false;
    s.algorithm = dnnl_eltwise_relu;
    s.alpha = attrs.alpha;
  } else if (n.op() == fb::OpType::Clip) {
    ir::ClipAttrs attrs;
    if (!n.attrs(&attrs)) return false;
    s.algorithm = dnnl_eltwise_clip;
    s.alpha = std::max(attrs.min, -FLT_MAX);
    s.beta = std::min(attrs.max, FLT_MAX);
    if (s.alpha > s.beta) s.alpha = s.beta;  // ONNX: min > max gives max
  } else if (n.op() == fb::OpType::Elu) {
    ir::EluAttrs attrs;
    if (!n.attrs(&attrs)) return false;
    s.algorithm = dnnl_eltwise_elu;
    s.alpha = attrs.alpha;
  } else if (n.op() == fb::OpType::Gelu) {
    ir::GeluAttrs attrs;
    if (!n.attrs(&attrs)) return false;
    const std::string_view approx = attrs.approximate;
    if (approx == "tanh") {
      s.algorithm = dnnl_eltwise_gelu_tanh;
    } else if (approx == "none" || approx.empty()) {
      s.algorithm = dnnl_eltwise_gelu_erf;
    } else {
      return false;
    }
  }
  if (s.algorithm == 0) return false;  // HardSigmoid: two steps (the graph builder)
  *out = s;
  return true;
}

Status check_node(const NodeView& n) {
  const Checker c{n};
  if (n.num_outputs() < 1) return c.fail("no output");
  for (int i = 0; i < n.num_outputs(); ++i) {
    if (!n.is_float_tensor(n.output(i))) return c.fail("outputs must be float32 tensors");
  }
  if (n.num_outputs() != 1 && n.op() != fb::OpType::Split) {
    if (n.op() == fb::OpType::LayerNormalization) {
      return c.fail("the optional Mean and InvStdDev outputs are not lowered");
    }
    return c.fail("more than one output");
  }
  for (int i = 0; i < n.num_outputs(); ++i) {
    const Dims d = n.dims(n.output(i));
    if (d.size() > static_cast<size_t>(kMaxRank)) return c.fail("rank above 6");
    for (int64_t e : d) {
      if (e < 1) return c.fail("empty tensor");
    }
  }
  const int out = n.output(0);
  const Dims dy = n.dims(out);
  // Inputs: float32 tensors, present unless optional (handled per op).
  for (int i = 0; i < n.num_inputs(); ++i) {
    const int v = n.input(i);
    if (v >= 0 && (!n.is_float_tensor(v) || n.dims(v).size() > static_cast<size_t>(kMaxRank))) {
      return c.fail("inputs must be float32 tensors of rank <= 6");
    }
  }
  switch (n.node().activation()) {
    case fb::Activation::None:
    case fb::Activation::Relu:
      break;
    case fb::Activation::Clip:
      if (std::isnan(n.node().activation_min()) || std::isnan(n.node().activation_max()) ||
          n.node().activation_min() > n.node().activation_max()) {
        return c.fail("invalid fused Clip bounds");
      }
      break;
    default:
      return c.fail("unknown fused activation");
  }
  const int x = n.input(0);
  if (x < 0) return c.fail("missing input");
  const Dims dx = n.dims(x);
  const fb::OpType op = n.op();
  switch (lowering_of(op).lowering) {
    case Lowering::Conv: {
      const int w = n.input(1), b = n.input(2);
      if (w < 0 || !n.is_constant(w)) return c.fail("weights must be a constant");
      const Dims dw = n.dims(w);
      ir::ConvAttrs attrs;
      if (!n.attrs(&attrs)) return c.fail("an attribute has the wrong type");
      const int64_t group = attrs.group;
      if (dx.size() != 4 || dw.size() != 4) return c.fail("only 2-D convolution is lowered");
      if (group < 1 || dx[1] % group != 0 || dw[0] % group != 0 || dw[1] * group != dx[1]) {
        return c.fail("channels do not match the group count");
      }
      if (dy[1] != dw[0] || dy[0] != dx[0]) return c.fail("output shape does not match");
      if (b >= 0 && (!n.is_constant(b) || n.dims(b).numel() != dw[0])) {
        return c.fail("bias must be a constant of Cout values");
      }
      if (n.num_inputs() > 3) return c.fail("too many inputs");
      return check_window(c, true);
    }
    case Lowering::MatMul:
      if (n.input(1) < 0) return c.fail("missing input");
      return check_matmul_like(c);
    case Lowering::Pool: {
      ir::PoolAttrs attrs;
      if (!n.attrs(&attrs) || attrs.storage_order != 0) {
        return c.fail("storage_order != 0");
      }
      return check_window(c, false);
    }
    case Lowering::GlobalPool:
      if (dx.size() != 4) return c.fail("only rank-4 input");
      return Status::ok();
    case Lowering::SpatialMean: {
      ir::ReduceAttrs attrs;
      if (!n.attrs(&attrs)) return c.fail("an attribute has the wrong type");
      const std::vector<int64_t> axes(attrs.axes.begin(), attrs.axes.end());
      if (n.num_inputs() != 1) return c.fail("axes given as an input");
      if (dx.size() != 4 || axes.size() != 2) return c.fail("only the spatial mean of NCHW");
      std::vector<int64_t> a = axes;
      for (int64_t& v : a) v = v < 0 ? v + 4 : v;
      std::sort(a.begin(), a.end());
      if (a[0] != 2 || a[1] != 3) return c.fail("only the spatial mean of NCHW");
      return Status::ok();
    }
    case Lowering::Binary: {
      if (n.num_inputs() != 2 || n.input(1) < 0) return c.fail("needs exactly two inputs");
      const Dims d1 = n.dims(n.input(1));
      const bool full0 = dx.size() == dy.size() && dx == dy;
      const bool full1 = d1.size() == dy.size() && d1 == dy;
      if (full0 && broadcastable(d1, dy)) return Status::ok();
      if (full1 && broadcastable(dx, dy) && is_commutative(op)) return Status::ok();
      return c.fail("only one operand may be broadcast (the second, or either if commutative)");
    }
    case Lowering::Eltwise: {
      if (n.num_inputs() != 1) return c.fail("expects one input");
      if (dx != dy) return c.fail("output shape differs from the input's");
      EltwiseSpec s;
      if (op == fb::OpType::HardSigmoid) {
        ir::HardSigmoidAttrs attrs;
        if (!n.attrs(&attrs)) return c.fail("an attribute has the wrong type");
        return Status::ok();
      }
      if (!eltwise_of(n, &s)) return c.fail("an attribute has the wrong type or value");
      return Status::ok();
    }
    case Lowering::Softmax: {
      ir::SoftmaxAttrs attrs;
      if (!n.attrs(&attrs)) return c.fail("axis has the wrong type");
      const int64_t axis = attrs.axis;
      const int64_t r = static_cast<int64_t>(dx.size());
      if (axis < -r || axis >= r || dx != dy) return c.fail("axis out of range");
      return Status::ok();
    }
    case Lowering::LayerNorm:
      return check_layer_norm(c);
    case Lowering::ConvTranspose:
      return check_conv_transpose(c);
    case Lowering::Slice:
      return check_slice(c);
    case Lowering::Split:
      return check_split(c);
    case Lowering::Pad:
      return check_pad(c);
    case Lowering::PRelu:
      return check_prelu(c);
    case Lowering::BatchNorm:
      return check_batch_norm(c);
    case Lowering::Concat: {
      ir::ConcatAttrs attrs;
      if (!n.attrs(&attrs)) return c.fail("axis has the wrong type or is missing");
      const int64_t axis = attrs.axis;
      const int64_t r = static_cast<int64_t>(dy.size());
      if (axis < -r || axis >= r) return c.fail("axis out of range");
      for (int i = 0; i < n.num_inputs(); ++i) {
        if (n.input(i) < 0 || n.dims(n.input(i)).size() != dy.size()) {
          return c.fail("inputs must have the output's rank");
        }
      }
      return Status::ok();
    }
    case Lowering::Reshape:
      for (int i = 1; i < n.num_inputs(); ++i) {
        if (n.input(i) >= 0 && !n.is_constant(n.input(i))) return c.fail("shape input not constant");
      }
      if (dx.numel() != dy.numel()) return c.fail("element counts differ");
      return Status::ok();
    case Lowering::Transpose: {
      ir::TransposeAttrs attrs;
      if (!n.attrs(&attrs)) return c.fail("perm has the wrong type");
      const Span<const int64_t> perm = attrs.perm;
      if (!perm.empty()) {
        if (perm.size() != dx.size()) return c.fail("perm of the wrong length");
        std::vector<int64_t> sorted(perm.begin(), perm.end());
        std::sort(sorted.begin(), sorted.end());
        for (size_t i = 0; i < sorted.size(); ++i) {
          if (sorted[i] != static_cast<int64_t>(i)) return c.fail("perm is not a permutation");
        }
      }
      if (dx.numel() != dy.numel() || dx.size() != dy.size()) return c.fail("shapes do not match");
      return Status::ok();
    }
    case Lowering::Shuffle: {
      ir::ChannelShuffleAttrs attrs;
      if (!n.attrs(&attrs)) return c.fail("group has the wrong type or is missing");
      if (dx.size() < 2) return c.fail("input must be [N, C, ...]");
      if (attrs.group < 1 || dx[1] % attrs.group != 0) {
        return c.fail("group does not divide the channels");
      }
      if (dx != dy) return c.fail("output shape differs from the input's");
      return Status::ok();
    }
    case Lowering::None:
      return c.fail("op not lowered by this backend");
  }
  return c.fail("op not lowered by this backend");
}

bool onednn_supports(const fb::Graph& graph, const fb::Node& node, std::string* why) {
  Status s = check_node(NodeView(graph, node));
  if (!s.is_ok() && why != nullptr) *why = s.message();
  return s.is_ok();
}

}  // namespace tessera::onednn
