#include "tessera/compiler/passes/batchnorm_folding.h"

#include <cmath>

#include "tessera/compiler/evaluate.h"
#include "tessera/ir/op_attrs.h"

namespace tessera::compiler {
namespace {

const HostTensor* float_const(const ModelGraph& g, int v) {
  if (v < 0) return nullptr;
  const HostTensor* t = g.values[v].data.get();
  return t && t->dtype == ScalarType::Float32 && !t->is_symbolic() ? t : nullptr;
}

// Per-channel factor s = scale / sqrt(var + eps) and shift t = B - mean * s. Nodes whose
// attributes do not read are left as they are here, for load validation to report.
bool bn_params(const ModelGraph& g, const ir::Node& bn, int64_t channels, std::vector<double>* s,
               std::vector<double>* t) {
  const HostTensor* p[4];
  for (int k = 0; k < 4; ++k) {
    p[k] = float_const(g, bn.inputs[1 + k]);
    if (!p[k] || p[k]->numel() != channels) return false;
  }
  const Result<ir::BatchNormalizationAttrs> attrs = ir::BatchNormalizationAttrs::read(bn);
  if (!attrs.ok()) return false;
  const double eps = attrs->epsilon;
  s->resize(channels);
  t->resize(channels);
  for (int64_t c = 0; c < channels; ++c) {
    (*s)[c] = p[0]->f[c] / std::sqrt(static_cast<double>(p[3]->f[c]) + eps);
    (*t)[c] = p[1]->f[c] - p[2]->f[c] * (*s)[c];
  }
  return true;
}

int add_float_const(ModelGraph& g, const std::string& name, std::vector<int64_t> dims, std::vector<float> data) {
  auto t = std::make_shared<HostTensor>();
  t->dtype = ScalarType::Float32;
  t->dims = std::move(dims);
  t->f = std::move(data);
  return g.add_const(name, std::move(t));
}

// The group attribute of a Conv or ConvTranspose; false if the attributes do not read.
bool conv_group(const ir::Node& conv, int64_t* group) {
  if (conv.op == fb::OpType::ConvTranspose) {
    const Result<ir::ConvTransposeAttrs> a = ir::ConvTransposeAttrs::read(conv);
    if (a.ok()) *group = a->group;
    return a.ok();
  }
  const Result<ir::ConvAttrs> a = ir::ConvAttrs::read(conv);
  if (a.ok()) *group = a->group;
  return a.ok();
}

bool fold_into_conv(ModelGraph& g, ir::Node& conv, const ir::Node& bn) {
  const HostTensor* w = float_const(g, conv.inputs[1]);
  const int bias_v = conv.inputs.size() > 2 ? conv.inputs[2] : -1;
  const HostTensor* b = float_const(g, bias_v);
  if (!w || w->dims.size() < 3 || (bias_v >= 0 && !b)) return false;
  const bool transpose = conv.op == fb::OpType::ConvTranspose;
  int64_t group = 0;
  if (!conv_group(conv, &group) || group <= 0) return false;
  const int64_t out_ch = transpose ? w->dims[1] * group : w->dims[0];
  std::vector<double> s, t;
  if (!bn_params(g, bn, out_ch, &s, &t)) return false;
  std::vector<float> nw = w->f;
  const int64_t per_row = w->numel() / (w->dims[0] * w->dims[1]);
  for (int64_t i = 0; i < w->dims[0]; ++i) {
    for (int64_t j = 0; j < w->dims[1]; ++j) {
      int64_t m = i;
      if (transpose) m = (i / (w->dims[0] / group)) * w->dims[1] + j;
      float* row = nw.data() + (i * w->dims[1] + j) * per_row;
      for (int64_t k = 0; k < per_row; ++k) row[k] = static_cast<float>(row[k] * s[m]);
    }
  }
  std::vector<float> nb(out_ch);
  for (int64_t m = 0; m < out_ch; ++m) nb[m] = static_cast<float>((b ? b->f[m] : 0.0) * s[m] + t[m]);
  conv.inputs[1] = add_float_const(g, g.values[conv.inputs[1]].name + ":bn", w->dims, std::move(nw));
  const int nb_v = add_float_const(g, conv.name + ":bn_bias", {out_ch}, std::move(nb));
  if (conv.inputs.size() < 3) conv.inputs.resize(3, -1);
  conv.inputs[2] = nb_v;
  return true;
}

bool fold_into_gemm(ModelGraph& g, ir::Node& gemm, const ir::Node& bn) {
  const HostTensor* w = float_const(g, gemm.inputs[1]);
  const int c_v = gemm.inputs.size() > 2 ? gemm.inputs[2] : -1;
  const HostTensor* c = float_const(g, c_v);
  if (!w || w->dims.size() != 2 || (c_v >= 0 && !c)) return false;
  const std::vector<SymExpr>& out_dims = g.values[gemm.outputs[0]].dims;
  if (out_dims.size() != 2 || !out_dims[1].is_const()) return false;
  const Result<ir::GemmAttrs> attrs = ir::GemmAttrs::read(gemm);
  if (!attrs.ok()) return false;
  const bool tb = attrs->transB != 0;
  const int64_t n = out_dims[1].const_value();
  std::vector<double> s, t;
  if (!bn_params(g, bn, n, &s, &t)) return false;
  std::vector<float> nw = w->f;
  const int64_t rows = w->dims[0], cols = w->dims[1];
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < cols; ++k) {
      const int64_t ch = tb ? r : k;
      nw[r * cols + k] = static_cast<float>(nw[r * cols + k] * s[ch]);
    }
  }
  // New C = (beta * C) * s + t, broadcast over N; C of shape [M, N] keeps its shape.
  const double beta = attrs->beta;
  std::vector<int64_t> c_dims = {n};
  std::vector<float> nc;
  if (c && c->dims.size() == 2 && c->dims[0] != 1) {
    c_dims = {c->dims[0], n};
    HostTensor full = broadcast_to(*c, c_dims);
    nc.resize(full.f.size());
    for (size_t k = 0; k < nc.size(); ++k) nc[k] = static_cast<float>(beta * full.f[k] * s[k % n] + t[k % n]);
  } else {
    HostTensor row;
    if (c) row = broadcast_to(*c, c->dims.size() == 2 ? std::vector<int64_t>{1, n} : std::vector<int64_t>{n});
    nc.resize(n);
    for (int64_t k = 0; k < n; ++k) nc[k] = static_cast<float>((c ? beta * row.f[k] : 0.0) * s[k] + t[k]);
  }
  gemm.inputs[1] = add_float_const(g, g.values[gemm.inputs[1]].name + ":bn", w->dims, std::move(nw));
  if (gemm.inputs.size() < 3) gemm.inputs.resize(3, -1);
  gemm.inputs[2] = add_float_const(g, gemm.name + ":bn_bias", c_dims, std::move(nc));
  // The new C carries beta: the attribute goes back to its default (1).
  std::erase_if(gemm.attrs, [](const ir::Attr& a) { return a.name == "beta"; });
  return true;
}

}  // namespace

Result<int> fold_batch_norms(ModelGraph& g) {
  const std::vector<int> uses = g.use_counts();
  const std::vector<int> producer = g.producers();
  std::vector<bool> removed(g.nodes.size(), false);
  int folded = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& bn = g.nodes[i];
    if (bn.op != fb::OpType::BatchNormalization || bn.inputs.size() < 5 || bn.outputs.size() != 1) continue;
    const int x = bn.inputs[0];
    const int p = x >= 0 ? producer[x] : -1;
    if (p < 0 || removed[p] || uses[x] != 1) continue;
    ir::Node& prod = g.nodes[p];
    if (prod.activation != fb::Activation::None || prod.outputs.size() != 1) continue;
    bool ok = false;
    if (prod.op == fb::OpType::Conv || prod.op == fb::OpType::ConvTranspose) {
      ok = fold_into_conv(g, prod, bn);
    } else if (prod.op == fb::OpType::Gemm) {
      ok = fold_into_gemm(g, prod, bn);
    }
    if (!ok) continue;
    prod.outputs[0] = bn.outputs[0];
    removed[i] = true;
    ++folded;
  }
  std::vector<ir::Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!removed[i]) kept.push_back(std::move(g.nodes[i]));
  }
  g.nodes = std::move(kept);
  return folded;
}

int lower_batch_norms(ModelGraph& g) {
  std::vector<ir::Node> out;
  out.reserve(g.nodes.size());
  int lowered = 0;
  for (ir::Node& bn : g.nodes) {
    if (bn.op != fb::OpType::BatchNormalization || bn.inputs.size() < 5 || bn.outputs.size() != 1 ||
        bn.inputs[0] < 0 || g.values[bn.inputs[0]].dtype != ScalarType::Float32 ||
        g.values[bn.inputs[0]].dims.size() < 2 || !g.values[bn.inputs[0]].dims[1].is_const()) {
      out.push_back(std::move(bn));
      continue;
    }
    const Value& x = g.values[bn.inputs[0]];
    const int64_t channels = x.dims[1].const_value();
    std::vector<double> s, t;
    if (!bn_params(g, bn, channels, &s, &t)) {
      out.push_back(std::move(bn));
      continue;
    }
    std::vector<int64_t> dims(x.dims.size() - 1, 1);
    dims[0] = channels;
    std::vector<float> scale(s.begin(), s.end()), shift(t.begin(), t.end());
    const int scale_v = add_float_const(g, bn.name + ":scale", dims, std::move(scale));
    const int shift_v = add_float_const(g, bn.name + ":shift", dims, std::move(shift));
    const int mid = g.add_value(bn.name + ":scaled", ScalarType::Float32, g.values[bn.inputs[0]].dims);
    ir::Node mul;
    mul.op = fb::OpType::Mul;
    mul.name = bn.name + "/mul";
    mul.inputs = {bn.inputs[0], scale_v};
    mul.outputs = {mid};
    ir::Node add;
    add.op = fb::OpType::Add;
    add.name = bn.name;
    add.inputs = {mid, shift_v};
    add.outputs = bn.outputs;
    out.push_back(std::move(mul));
    out.push_back(std::move(add));
    ++lowered;
  }
  g.nodes = std::move(out);
  return lowered;
}

}  // namespace tessera::compiler
