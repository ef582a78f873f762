#include "tessera/compiler/shape_inference.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

#include "tessera/ir/op.h"
#include "tessera/ir/op_attrs.h"
#include "tessera/ir/op_table.h"

namespace tessera::compiler {
namespace {

using fb::OpType;

[[gnu::format(printf, 2, 3)]] Status node_error(const ir::Node& node, const char* fmt, ...) {
  char buf[Status::kMaxMessage];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return Status::error(Error::InvalidProgram, "node '%s' (%s): %s", node.name.c_str(),
                       ir::op_name(node.op), buf);
}

const Value* input(const ModelGraph& g, const ir::Node& n, size_t k) {
  if (k >= n.inputs.size() || n.inputs[k] < 0) return nullptr;
  return &g.values[n.inputs[k]];
}

bool normalize_axis(int64_t axis, size_t rank, int64_t* out) {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) return false;
  *out = axis < 0 ? axis + r : axis;
  return true;
}

}  // namespace

int64_t attr_int(const ir::Node& node, const char* name, int64_t fallback) {
  const ir::Attr* a = node.find_attr(name);
  return a && a->type == fb::AttrType::Int ? a->i : fallback;
}

std::vector<int64_t> attr_ints(const ir::Node& node, const char* name) {
  const ir::Attr* a = node.find_attr(name);
  return a && a->type == fb::AttrType::Ints ? a->ints : std::vector<int64_t>{};
}

Result<std::vector<SymExpr>> broadcast_shapes(const ModelGraph& graph, const std::vector<SymExpr>& a,
                                              const std::vector<SymExpr>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<SymExpr> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const SymExpr* x = i + a.size() >= rank ? &a[i + a.size() - rank] : nullptr;
    const SymExpr* y = i + b.size() >= rank ? &b[i + b.size() - rank] : nullptr;
    if (!x) {
      out[i] = *y;
    } else if (!y) {
      out[i] = *x;
    } else if (*x == *y) {
      out[i] = *x;
    } else if (x->is_const() && x->const_value() == 1) {
      out[i] = *y;
    } else if (y->is_const() && y->const_value() == 1) {
      out[i] = *x;
    } else {
      return Status::error(Error::ShapeMismatch, "cannot broadcast %s with %s",
                           graph.dims_string(a).c_str(), graph.dims_string(b).c_str());
    }
  }
  return out;
}

SymExpr window_output_dim(const SymExpr& in, int64_t kernel, int64_t stride, int64_t dilation,
                          int64_t pad_begin, int64_t pad_end, bool ceil_mode) {
  const int64_t eff = dilation * (kernel - 1) + 1;
  SymExpr span = in + SymExpr(pad_begin + pad_end - eff);
  if (!ceil_mode) return SymExpr::floor_div(span, SymExpr(stride)) + SymExpr(1);
  SymExpr out = SymExpr::ceil_div(span, SymExpr(stride)) + SymExpr(1);
  // As PyTorch: the last window must start inside the input or its leading padding.
  if (out.is_const() && in.is_const() && (out.const_value() - 1) * stride >= in.const_value() + pad_begin) {
    out = out - SymExpr(1);
  }
  return out;
}

Status infer_shapes(ModelGraph& graph, size_t node_index) {
  return infer_shapes(graph, graph.nodes[node_index]);
}

Status infer_shapes(ModelGraph& g, const ir::Node& n) {
  auto need_inputs = [&](size_t count) -> Status {
    for (size_t k = 0; k < count; ++k) {
      if (!input(g, n, k)) return node_error(n, "missing input %zu", k);
    }
    return Status::ok();
  };
  if (n.outputs.empty() || n.outputs[0] < 0) return node_error(n, "no output");
  Value& out = g.values[n.outputs[0]];
  auto set_out = [&](ScalarType dtype, std::vector<SymExpr> dims) {
    out.dtype = dtype;
    out.dims = std::move(dims);
  };

  const ir::OpInfo* info = ir::op_info(n.op);
  if (info == nullptr) return node_error(n, "unknown op %d", static_cast<int>(n.op));
  if (info->same_shape) {  // tessera/ir/ops.def: the output has input 0's shape and dtype
    TESSERA_RETURN_IF_ERROR(need_inputs(1));
    const Value& x = *input(g, n, 0);
    set_out(x.dtype, x.dims);
    return Status::ok();
  }
  switch (n.op) {
    case OpType::Softmax:
    case OpType::LayerNormalization:
    case OpType::BatchNormalization:
    case OpType::PRelu: {
      TESSERA_RETURN_IF_ERROR(need_inputs(1));
      const Value& x = *input(g, n, 0);
      if (n.op == OpType::Softmax || n.op == OpType::LayerNormalization) {
        int64_t axis_attr;
        if (n.op == OpType::Softmax) {
          TESSERA_ASSIGN_OR_RETURN(const ir::SoftmaxAttrs a, ir::SoftmaxAttrs::read(n));
          axis_attr = a.axis;
        } else {
          TESSERA_ASSIGN_OR_RETURN(const ir::LayerNormalizationAttrs a,
                                   ir::LayerNormalizationAttrs::read(n));
          axis_attr = a.axis;
        }
        int64_t axis;
        if (!normalize_axis(axis_attr, x.dims.size(), &axis)) {
          return node_error(n, "axis %lld out of range for rank %zu",
                            static_cast<long long>(axis_attr), x.dims.size());
        }
      }
      if (n.op == OpType::BatchNormalization && x.dims.size() < 2) {
        return node_error(n, "input of rank %zu (need at least 2)", x.dims.size());
      }
      set_out(x.dtype, x.dims);
      return Status::ok();
    }
    case OpType::Cast: {
      TESSERA_RETURN_IF_ERROR(need_inputs(1));
      TESSERA_ASSIGN_OR_RETURN(const ir::CastAttrs attrs, ir::CastAttrs::read(n));
      const int64_t to = attrs.to;
      if (!is_valid_scalar_type(static_cast<int>(to))) return node_error(n, "bad 'to' %lld", (long long)to);
      set_out(static_cast<ScalarType>(to), input(g, n, 0)->dims);
      return Status::ok();
    }
    case OpType::Add:
    case OpType::Sub:
    case OpType::Mul:
    case OpType::Div:
    case OpType::Pow:
    case OpType::Min:
    case OpType::Max:
    case OpType::Equal:
    case OpType::Less:
    case OpType::Greater: {
      TESSERA_RETURN_IF_ERROR(need_inputs(2));
      auto dims = broadcast_shapes(g, input(g, n, 0)->dims, input(g, n, 1)->dims);
      if (!dims.ok()) return node_error(n, "%s", dims.status().message());
      const bool cmp = n.op == OpType::Equal || n.op == OpType::Less || n.op == OpType::Greater;
      set_out(cmp ? ScalarType::Bool : input(g, n, 0)->dtype, std::move(dims).value());
      return Status::ok();
    }
    case OpType::Where: {
      TESSERA_RETURN_IF_ERROR(need_inputs(3));
      auto d1 = broadcast_shapes(g, input(g, n, 0)->dims, input(g, n, 1)->dims);
      if (!d1.ok()) return node_error(n, "%s", d1.status().message());
      auto d2 = broadcast_shapes(g, d1.value(), input(g, n, 2)->dims);
      if (!d2.ok()) return node_error(n, "%s", d2.status().message());
      set_out(input(g, n, 1)->dtype, std::move(d2).value());
      return Status::ok();
    }
    case OpType::Conv:
    case OpType::ConvTranspose: {
      TESSERA_RETURN_IF_ERROR(need_inputs(2));
      const Value& x = *input(g, n, 0);
      const Value& w = *input(g, n, 1);
      const size_t rank = x.dims.size();
      if (rank < 3 || w.dims.size() != rank) {
        return node_error(n, "input %s and weight %s ranks do not match", g.dims_string(x.dims).c_str(),
                          g.dims_string(w.dims).c_str());
      }
      const size_t spatial = rank - 2;
      int64_t group;
      ir::WindowAttrs win;
      std::vector<int64_t> out_pad;
      if (n.op == OpType::Conv) {
        TESSERA_ASSIGN_OR_RETURN(const ir::ConvAttrs a, ir::ConvAttrs::read(n));
        group = a.group;
        win = ir::window_of(a);
      } else {
        TESSERA_ASSIGN_OR_RETURN(const ir::ConvTransposeAttrs a, ir::ConvTransposeAttrs::read(n));
        group = a.group;
        win = ir::window_of(a);
        out_pad.assign(a.output_padding.begin(), a.output_padding.end());
      }
      const Span<const int64_t> strides = win.strides, dilations = win.dilations, pads = win.pads;
      if (strides.size() != spatial || dilations.size() != spatial || pads.size() != 2 * spatial) {
        return node_error(n, "strides/dilations/pads do not match %zu spatial dims", spatial);
      }
      std::vector<SymExpr> dims(rank);
      dims[0] = x.dims[0];
      if (n.op == OpType::Conv) {
        if (group <= 0 || !(w.dims[1] * SymExpr(group) == x.dims[1])) {
          return node_error(n, "input channels %s do not match weight %s with group %lld",
                            x.dims[1].to_string(&g.symbols).c_str(), g.dims_string(w.dims).c_str(),
                            static_cast<long long>(group));
        }
        dims[1] = w.dims[0];
      } else {
        if (out_pad.empty()) out_pad.assign(spatial, 0);
        if (out_pad.size() != spatial || !(w.dims[0] == x.dims[1])) {
          return node_error(n, "input channels %s do not match weight %s",
                            x.dims[1].to_string(&g.symbols).c_str(), g.dims_string(w.dims).c_str());
        }
        dims[1] = w.dims[1] * SymExpr(group);
      }
      for (size_t i = 0; i < spatial; ++i) {
        if (!w.dims[2 + i].is_const()) return node_error(n, "symbolic kernel size");
        const int64_t k = w.dims[2 + i].const_value();
        if (n.op == OpType::Conv) {
          dims[2 + i] = window_output_dim(x.dims[2 + i], k, strides[i], dilations[i], pads[i],
                                          pads[spatial + i], false);
        } else {
          dims[2 + i] = (x.dims[2 + i] - SymExpr(1)) * SymExpr(strides[i]) +
                        SymExpr(out_pad[i] + dilations[i] * (k - 1) + 1 - pads[i] - pads[spatial + i]);
        }
        if (dims[2 + i].is_const() && dims[2 + i].const_value() <= 0) {
          return node_error(n, "output size %lld along spatial axis %zu",
                            static_cast<long long>(dims[2 + i].const_value()), i);
        }
      }
      if (const Value* b = input(g, n, 2)) {
        if (b->dims.size() != 1 || !(b->dims[0] == dims[1])) {
          return node_error(n, "bias %s does not match %s output channels", g.dims_string(b->dims).c_str(),
                            dims[1].to_string(&g.symbols).c_str());
        }
      }
      set_out(x.dtype, std::move(dims));
      return Status::ok();
    }
    case OpType::Gemm: {
      TESSERA_RETURN_IF_ERROR(need_inputs(2));
      const Value& a = *input(g, n, 0);
      const Value& b = *input(g, n, 1);
      if (a.dims.size() != 2 || b.dims.size() != 2) return node_error(n, "A and B must be 2-D");
      TESSERA_ASSIGN_OR_RETURN(const ir::GemmAttrs attrs, ir::GemmAttrs::read(n));
      const bool ta = attrs.transA != 0, tb = attrs.transB != 0;
      SymExpr m = ta ? a.dims[1] : a.dims[0], ka = ta ? a.dims[0] : a.dims[1];
      SymExpr kb = tb ? b.dims[1] : b.dims[0], nn = tb ? b.dims[0] : b.dims[1];
      if (!(ka == kb)) {
        return node_error(n, "inner dims differ: A %s, B %s", g.dims_string(a.dims).c_str(),
                          g.dims_string(b.dims).c_str());
      }
      std::vector<SymExpr> dims = {m, nn};
      if (const Value* c = input(g, n, 2)) {
        auto bc = broadcast_shapes(g, dims, c->dims);
        if (!bc.ok() || bc.value() != dims) {
          return node_error(n, "C %s does not broadcast to %s", g.dims_string(c->dims).c_str(),
                            g.dims_string(dims).c_str());
        }
      }
      set_out(a.dtype, std::move(dims));
      return Status::ok();
    }
    case OpType::MatMul: {
      TESSERA_RETURN_IF_ERROR(need_inputs(2));
      std::vector<SymExpr> a = input(g, n, 0)->dims, b = input(g, n, 1)->dims;
      if (a.empty() || b.empty()) return node_error(n, "scalar operand");
      const bool a1 = a.size() == 1, b1 = b.size() == 1;
      if (a1) a.insert(a.begin(), SymExpr(1));
      if (b1) b.push_back(SymExpr(1));
      if (!(a.back() == b[b.size() - 2])) {
        return node_error(n, "inner dims differ: %s x %s", g.dims_string(input(g, n, 0)->dims).c_str(),
                          g.dims_string(input(g, n, 1)->dims).c_str());
      }
      std::vector<SymExpr> ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
      auto batch = broadcast_shapes(g, ba, bb);
      if (!batch.ok()) return node_error(n, "%s", batch.status().message());
      std::vector<SymExpr> dims = std::move(batch).value();
      if (!a1) dims.push_back(a[a.size() - 2]);
      if (!b1) dims.push_back(b.back());
      set_out(input(g, n, 0)->dtype, std::move(dims));
      return Status::ok();
    }
    case OpType::MaxPool:
    case OpType::AveragePool: {
      TESSERA_RETURN_IF_ERROR(need_inputs(1));
      const Value& x = *input(g, n, 0);
      TESSERA_ASSIGN_OR_RETURN(const ir::PoolAttrs attrs, ir::PoolAttrs::read(n));
      const Span<const int64_t> kernel = attrs.kernel_shape;
      const size_t spatial = kernel.size();
      if (x.dims.size() != spatial + 2) return node_error(n, "kernel_shape does not match the input rank");
      const Span<const int64_t> strides = attrs.strides, dilations = attrs.dilations,
                                pads = attrs.pads;
      if (strides.size() != spatial || dilations.size() != spatial || pads.size() != 2 * spatial) {
        return node_error(n, "strides/dilations/pads do not match %zu spatial dims", spatial);
      }
      const bool ceil_mode = attrs.ceil_mode != 0;
      std::vector<SymExpr> dims = {x.dims[0], x.dims[1]};
      for (size_t i = 0; i < spatial; ++i) {
        dims.push_back(window_output_dim(x.dims[2 + i], kernel[i], strides[i], dilations[i], pads[i],
                                         pads[spatial + i], ceil_mode));
      }
      set_out(x.dtype, std::move(dims));
      return Status::ok();
    }
    case OpType::GlobalAveragePool: {
      TESSERA_RETURN_IF_ERROR(need_inputs(1));
      const Value& x = *input(g, n, 0);
      if (x.dims.size() < 3) return node_error(n, "input rank %zu (need at least 3)", x.dims.size());
      std::vector<SymExpr> dims = {x.dims[0], x.dims[1]};
      dims.resize(x.dims.size(), SymExpr(1));
      set_out(x.dtype, std::move(dims));
      return Status::ok();
    }
    case OpType::ReduceMean:
    case OpType::ReduceSum:
    case OpType::ReduceMax: {
      TESSERA_RETURN_IF_ERROR(need_inputs(1));
      const Value& x = *input(g, n, 0);
      TESSERA_ASSIGN_OR_RETURN(const ir::ReduceAttrs attrs, ir::ReduceAttrs::read(n));
      const Span<const int64_t> axes = attrs.axes;
      const bool keep = attrs.keepdims != 0;
      std::vector<bool> reduced(x.dims.size(), axes.empty());
      for (int64_t a : axes) {
        int64_t ax;
        if (!normalize_axis(a, x.dims.size(), &ax)) return node_error(n, "axis %lld out of range", (long long)a);
        reduced[ax] = true;
      }
      std::vector<SymExpr> dims;
      for (size_t i = 0; i < x.dims.size(); ++i) {
        if (!reduced[i]) {
          dims.push_back(x.dims[i]);
        } else if (keep) {
          dims.push_back(SymExpr(1));
        }
      }
      set_out(x.dtype, std::move(dims));
      return Status::ok();
    }
    case OpType::Transpose: {
      TESSERA_RETURN_IF_ERROR(need_inputs(1));
      const Value& x = *input(g, n, 0);
      TESSERA_ASSIGN_OR_RETURN(const ir::TransposeAttrs attrs, ir::TransposeAttrs::read(n));
      const Span<const int64_t> perm = attrs.perm;
      if (perm.size() != x.dims.size()) return node_error(n, "perm has %zu entries for rank %zu", perm.size(), x.dims.size());
      std::vector<bool> seen(perm.size(), false);
      std::vector<SymExpr> dims;
      for (int64_t p : perm) {
        if (p < 0 || p >= static_cast<int64_t>(perm.size()) || seen[p]) return node_error(n, "perm is not a permutation");
        seen[p] = true;
        dims.push_back(x.dims[p]);
      }
      set_out(x.dtype, std::move(dims));
      return Status::ok();
    }
    case OpType::Concat: {
      TESSERA_RETURN_IF_ERROR(need_inputs(1));
      const Value& x = *input(g, n, 0);
      TESSERA_ASSIGN_OR_RETURN(const ir::ConcatAttrs attrs, ir::ConcatAttrs::read(n));
      int64_t axis;
      if (!normalize_axis(attrs.axis, x.dims.size(), &axis))
        return node_error(n, "axis out of range");
      std::vector<SymExpr> dims = x.dims;
      for (size_t k = 1; k < n.inputs.size(); ++k) {
        const Value* y = input(g, n, k);
        if (!y) return node_error(n, "missing input %zu", k);
        if (y->dims.size() != dims.size()) return node_error(n, "inputs differ in rank");
        for (size_t i = 0; i < dims.size(); ++i) {
          if (static_cast<int64_t>(i) == axis) {
            dims[i] = dims[i] + y->dims[i];
          } else if (!(dims[i] == y->dims[i])) {
            return node_error(n, "input %zu is %s, input 0 is %s", k, g.dims_string(y->dims).c_str(),
                              g.dims_string(x.dims).c_str());
          }
        }
      }
      set_out(x.dtype, std::move(dims));
      return Status::ok();
    }
    case OpType::Slice: {
      TESSERA_RETURN_IF_ERROR(need_inputs(1));
      const Value& x = *input(g, n, 0);
      TESSERA_ASSIGN_OR_RETURN(const ir::SliceAttrs attrs, ir::SliceAttrs::read(n));
      const Span<const int64_t> starts = attrs.starts, ends = attrs.ends, axes = attrs.axes,
                                steps = attrs.steps;
      if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
        return node_error(n, "starts/ends/axes/steps differ in length");
      }
      std::vector<SymExpr> dims = x.dims;
      for (size_t k = 0; k < starts.size(); ++k) {
        int64_t axis;
        if (!normalize_axis(axes[k], x.dims.size(), &axis)) return node_error(n, "axis out of range");
        const int64_t step = steps[k];
        if (step == 0) return node_error(n, "step 0");
        const SymExpr& d = x.dims[axis];
        if (d.is_const()) {
          const int64_t dim = d.const_value();
          // Clamp first: starts/ends may be anywhere in int64 (INT64_MAX means "to the end").
          int64_t s = std::clamp<int64_t>(starts[k], -dim - 1, dim + 1);
          int64_t e = std::clamp<int64_t>(ends[k], -dim - 1, dim + 1);
          if (s < 0) s += dim;
          if (e < 0) e += dim;
          if (step > 0) {
            s = std::clamp<int64_t>(s, 0, dim);
            e = std::clamp<int64_t>(e, 0, dim);
            dims[axis] = SymExpr(e > s ? (e - s - 1) / step + 1 : 0);
          } else {
            s = std::clamp<int64_t>(s, -1, dim - 1);
            e = std::clamp<int64_t>(e, -1, dim - 1);
            const int64_t stride = step == INT64_MIN ? INT64_MAX : -step;
            dims[axis] = SymExpr(s > e ? (s - e - 1) / stride + 1 : 0);
          }
          continue;
        }
        // A symbolic dim: starts/ends relative to it, assumed in range.
        if (step != 1) return node_error(n, "a step other than 1 along symbolic axis %lld", (long long)axis);
        const int64_t kBig = int64_t{1} << 40;
        SymExpr s = starts[k] < 0 ? d + SymExpr(starts[k]) : SymExpr(starts[k]);
        SymExpr e = ends[k] >= kBig ? d : (ends[k] < 0 ? d + SymExpr(ends[k]) : SymExpr(ends[k]));
        if (starts[k] >= kBig) s = d;
        dims[axis] = e - s;
      }
      set_out(x.dtype, std::move(dims));
      return Status::ok();
    }
    case OpType::Gather: {
      TESSERA_RETURN_IF_ERROR(need_inputs(2));
      const Value& x = *input(g, n, 0);
      const Value& idx = *input(g, n, 1);
      TESSERA_ASSIGN_OR_RETURN(const ir::GatherAttrs attrs, ir::GatherAttrs::read(n));
      int64_t axis;
      if (!normalize_axis(attrs.axis, x.dims.size(), &axis))
        return node_error(n, "axis out of range");
      std::vector<SymExpr> dims(x.dims.begin(), x.dims.begin() + axis);
      dims.insert(dims.end(), idx.dims.begin(), idx.dims.end());
      dims.insert(dims.end(), x.dims.begin() + axis + 1, x.dims.end());
      set_out(x.dtype, std::move(dims));
      return Status::ok();
    }
    case OpType::Pad: {
      TESSERA_RETURN_IF_ERROR(need_inputs(1));
      const Value& x = *input(g, n, 0);
      TESSERA_ASSIGN_OR_RETURN(const ir::PadAttrs attrs, ir::PadAttrs::read(n));
      const Span<const int64_t> pads = attrs.pads;
      const size_t r = x.dims.size();
      if (pads.size() != 2 * r) return node_error(n, "pads has %zu entries for rank %zu", pads.size(), r);
      std::vector<SymExpr> dims = x.dims;
      for (size_t i = 0; i < r; ++i) dims[i] = dims[i] + SymExpr(pads[i] + pads[r + i]);
      set_out(x.dtype, std::move(dims));
      return Status::ok();
    }
    case OpType::Reshape:
    case OpType::Flatten:
    case OpType::Squeeze:
    case OpType::Unsqueeze: {
      TESSERA_RETURN_IF_ERROR(need_inputs(1));
      const Value& x = *input(g, n, 0);
      if (!(product(x.dims) == product(out.dims))) {
        return node_error(n, "cannot reshape %s to %s", g.dims_string(x.dims).c_str(),
                          g.dims_string(out.dims).c_str());
      }
      out.dtype = x.dtype;
      return Status::ok();
    }
    case OpType::Split: {
      TESSERA_RETURN_IF_ERROR(need_inputs(1));
      const Value& x = *input(g, n, 0);
      TESSERA_ASSIGN_OR_RETURN(const ir::SplitAttrs attrs, ir::SplitAttrs::read(n));
      int64_t axis;
      if (!normalize_axis(attrs.axis, x.dims.size(), &axis))
        return node_error(n, "axis out of range");
      SymExpr total(0);
      for (int o : n.outputs) {
        if (o < 0) continue;
        Value& v = g.values[o];
        v.dtype = x.dtype;
        if (v.dims.size() != x.dims.size()) return node_error(n, "output rank differs from input rank");
        total = total + v.dims[axis];
      }
      if (!(total == x.dims[axis])) return node_error(n, "split sizes do not add up to the axis size");
      return Status::ok();
    }
    case OpType::Resize: {
      TESSERA_RETURN_IF_ERROR(need_inputs(1));
      const Value& x = *input(g, n, 0);
      if (out.dims.size() != x.dims.size()) return node_error(n, "output rank differs from input rank");
      out.dtype = x.dtype;
      return Status::ok();
    }
    default:  // the table's Input0 ops returned above; an Inferred op needs a case here
      break;
  }
  return node_error(n, "no shape inference for this op");
}

}  // namespace tessera::compiler
