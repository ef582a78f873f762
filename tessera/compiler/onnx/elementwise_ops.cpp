// ONNX importers of the elementwise ops that do not map one to one: Pow (an exponent of another
// type), Min, Max and Sum (any number of inputs) and Clip (bounds as inputs).
#include <vector>

#include "tessera/compiler/evaluate.h"
#include "tessera/compiler/onnx/importer.h"
#include "tessera/compiler/onnx/op_importers.h"

namespace tessera::compiler::importer {
namespace {

using fb::OpType;

/// Pow: ONNX allows an exponent of another type than the base; the IR wants one type, so a
/// compile-time exponent is cast.
Status import_pow(Importer& im, OpType op) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<int> inputs, im.need_all());
  const ModelGraph& g = im.graph();
  if (inputs.size() == 2 && g.values[inputs[0]].dtype != g.values[inputs[1]].dtype) {
    const HostTensor* e = im.known(inputs[1]);
    HostTensor cast;
    if (!e || !cast_tensor(*e, g.values[inputs[0]].dtype, &cast)) {
      return im.unsupported_use("an exponent of another type computed at run time");
    }
    inputs[1] = im.make_const(im.node_name() + ":exponent", std::move(cast));
  }
  return im.emit1(op, std::move(inputs), {}).status();
}

/// Min, Max and Sum of any number of inputs: a chain of binary nodes.
Status import_variadic(Importer& im, OpType op) {
  if (im.num_inputs() == 0) return im.node_error(Error::InvalidProgram, "no inputs");
  TESSERA_ASSIGN_OR_RETURN(int acc, im.need(0));
  if (im.num_inputs() == 1) {
    im.alias(0, acc);
    return Status::ok();
  }
  for (size_t k = 1; k < im.num_inputs(); ++k) {
    TESSERA_ASSIGN_OR_RETURN(int v, im.need(k));
    const bool last = k + 1 == im.num_inputs();
    TESSERA_ASSIGN_OR_RETURN(
        auto outs, im.emit(op, {acc, v}, {}, {last ? im.node().output(0) : std::string()}));
    acc = outs[0];
  }
  return Status::ok();
}

/// Clip: the min and max inputs (opset 11) become the IR's attributes; absent ones stay absent.
Status import_clip(Importer& im, OpType op) {
  TESSERA_ASSIGN_OR_RETURN(int x, im.need(0));
  std::vector<ir::Attr> attrs;
  const char* names[2] = {"min", "max"};
  for (int k = 0; k < 2; ++k) {
    const int v = im.in(1 + k);
    if (v < 0) continue;
    const HostTensor* t = im.known(v);
    if (!t) return im.unsupported_use("%s computed at run time", names[k]);
    if (t->numel() != 1 || t->is_symbolic())
      return im.node_error(Error::InvalidProgram, "%s must be a scalar", names[k]);
    attrs.push_back(ir::Attr::make_float(names[k], static_cast<float>(t->as_double(0))));
  }
  return im.emit1(op, {x}, std::move(attrs)).status();
}

constexpr OpImporter kRows[] = {
    {"Pow", import_pow, OpType::Pow},      {"Min", import_variadic, OpType::Min},
    {"Max", import_variadic, OpType::Max}, {"Sum", import_variadic, OpType::Add},
    {"Clip", import_clip, OpType::Clip},
};

}  // namespace

Span<const OpImporter> elementwise_op_importers() {
  return kRows;
}

}  // namespace tessera::compiler::importer
