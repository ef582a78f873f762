// ONNX importers of the ops that move data without computing on it: Identity and Dropout
// (aliases), Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split, Slice, Gather, Pad,
// Resize and Expand. Shape operands (a Reshape target, Slice bounds, Resize sizes) must be known
// at compile time, possibly as expressions over symbolic dims.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "tessera/compiler/evaluate.h"
#include "tessera/compiler/onnx/importer.h"
#include "tessera/compiler/onnx/op_importers.h"
#include "tessera/compiler/shape_inference.h"
#include "tessera/ir/op_attrs.h"

namespace tessera::compiler::importer {
namespace {

using fb::OpType;

/// Identity and Dropout (inference): output 0 is input 0.
Status import_identity(Importer& im, OpType) {
  if (im.node().op_type() == "Dropout" && im.output_used(1))
    return im.unsupported_use("the mask output");
  TESSERA_ASSIGN_OR_RETURN(int x, im.need(0));
  im.alias(0, x);
  return Status::ok();
}

Status import_flatten(Importer& im, OpType op) {
  TESSERA_ASSIGN_OR_RETURN(int x, im.need(0));
  TESSERA_ASSIGN_OR_RETURN(auto a, im.attrs<ir::FlattenAttrs>(op));
  const int64_t r = static_cast<int64_t>(im.rank(x));
  int64_t axis = a.axis;
  if (axis < -r || axis > r)
    return im.node_error(Error::InvalidProgram, "axis %lld out of range",
                         static_cast<long long>(axis));
  if (axis < 0) axis += r;
  return im.emit1(op, {x}, {}, {product(im.dims(x), 0, axis), product(im.dims(x), axis)}, true)
      .status();
}

Status import_transpose(Importer& im, OpType op) {
  TESSERA_ASSIGN_OR_RETURN(int x, im.need(0));
  TESSERA_ASSIGN_OR_RETURN(auto a, im.attrs<ir::TransposeAttrs>(op));
  std::vector<int64_t> perm(a.perm.begin(), a.perm.end());
  if (im.attr("perm") == nullptr) {
    for (size_t i = im.rank(x); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  }
  return im.emit1(op, {x}, {ir::Attr::make_ints("perm", perm)}).status();
}

Status import_concat(Importer& im, OpType op) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<int> inputs, im.need_all());
  if (inputs.empty()) return im.node_error(Error::InvalidProgram, "no inputs");
  TESSERA_ASSIGN_OR_RETURN(auto a, im.attrs<ir::ConcatAttrs>(op));
  TESSERA_ASSIGN_OR_RETURN(int64_t axis, im.norm_axis(a.axis, im.rank(inputs[0])));
  return im.emit1(op, std::move(inputs), {ir::Attr::make_int("axis", axis)}).status();
}

Status import_gather(Importer& im, OpType op) {
  TESSERA_ASSIGN_OR_RETURN(int x, im.need(0));
  TESSERA_ASSIGN_OR_RETURN(int idx, im.need(1));
  TESSERA_ASSIGN_OR_RETURN(auto a, im.attrs<ir::GatherAttrs>(op));
  TESSERA_ASSIGN_OR_RETURN(int64_t axis, im.norm_axis(a.axis, im.rank(x)));
  return im.emit1(op, {x, idx}, {ir::Attr::make_int("axis", axis)}).status();
}

Status import_reshape(Importer& im, OpType op) {
  TESSERA_ASSIGN_OR_RETURN(int x, im.need(0));
  TESSERA_ASSIGN_OR_RETURN(std::vector<SymExpr> target, im.shape_ints(1, "the target shape"));
  const bool allowzero = im.flag("allowzero");
  const auto& in_dims = im.dims(x);
  int infer = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (!target[i].is_const()) continue;
    const int64_t t = target[i].const_value();
    if (t == 0 && !allowzero) {
      if (i >= in_dims.size())
        return im.node_error(Error::InvalidProgram, "0 in the target shape beyond the input rank");
      target[i] = in_dims[i];
    } else if (t == -1) {
      if (infer >= 0)
        return im.node_error(Error::InvalidProgram, "more than one -1 in the target shape");
      infer = static_cast<int>(i);
    } else if (t < 0) {
      return im.node_error(Error::InvalidProgram, "target dim %lld", static_cast<long long>(t));
    }
  }
  if (infer >= 0) {
    SymExpr known(1);
    for (size_t i = 0; i < target.size(); ++i) {
      if (static_cast<int>(i) != infer) known = known * target[i];
    }
    if (known.is_const() && known.const_value() == 0)
      return im.node_error(Error::InvalidProgram, "-1 with a zero-sized target");
    target[infer] = SymExpr::floor_div(product(in_dims), known);
  }
  return im.emit1(op, {x}, {}, std::move(target), true).status();
}

Status import_squeeze(Importer& im, OpType op) {
  const bool unsqueeze = op == OpType::Unsqueeze;
  TESSERA_ASSIGN_OR_RETURN(int x, im.need(0));
  TESSERA_ASSIGN_OR_RETURN(auto a, im.attrs<ir::AxesAttrs>(op));
  std::vector<int64_t> axes;
  bool have_axes = false;
  if (im.opset() >= 13) {
    if (im.in(1) >= 0) {
      TESSERA_ASSIGN_OR_RETURN(axes, im.const_ints(1, "axes"));
      have_axes = true;
    }
  } else if (im.attr("axes") != nullptr) {
    axes.assign(a.axes.begin(), a.axes.end());
    have_axes = true;
  }
  const auto& in_dims = im.dims(x);
  std::vector<SymExpr> out;
  if (unsqueeze) {
    if (!have_axes) return im.node_error(Error::InvalidProgram, "Unsqueeze without axes");
    const size_t r = in_dims.size() + axes.size();
    std::vector<bool> inserted(r, false);
    for (int64_t a : axes) {
      TESSERA_ASSIGN_OR_RETURN(int64_t ax, im.norm_axis(a, r));
      if (inserted[ax])
        return im.node_error(Error::InvalidProgram, "axis %lld repeated",
                             static_cast<long long>(a));
      inserted[ax] = true;
    }
    size_t j = 0;
    for (size_t i = 0; i < r; ++i) out.push_back(inserted[i] ? SymExpr(1) : in_dims[j++]);
  } else {
    std::vector<bool> removed(in_dims.size(), false);
    if (!have_axes) {
      for (size_t i = 0; i < in_dims.size(); ++i)
        removed[i] = in_dims[i].is_const() && in_dims[i].const_value() == 1;
    }
    for (int64_t a : axes) {
      TESSERA_ASSIGN_OR_RETURN(int64_t ax, im.norm_axis(a, in_dims.size()));
      if (!(in_dims[ax].is_const() && in_dims[ax].const_value() == 1)) {
        return im.node_error(Error::InvalidProgram, "cannot squeeze axis %lld of %s",
                             static_cast<long long>(a), im.graph().dims_string(x).c_str());
      }
      removed[ax] = true;
    }
    for (size_t i = 0; i < in_dims.size(); ++i) {
      if (!removed[i]) out.push_back(in_dims[i]);
    }
  }
  return im.emit1(op, {x}, {}, std::move(out), true).status();
}

Status import_split(Importer& im, OpType op) {
  TESSERA_ASSIGN_OR_RETURN(int x, im.need(0));
  TESSERA_ASSIGN_OR_RETURN(auto a, im.attrs<ir::SplitAttrs>(op));
  TESSERA_ASSIGN_OR_RETURN(int64_t axis, im.norm_axis(a.axis, im.rank(x)));
  const size_t outputs = static_cast<size_t>(im.node().output_size());
  if (outputs == 0) return im.node_error(Error::InvalidProgram, "no outputs");
  std::vector<SymExpr> sizes;
  std::vector<int64_t> given;
  bool have = false;
  if (im.opset() >= 13) {
    if (im.in(1) >= 0) {
      TESSERA_ASSIGN_OR_RETURN(given, im.const_ints(1, "split"));
      have = true;
    }
  } else if (im.attr("split") != nullptr) {
    given.assign(a.split.begin(), a.split.end());
    have = true;
  }
  const SymExpr& d = im.dims(x)[axis];
  if (have) {
    if (given.size() != outputs)
      return im.node_error(Error::InvalidProgram, "split has %zu sizes for %zu outputs",
                           given.size(), outputs);
    for (int64_t s : given) {
      if (s < 0)
        return im.node_error(Error::InvalidProgram, "negative split size %lld",
                             static_cast<long long>(s));
      sizes.emplace_back(s);
    }
  } else {
    SymExpr each = SymExpr::floor_div(d, SymExpr(static_cast<int64_t>(outputs)));
    if (!(each * SymExpr(static_cast<int64_t>(outputs)) == d)) {
      return im.node_error(Error::InvalidProgram, "axis size %s does not split evenly into %zu",
                           d.to_string(&im.graph().symbols).c_str(), outputs);
    }
    sizes.assign(outputs, each);
  }
  std::vector<std::vector<SymExpr>> preset;
  std::vector<std::string> names;
  for (size_t k = 0; k < outputs; ++k) {
    std::vector<SymExpr> od = im.dims(x);
    od[axis] = sizes[k];
    preset.push_back(std::move(od));
    names.push_back(im.node().output(static_cast<int>(k)));
  }
  return im.emit(op, {x}, {ir::Attr::make_int("axis", axis)}, names, preset).status();
}

Status import_slice(Importer& im, OpType op) {
  TESSERA_ASSIGN_OR_RETURN(int x, im.need(0));
  TESSERA_ASSIGN_OR_RETURN(std::vector<SymExpr> starts_s, im.shape_ints(1, "starts"));
  TESSERA_ASSIGN_OR_RETURN(std::vector<SymExpr> ends_s, im.shape_ints(2, "ends"));
  const size_t r = im.rank(x);
  std::vector<int64_t> axes, steps;
  if (im.in(3) >= 0) {
    TESSERA_ASSIGN_OR_RETURN(axes, im.const_ints(3, "axes"));
  } else {
    for (size_t i = 0; i < starts_s.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (im.in(4) >= 0) {
    TESSERA_ASSIGN_OR_RETURN(steps, im.const_ints(4, "steps"));
  } else {
    steps.assign(starts_s.size(), 1);
  }
  if (ends_s.size() != starts_s.size() || axes.size() != starts_s.size() ||
      steps.size() != starts_s.size()) {
    return im.node_error(Error::InvalidProgram, "starts, ends, axes and steps differ in length");
  }
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  std::vector<int64_t> starts, ends;
  for (size_t k = 0; k < starts_s.size(); ++k) {
    TESSERA_ASSIGN_OR_RETURN(axes[k], im.norm_axis(axes[k], r));
    const SymExpr& d = im.dims(x)[axes[k]];
    // A bound equal to the (symbolic) dim itself, as in x[:, :x.shape[1]], means "to the end".
    auto resolve = [&](const SymExpr& e, const char* what, int64_t* out) -> Status {
      if (e.is_const()) {
        *out = e.const_value();
        return Status::ok();
      }
      if (e == d) {
        *out = steps[k] > 0 ? kMax : -1;
        return Status::ok();
      }
      return im.unsupported_use("a %s that depends on a symbolic dim (%s)", what,
                                e.to_string(&im.graph().symbols).c_str());
    };
    int64_t s = 0, e = 0;
    TESSERA_RETURN_IF_ERROR(resolve(starts_s[k], "start", &s));
    TESSERA_RETURN_IF_ERROR(resolve(ends_s[k], "end", &e));
    if (steps[k] == 0) return im.node_error(Error::InvalidProgram, "step 0");
    if (d.is_const() && steps[k] > 0) {
      const int64_t dim = d.const_value();
      if (s < 0) s += dim;
      if (e < 0) e += dim;
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
    }
    starts.push_back(s);
    ends.push_back(e);
  }
  return im
      .emit1(op, {x},
             {ir::Attr::make_ints("starts", starts), ir::Attr::make_ints("ends", ends),
              ir::Attr::make_ints("axes", axes), ir::Attr::make_ints("steps", steps)})
      .status();
}

Status import_pad(Importer& im, OpType op) {
  TESSERA_ASSIGN_OR_RETURN(int x, im.need(0));
  TESSERA_ASSIGN_OR_RETURN(auto a, im.attrs<ir::PadAttrs>(op));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> pads, im.const_ints(1, "pads"));
  if (im.num_inputs() > 3 && im.in(3) >= 0) return im.unsupported_use("the axes input");
  float value = a.value;
  if (int cv = im.in(2); cv >= 0) {
    const HostTensor* t = im.known(cv);
    if (!t) return im.unsupported_use("a constant_value computed at run time");
    if (t->numel() != 1)
      return im.node_error(Error::InvalidProgram, "constant_value must be a scalar");
    value = t->is_float() ? t->f[0] : static_cast<float>(t->int_at(0).const_value());
  }
  const std::string mode(a.mode);
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return im.unsupported_use("mode '%s'", mode.c_str());
  for (int64_t p : pads) {
    if (p < 0) return im.unsupported_use("negative pads");
    if (p > kMaxDimValue)
      return im.node_error(Error::InvalidProgram, "pad %lld", static_cast<long long>(p));
  }
  return im
      .emit1(op, {x},
             {ir::Attr::make_ints("pads", pads), ir::Attr::make_string("mode", mode),
              ir::Attr::make_float("value", value)})
      .status();
}

Status import_resize(Importer& im, OpType op) {
  TESSERA_ASSIGN_OR_RETURN(int x, im.need(0));
  TESSERA_ASSIGN_OR_RETURN(auto a, im.attrs<ir::ResizeAttrs>(op));
  const std::string mode(a.mode);
  if (mode != "nearest" && mode != "linear") return im.unsupported_use("mode '%s'", mode.c_str());
  if (im.flag("exclude_outside")) return im.unsupported_use("exclude_outside=1");
  const std::string ctm(a.coordinate_transformation_mode);
  if (ctm == "tf_crop_and_resize")
    return im.unsupported_use("coordinate_transformation_mode 'tf_crop_and_resize'");
  const std::string nearest(a.nearest_mode);
  const auto& in_dims = im.dims(x);
  std::vector<SymExpr> out_dims;
  std::vector<float> scales;
  const int scales_in = im.in(2), sizes_in = im.in(3);
  const HostTensor* st = im.known(scales_in);
  if (scales_in >= 0 && !st) return im.unsupported_use("scales computed at run time");
  if (st && st->numel() > 0) {
    if (!st->is_float() || static_cast<size_t>(st->numel()) != in_dims.size()) {
      return im.node_error(Error::InvalidProgram, "scales must be %zu floats", in_dims.size());
    }
    scales = st->f;
    for (size_t i = 0; i < in_dims.size(); ++i) {
      const float s = scales[i];
      if (!(s > 0)) return im.node_error(Error::InvalidProgram, "scale %g", s);
      if (in_dims[i].is_const()) {
        const double size = std::floor(static_cast<double>(in_dims[i].const_value()) * s);
        if (!(size >= 1 && size < 9.0e15))
          return im.node_error(Error::InvalidProgram, "scale %g gives output size %g", s, size);
        out_dims.emplace_back(static_cast<int64_t>(size));
      } else if (s == std::floor(s)) {
        out_dims.push_back(in_dims[i] * SymExpr(static_cast<int64_t>(s)));
      } else {
        return im.unsupported_use("a fractional scale along a symbolic dim");
      }
    }
  } else if (sizes_in >= 0) {
    TESSERA_ASSIGN_OR_RETURN(out_dims, im.shape_ints(3, "sizes"));
    if (out_dims.size() != in_dims.size())
      return im.node_error(Error::InvalidProgram, "sizes must have %zu entries", in_dims.size());
    for (const SymExpr& d : out_dims) {
      if (d.is_const() && d.const_value() < 1)
        return im.node_error(Error::InvalidProgram, "output size %lld",
                             static_cast<long long>(d.const_value()));
    }
  } else {
    return im.node_error(Error::InvalidProgram, "neither scales nor sizes given");
  }
  std::vector<ir::Attr> attrs = {ir::Attr::make_string("mode", mode),
                                 ir::Attr::make_string("coordinate_transformation_mode", ctm),
                                 ir::Attr::make_string("nearest_mode", nearest)};
  if (!scales.empty()) attrs.push_back(ir::Attr::make_floats("scales", scales));
  return im.emit1(op, {x}, std::move(attrs), std::move(out_dims), true).status();
}

Status import_expand(Importer& im, OpType op) {
  TESSERA_ASSIGN_OR_RETURN(int x, im.need(0));
  TESSERA_ASSIGN_OR_RETURN(std::vector<SymExpr> shape, im.shape_ints(1, "the shape"));
  auto out = broadcast_shapes(im.graph(), im.dims(x), shape);
  if (!out.ok()) return im.node_error(Error::ShapeMismatch, "%s", out.status().message());
  const std::vector<SymExpr>& od = out.value();
  if (od == im.dims(x)) {
    im.alias(0, x);
    return Status::ok();
  }
  std::vector<int64_t> static_out;
  bool is_static = true;
  for (const SymExpr& d : od) {
    if (!d.is_const()) is_static = false;
    static_out.push_back(d.is_const() ? d.const_value() : 0);
  }
  if (const HostTensor* t = im.known(x); t && is_static) {
    im.bind_const(0, broadcast_to(*t, static_out));
    return Status::ok();
  }
  // At run time: x + zeros, with the zeros holding only the dims x lacks.
  const auto& xd = im.dims(x);
  std::vector<int64_t> zd;
  for (size_t i = 0; i < od.size(); ++i) {
    const size_t xi = i + xd.size();
    const bool from_x = xi >= od.size() && xd[xi - od.size()] == od[i];
    if (from_x) {
      zd.push_back(1);
    } else if (od[i].is_const()) {
      zd.push_back(od[i].const_value());
    } else {
      return im.unsupported_use("expanding a dim to a symbolic size");
    }
  }
  HostTensor zeros;
  zeros.dtype = im.graph().values[x].dtype;
  zeros.dims = zd;
  const int64_t n = zeros.numel();
  if (n > kMaxFoldElements) return im.unsupported_use("expanding to a tensor this large");
  if (zeros.is_float())
    zeros.f.assign(n, 0.0f);
  else
    zeros.i.assign(n, 0);
  int z = im.make_const(im.node_name() + ":zeros", std::move(zeros));
  return im.emit1(op, {x, z}, {}).status();
}

constexpr OpImporter kRows[] = {
    {"Identity", import_identity, OpType::Identity},
    {"Dropout", import_identity, OpType::Identity},
    {"Reshape", import_reshape, OpType::Reshape},
    {"Flatten", import_flatten, OpType::Flatten},
    {"Squeeze", import_squeeze, OpType::Squeeze},
    {"Unsqueeze", import_squeeze, OpType::Unsqueeze},
    {"Transpose", import_transpose, OpType::Transpose},
    {"Concat", import_concat, OpType::Concat},
    {"Split", import_split, OpType::Split},
    {"Slice", import_slice, OpType::Slice},
    {"Gather", import_gather, OpType::Gather},
    {"Pad", import_pad, OpType::Pad},
    {"Resize", import_resize, OpType::Resize},
    {"Expand", import_expand, OpType::Add},
};

}  // namespace

Span<const OpImporter> layout_op_importers() {
  return kRows;
}

}  // namespace tessera::compiler::importer
