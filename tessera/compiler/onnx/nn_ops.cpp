// ONNX importers of the network layers: Conv, ConvTranspose, Gemm, the pools, the reductions,
// Softmax and the normalisations. Attributes are read through the typed structs of
// tessera/ir/op_attrs.h, so their defaults are the op table's.
#include <algorithm>
#include <vector>

#include "tessera/compiler/onnx/importer.h"
#include "tessera/compiler/onnx/op_importers.h"
#include "tessera/compiler/shape_inference.h"
#include "tessera/ir/op_attrs.h"

namespace tessera::compiler::importer {
namespace {

using fb::OpType;

// ONNX Softmax's axis before opset 13, when the attribute is absent (the table's default is
// opset 13's).
constexpr int64_t kSoftmaxAxisBeforeOpset13 = 1;
// The axis of the 2-D form Softmax before opset 13 normalises over.
constexpr int64_t kSoftmax2dAxis = 1;
// GlobalMaxPool keeps the reduced spatial dims as size 1.
constexpr int64_t kKeepDims = 1;

/// `list` as a vector, or `n` copies of `fill` when it is empty (the table's "empty means").
std::vector<int64_t> or_fill(Span<const int64_t> list, size_t n, int64_t fill) {
  if (list.empty()) return std::vector<int64_t>(n, fill);
  return std::vector<int64_t>(list.begin(), list.end());
}

/// Explicit pads for `auto_pad` (NOTSET keeps `pads`, VALID is no padding, SAME_* splits what
/// keeps the output at ceil(input / stride)).
Status resolve_auto_pad(Importer& im, std::string_view auto_pad, int x,
                        const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                        const std::vector<int64_t>& dilations, std::vector<int64_t>* pads) {
  const size_t n = kernel.size();
  if (auto_pad == "NOTSET") {
    if (pads->empty()) pads->assign(2 * n, 0);
    if (pads->size() != 2 * n)
      return im.node_error(Error::InvalidProgram, "pads has %zu entries (need %zu)", pads->size(),
                           2 * n);
    return Status::ok();
  }
  pads->assign(2 * n, 0);
  if (auto_pad == "VALID") return Status::ok();
  const std::string mode(auto_pad);
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") {
    return im.node_error(Error::InvalidProgram, "unknown auto_pad '%s'", mode.c_str());
  }
  for (size_t i = 0; i < n; ++i) {
    const SymExpr& d = im.dims(x)[2 + i];
    if (!d.is_const()) {
      return im.unsupported_use("auto_pad %s along a symbolic spatial dim (%s)", mode.c_str(),
                                d.to_string(&im.graph().symbols).c_str());
    }
    const int64_t in = d.const_value();
    const int64_t out = (in + strides[i] - 1) / strides[i];
    const int64_t total =
        std::max<int64_t>(0, (out - 1) * strides[i] + dilations[i] * (kernel[i] - 1) + 1 - in);
    const int64_t small = total / 2, big = total - small;
    (*pads)[i] = auto_pad == "SAME_UPPER" ? small : big;
    (*pads)[n + i] = auto_pad == "SAME_UPPER" ? big : small;
  }
  return Status::ok();
}

/// The attributes Conv and ConvTranspose share, and ConvTranspose's own (empty for Conv). The
/// views live until the Importer's next attrs().
struct ConvParams {
  ir::WindowAttrs window;
  int64_t group;
  Span<const int64_t> output_padding, output_shape;
};

Result<ConvParams> conv_params(Importer& im, OpType op) {
  if (op == OpType::ConvTranspose) {
    TESSERA_ASSIGN_OR_RETURN(auto a, im.attrs<ir::ConvTransposeAttrs>(op));
    return ConvParams{ir::window_of(a), a.group, a.output_padding, a.output_shape};
  }
  TESSERA_ASSIGN_OR_RETURN(auto a, im.attrs<ir::ConvAttrs>(op));
  return ConvParams{ir::window_of(a), a.group, {}, {}};
}

Status import_conv(Importer& im, OpType op) {
  const bool transpose = op == OpType::ConvTranspose;
  TESSERA_ASSIGN_OR_RETURN(int x, im.need(0));
  TESSERA_ASSIGN_OR_RETURN(int w, im.need(1));
  const int b = im.in(2);
  if (im.rank(x) < 3 || im.rank(w) != im.rank(x)) {
    return im.node_error(Error::InvalidProgram,
                         "input %s and weight %s must have the same rank >= 3",
                         im.graph().dims_string(x).c_str(), im.graph().dims_string(w).c_str());
  }
  TESSERA_ASSIGN_OR_RETURN(ConvParams a, conv_params(im, op));
  const size_t n = im.rank(x) - 2;
  std::vector<int64_t> kernel;
  for (size_t i = 0; i < n; ++i) {
    if (!im.dims(w)[2 + i].is_const())
      return im.node_error(Error::InvalidProgram, "symbolic kernel size");
    kernel.push_back(im.dims(w)[2 + i].const_value());
  }
  const Span<const int64_t> ks = a.window.kernel_shape;
  if (!ks.empty() && !std::equal(ks.begin(), ks.end(), kernel.begin(), kernel.end())) {
    return im.node_error(Error::InvalidProgram, "kernel_shape disagrees with the weight %s",
                         im.graph().dims_string(w).c_str());
  }
  std::vector<int64_t> strides = or_fill(a.window.strides, n, 1);
  std::vector<int64_t> dilations = or_fill(a.window.dilations, n, 1);
  std::vector<int64_t> pads(a.window.pads.begin(), a.window.pads.end());
  if (strides.size() != n || dilations.size() != n) {
    return im.node_error(Error::InvalidProgram, "strides/dilations must have %zu entries", n);
  }
  for (size_t i = 0; i < n; ++i) {
    if (strides[i] < 1 || dilations[i] < 1 || strides[i] > kMaxWindowValue ||
        dilations[i] > kMaxWindowValue || kernel[i] < 1 || kernel[i] > kMaxWindowValue) {
      return im.node_error(Error::InvalidProgram,
                           "kernel size, strides and dilations must be in [1, 2^31)");
    }
  }
  const int64_t group = a.group;
  const std::string_view auto_pad = a.window.auto_pad;
  std::vector<ir::Attr> attrs;
  if (!transpose) {
    TESSERA_RETURN_IF_ERROR(resolve_auto_pad(im, auto_pad, x, kernel, strides, dilations, &pads));
  } else {
    std::vector<int64_t> out_pad = or_fill(a.output_padding, n, 0);
    if (out_pad.size() != n)
      return im.node_error(Error::InvalidProgram, "output_padding must have %zu entries", n);
    std::vector<int64_t> output_shape(a.output_shape.begin(), a.output_shape.end());
    const bool has_output_shape = !output_shape.empty();
    if (output_shape.size() == n + 2)
      output_shape.erase(output_shape.begin(), output_shape.begin() + 2);
    if (has_output_shape && output_shape.size() != n) {
      return im.node_error(Error::InvalidProgram, "output_shape must have %zu or %zu entries", n,
                           n + 2);
    }
    if (has_output_shape || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      pads.assign(2 * n, 0);
      for (size_t i = 0; i < n; ++i) {
        const SymExpr& d = im.dims(x)[2 + i];
        if (!d.is_const())
          return im.unsupported_use("output_shape/auto_pad along a symbolic spatial dim");
        const int64_t in_size = d.const_value();
        const int64_t target = has_output_shape ? output_shape[i] : in_size * strides[i];
        const int64_t total =
            strides[i] * (in_size - 1) + out_pad[i] + (kernel[i] - 1) * dilations[i] + 1 - target;
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
    if (pads.size() != 2 * n)
      return im.node_error(Error::InvalidProgram, "pads must have %zu entries", 2 * n);
    attrs.push_back(ir::Attr::make_ints("output_padding", out_pad));
  }
  for (int64_t p : pads) {
    if (p < 0 || p > kMaxWindowValue)
      return im.node_error(Error::InvalidProgram, "pads must be in [0, 2^31)");
  }
  if (group < 1 || group > kMaxWindowValue)
    return im.node_error(Error::InvalidProgram, "group %lld", static_cast<long long>(group));
  attrs.push_back(ir::Attr::make_ints("strides", strides));
  attrs.push_back(ir::Attr::make_ints("dilations", dilations));
  attrs.push_back(ir::Attr::make_ints("pads", pads));
  attrs.push_back(ir::Attr::make_int("group", group));
  return im.emit1(op, {x, w, b}, std::move(attrs)).status();
}

Status import_gemm(Importer& im, OpType op) {
  TESSERA_ASSIGN_OR_RETURN(int a, im.need(0));
  TESSERA_ASSIGN_OR_RETURN(int b, im.need(1));
  TESSERA_ASSIGN_OR_RETURN(auto g, im.attrs<ir::GemmAttrs>(op));
  return im
      .emit1(op, {a, b, im.in(2)},
             {ir::Attr::make_float("alpha", g.alpha), ir::Attr::make_float("beta", g.beta),
              ir::Attr::make_int("transA", g.transA), ir::Attr::make_int("transB", g.transB)})
      .status();
}

Status import_pool(Importer& im, OpType op) {
  TESSERA_ASSIGN_OR_RETURN(int x, im.need(0));
  if (im.output_used(1)) return im.unsupported_use("the Indices output");
  TESSERA_ASSIGN_OR_RETURN(auto a, im.attrs<ir::PoolAttrs>(op));
  if (a.storage_order != 0) return im.unsupported_use("storage_order=1");
  const std::vector<int64_t> kernel(a.kernel_shape.begin(), a.kernel_shape.end());
  if (kernel.empty() || im.rank(x) != kernel.size() + 2) {
    return im.node_error(Error::InvalidProgram,
                         "kernel_shape must have one entry per spatial dim of %s",
                         im.graph().dims_string(x).c_str());
  }
  const size_t n = kernel.size();
  std::vector<int64_t> strides = or_fill(a.strides, n, 1);
  std::vector<int64_t> dilations = or_fill(a.dilations, n, 1);
  std::vector<int64_t> pads(a.pads.begin(), a.pads.end());
  if (strides.size() != n || dilations.size() != n)
    return im.node_error(Error::InvalidProgram, "strides/dilations size");
  for (size_t i = 0; i < n; ++i) {
    if (kernel[i] < 1 || strides[i] < 1 || dilations[i] < 1 || kernel[i] > kMaxWindowValue ||
        strides[i] > kMaxWindowValue || dilations[i] > kMaxWindowValue) {
      return im.node_error(Error::InvalidProgram,
                           "kernel_shape, strides and dilations must be in [1, 2^31)");
    }
  }
  TESSERA_RETURN_IF_ERROR(resolve_auto_pad(im, a.auto_pad, x, kernel, strides, dilations, &pads));
  for (int64_t p : pads) {
    if (p < 0 || p > kMaxWindowValue)
      return im.node_error(Error::InvalidProgram, "pads must be in [0, 2^31)");
  }
  std::vector<ir::Attr> attrs = {
      ir::Attr::make_ints("kernel_shape", kernel), ir::Attr::make_ints("strides", strides),
      ir::Attr::make_ints("pads", pads), ir::Attr::make_ints("dilations", dilations),
      ir::Attr::make_int("ceil_mode", a.ceil_mode)};
  if (op == OpType::AveragePool)
    attrs.push_back(ir::Attr::make_int("count_include_pad", a.count_include_pad));
  // ONNX before opset 19 lets the last ceil-mode window start in the end padding; PyTorch (and
  // the kernels) do not, so exporters may declare one more output row than PyTorch computes.
  // Follow PyTorch and do not compare this output, or what depends on it, with ONNX's shapes.
  bool diverges = false;
  if (a.ceil_mode != 0) {
    for (size_t i = 0; i < n; ++i) {
      const SymExpr& in = im.dims(x)[2 + i];
      const SymExpr span =
          in + SymExpr(pads[i] + pads[n + i] - (dilations[i] * (kernel[i] - 1) + 1));
      const SymExpr onnx_size = SymExpr::ceil_div(span, SymExpr(strides[i])) + SymExpr(1);
      if (!(onnx_size == window_output_dim(in, kernel[i], strides[i], dilations[i], pads[i],
                                           pads[n + i], true))) {
        diverges = true;
      }
    }
  }
  im.set_shape_diverges(diverges);
  Status st = im.emit1(op, {x}, std::move(attrs)).status();
  im.set_shape_diverges(false);
  return st;
}

/// GlobalMaxPool: ReduceMax over the spatial dims, kept.
Status import_global_max_pool(Importer& im, OpType op) {
  TESSERA_ASSIGN_OR_RETURN(int x, im.need(0));
  std::vector<int64_t> axes;
  for (size_t i = 2; i < im.rank(x); ++i) axes.push_back(static_cast<int64_t>(i));
  return im
      .emit1(op, {x},
             {ir::Attr::make_ints("axes", axes), ir::Attr::make_int("keepdims", kKeepDims)})
      .status();
}

Status import_reduce(Importer& im, OpType op) {
  TESSERA_ASSIGN_OR_RETURN(int x, im.need(0));
  TESSERA_ASSIGN_OR_RETURN(auto a, im.attrs<ir::ReduceAttrs>(op));
  std::vector<int64_t> axes;
  const bool axes_as_input = op == OpType::ReduceSum && im.opset() >= 13;
  if (axes_as_input) {
    if (im.in(1) >= 0) {
      TESSERA_ASSIGN_OR_RETURN(axes, im.const_ints(1, "axes"));
    }
  } else {
    axes.assign(a.axes.begin(), a.axes.end());
  }
  if (axes.empty() && a.noop_with_empty_axes != 0) {
    im.alias(0, x);
    return Status::ok();
  }
  if (axes.empty()) {
    for (size_t i = 0; i < im.rank(x); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  for (int64_t& axis : axes) {
    TESSERA_ASSIGN_OR_RETURN(axis, im.norm_axis(axis, im.rank(x)));
  }
  std::sort(axes.begin(), axes.end());
  return im
      .emit1(op, {x},
             {ir::Attr::make_ints("axes", axes), ir::Attr::make_int("keepdims", a.keepdims)})
      .status();
}

Status import_softmax(Importer& im, OpType op) {
  TESSERA_ASSIGN_OR_RETURN(int x, im.need(0));
  TESSERA_ASSIGN_OR_RETURN(auto a, im.attrs<ir::SoftmaxAttrs>(op));
  const size_t r = im.rank(x);
  const bool legacy = im.opset() < 13;
  const int64_t given = legacy && im.attr("axis") == nullptr ? kSoftmaxAxisBeforeOpset13 : a.axis;
  TESSERA_ASSIGN_OR_RETURN(int64_t axis, im.norm_axis(given, r));
  if (!legacy || axis == static_cast<int64_t>(r) - 1) {
    return im.emit1(op, {x}, {ir::Attr::make_int("axis", axis)}).status();
  }
  // Before opset 13 Softmax normalises over the input coerced to 2-D at `axis`.
  std::vector<SymExpr> flat = {product(im.dims(x), 0, axis), product(im.dims(x), axis)};
  const std::vector<SymExpr> orig = im.dims(x);
  TESSERA_ASSIGN_OR_RETURN(auto r1, im.emit(OpType::Reshape, {x}, {}, {""}, {flat}));
  TESSERA_ASSIGN_OR_RETURN(
      auto r2, im.emit(op, {r1[0]}, {ir::Attr::make_int("axis", kSoftmax2dAxis)}, {""}));
  return im.emit(OpType::Reshape, {r2[0]}, {}, {im.node().output(0)}, {orig}).status();
}

Status import_layer_norm(Importer& im, OpType op) {
  if (im.output_used(1) || im.output_used(2))
    return im.unsupported_use("the Mean/InvStdDev outputs");
  TESSERA_ASSIGN_OR_RETURN(int x, im.need(0));
  TESSERA_ASSIGN_OR_RETURN(int scale, im.need(1));
  TESSERA_ASSIGN_OR_RETURN(auto a, im.attrs<ir::LayerNormalizationAttrs>(op));
  TESSERA_ASSIGN_OR_RETURN(int64_t axis, im.norm_axis(a.axis, im.rank(x)));
  return im
      .emit1(op, {x, scale, im.in(2)},
             {ir::Attr::make_int("axis", axis), ir::Attr::make_float("epsilon", a.epsilon)})
      .status();
}

Status import_batch_norm(Importer& im, OpType op) {
  TESSERA_ASSIGN_OR_RETURN(auto a, im.attrs<ir::BatchNormalizationAttrs>(op));
  if (a.training_mode != 0) return im.unsupported_use("training_mode=1");
  const onnx::NodeProto& node = im.node();
  for (int k = 1; k < node.output_size(); ++k) {
    if (im.output_used(k)) return im.unsupported_use("the running-statistics outputs (training)");
  }
  std::vector<int> inputs;
  for (size_t k = 0; k < 5; ++k) {
    TESSERA_ASSIGN_OR_RETURN(int v, im.need(k));
    inputs.push_back(v);
  }
  // scale, B, mean and var are [C], C the channel dim of X.
  if (im.rank(inputs[0]) < 2) {
    return im.node_error(Error::InvalidProgram, "input X has rank %zu, needs at least 2",
                         im.rank(inputs[0]));
  }
  const SymExpr& channels = im.dims(inputs[0])[1];
  for (size_t k = 1; k < 5; ++k) {
    const std::vector<SymExpr>& d = im.dims(inputs[k]);
    if (d.size() != 1) {
      return im.node_error(Error::InvalidProgram,
                           "input %zu ('%s') has rank %zu, must be 1-D [%s] (the channels of X)", k,
                           node.input(static_cast<int>(k)).c_str(), d.size(),
                           channels.to_string().c_str());
    }
    if (channels.is_const() && d[0].is_const() && d[0].const_value() != channels.const_value()) {
      return im.node_error(
          Error::InvalidProgram, "input %zu ('%s') has %lld elements, X has %lld channels", k,
          node.input(static_cast<int>(k)).c_str(), static_cast<long long>(d[0].const_value()),
          static_cast<long long>(channels.const_value()));
    }
  }
  return im.emit1(op, std::move(inputs), {ir::Attr::make_float("epsilon", a.epsilon)}).status();
}

constexpr OpImporter kRows[] = {
    {"Conv", import_conv, OpType::Conv},
    {"ConvTranspose", import_conv, OpType::ConvTranspose},
    {"Gemm", import_gemm, OpType::Gemm},
    {"MaxPool", import_pool, OpType::MaxPool},
    {"AveragePool", import_pool, OpType::AveragePool},
    {"GlobalMaxPool", import_global_max_pool, OpType::ReduceMax},
    {"ReduceMean", import_reduce, OpType::ReduceMean},
    {"ReduceSum", import_reduce, OpType::ReduceSum},
    {"ReduceMax", import_reduce, OpType::ReduceMax},
    {"Softmax", import_softmax, OpType::Softmax},
    {"LayerNormalization", import_layer_norm, OpType::LayerNormalization},
    {"BatchNormalization", import_batch_norm, OpType::BatchNormalization},
};

}  // namespace

Span<const OpImporter> nn_op_importers() {
  return kRows;
}

}  // namespace tessera::compiler::importer
