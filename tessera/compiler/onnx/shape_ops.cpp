// ONNX importers of the ops that compute on shape values rather than tensors: Constant, Shape,
// Size, ConstantOfShape, Range and Cast. Their results are compile-time tensors (HostTensor),
// whose integer elements may be expressions over symbolic dims (SymExpr); the ops that consume
// them fold at import (tessera/compiler/evaluate.cpp). Cast of run-time data emits a Cast node.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "tessera/compiler/evaluate.h"
#include "tessera/compiler/onnx/importer.h"
#include "tessera/compiler/onnx/op_importers.h"
#include "tessera/compiler/onnx/tensor_proto.h"
#include "tessera/ir/op_attrs.h"

namespace tessera::compiler::importer {
namespace {

using fb::OpType;

/// Constant: a compile-time tensor from any of the value attributes.
Status import_constant(Importer& im, OpType) {
  HostTensor t;
  if (const auto* a = im.attr("value")) {
    TESSERA_RETURN_IF_ERROR(
        im.import_tensor(a->t(), "node '" + im.node_name() + "' (Constant)", &t));
  } else if (const auto* a = im.attr("value_float")) {
    t = HostTensor::scalar_float(a->f());
  } else if (const auto* a = im.attr("value_floats")) {
    t.dtype = ScalarType::Float32;
    t.f.assign(a->floats().begin(), a->floats().end());
    t.dims = {static_cast<int64_t>(t.f.size())};
  } else if (const auto* a = im.attr("value_int")) {
    t.dtype = ScalarType::Int64;
    t.i = {a->i()};
  } else if (const auto* a = im.attr("value_ints")) {
    t = HostTensor::ints(std::vector<int64_t>(a->ints().begin(), a->ints().end()));
  } else {
    return im.unsupported_use("a value other than a dense tensor or numbers");
  }
  im.bind_const(0, std::move(t));
  return Status::ok();
}

/// Shape: the dims of the input (from `start` to `end`), as expressions when symbolic.
Status import_shape(Importer& im, OpType) {
  TESSERA_ASSIGN_OR_RETURN(int x, im.need(0));
  const int64_t r = static_cast<int64_t>(im.rank(x));
  const onnx::AttributeProto* first = im.attr("start");
  const onnx::AttributeProto* last = im.attr("end");
  int64_t start = first != nullptr ? first->i() : 0;
  int64_t end = last != nullptr ? last->i() : r;
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, start, r);
  HostTensor t;
  t.dtype = ScalarType::Int64;
  t.dims = {end - start};
  bool sym = false;
  for (int64_t i = start; i < end; ++i) sym |= !im.dims(x)[i].is_const();
  for (int64_t i = start; i < end; ++i) {
    if (sym)
      t.sym.push_back(im.dims(x)[i]);
    else
      t.i.push_back(im.dims(x)[i].const_value());
  }
  im.bind_const(0, std::move(t));
  return Status::ok();
}

/// Size: the element count of the input, an expression when symbolic.
Status import_size(Importer& im, OpType) {
  TESSERA_ASSIGN_OR_RETURN(int x, im.need(0));
  HostTensor t;
  t.dtype = ScalarType::Int64;
  SymExpr n = product(im.dims(x));
  if (n.is_const())
    t.i = {n.const_value()};
  else
    t.sym = {n};
  im.bind_const(0, std::move(t));
  return Status::ok();
}

/// ConstantOfShape: a compile-time tensor of a compile-time shape.
Status import_constant_of_shape(Importer& im, OpType) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> shape, im.const_ints(0, "the shape"));
  HostTensor t;
  HostTensor value = HostTensor::scalar_float(0.0f);
  if (const auto* a = im.attr("value")) {
    TESSERA_RETURN_IF_ERROR(
        im.import_tensor(a->t(), "node '" + im.node_name() + "' value", &value));
    if (value.numel() != 1)
      return im.node_error(Error::InvalidProgram, "value must have one element");
  }
  value.dims.clear();
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return im.node_error(Error::InvalidProgram, "negative dim");
    if (__builtin_mul_overflow(n, d, &n)) n = INT64_MAX;
  }
  if (n > kMaxFoldElements) return im.unsupported_use("a constant this large");
  t = broadcast_to(value, shape);
  im.bind_const(0, std::move(t));
  return Status::ok();
}

/// Range: a compile-time sequence from compile-time bounds.
Status import_range(Importer& im, OpType) {
  for (size_t k = 0; k < 3; ++k) {
    TESSERA_ASSIGN_OR_RETURN(int v, im.need(k));
    const HostTensor* t = im.known(v);
    if (!t || t->numel() != 1) return im.unsupported_use("bounds computed at run time");
    if (t->is_symbolic() && !t->sym[0].is_const())
      return im.unsupported_use("bounds that depend on a symbolic dim");
  }
  const HostTensor* s = im.known(im.in(0));
  const double start =
      s->is_symbolic() ? static_cast<double>(s->sym[0].const_value()) : s->as_double(0);
  auto val = [&](int k) {
    const HostTensor* t = im.known(im.in(k));
    return t->is_symbolic() ? static_cast<double>(t->sym[0].const_value()) : t->as_double(0);
  };
  const double limit = val(1), delta = val(2);
  if (delta == 0) return im.node_error(Error::InvalidProgram, "delta 0");
  const double count = std::ceil((limit - start) / delta);
  if (!(count <= static_cast<double>(kMaxFoldElements)))
    return im.unsupported_use("a range this large");
  const int64_t n = std::max<int64_t>(0, static_cast<int64_t>(count));
  HostTensor t;
  t.dtype = s->dtype;
  t.dims = {n};
  for (int64_t k = 0; k < n; ++k) {
    if (t.is_float())
      t.f.push_back(static_cast<float>(start + k * delta));
    else
      t.i.push_back(static_cast<int64_t>(start + k * delta));
  }
  im.bind_const(0, std::move(t));
  return Status::ok();
}

/// Cast: folded when the input is known (shape values are), an alias when the type does not
/// change, otherwise a Cast node.
Status import_cast(Importer& im, OpType op) {
  TESSERA_ASSIGN_OR_RETURN(int x, im.need(0));
  TESSERA_ASSIGN_OR_RETURN(auto a, im.attrs<ir::CastAttrs>(op));
  ScalarType to;
  bool exact;
  const int64_t onnx_to = a.to;  // an ONNX element type here
  if (!map_onnx_type(static_cast<int>(onnx_to), &to, &exact))
    return im.unsupported_use("cast to %s", onnx_type_name(static_cast<int>(onnx_to)));
  if (const HostTensor* t = im.known(x)) {
    HostTensor out;
    if (cast_tensor(*t, to, &out)) {
      im.bind_const(0, std::move(out));
      return Status::ok();
    }
  }
  if (!exact) return im.unsupported_use("cast to %s", onnx_type_name(static_cast<int>(onnx_to)));
  if (im.graph().values[x].dtype == to) {
    im.alias(0, x);
    return Status::ok();
  }
  return im.emit1(op, {x}, {ir::Attr::make_int("to", static_cast<int64_t>(to))}).status();
}

constexpr OpImporter kRows[] = {
    {"Constant", import_constant, OpType::Identity},
    {"Shape", import_shape, OpType::Identity},
    {"Size", import_size, OpType::Identity},
    {"ConstantOfShape", import_constant_of_shape, OpType::Identity},
    {"Range", import_range, OpType::Identity},
    {"Cast", import_cast, OpType::Cast},
};

}  // namespace

Span<const OpImporter> shape_op_importers() {
  return kRows;
}

}  // namespace tessera::compiler::importer
