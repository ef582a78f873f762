#include "tessera/compiler/passes/pattern_fusion.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "tessera/compiler/shape_inference.h"
#include "tessera/ir/op_attrs.h"

namespace tessera::compiler {
namespace {

using fb::OpType;

// Producer lookups and use counts over the graph as it is when the matcher starts.
class Matcher {
 public:
  explicit Matcher(ModelGraph& g)
      : g_(g), uses_(g.use_counts()), producer_(g.producers()), consumers_(g.values.size()), removed_(g.nodes.size(), false) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      for (int v : g.nodes[i].inputs) {
        if (v >= 0) consumers_[v].push_back(static_cast<int>(i));
      }
    }
  }

  // The node producing `v` if it is `op`, not yet removed, and (when `single_use`) read once.
  ir::Node* producer(int v, OpType op, bool single_use = true) {
    if (v < 0 || producer_[v] < 0 || removed_[producer_[v]]) return nullptr;
    ir::Node& n = g_.nodes[producer_[v]];
    if (n.op != op || n.activation != fb::Activation::None || n.outputs.size() != 1) return nullptr;
    if (single_use && uses_[v] != 1) return nullptr;
    return &n;
  }
  int index_of(const ir::Node* n) const { return static_cast<int>(n - g_.nodes.data()); }
  void remove(const ir::Node* n) { removed_[index_of(n)] = true; }
  bool removed(size_t i) const { return removed_[i]; }
  int uses(int v) const { return uses_[v]; }

  // A float scalar constant (any rank, one element).
  bool scalar(int v, float* out) const {
    if (v < 0) return false;
    const HostTensor* t = g_.values[v].data.get();
    if (!t || !t->is_float() || t->numel() != 1) return false;
    *out = t->f[0];
    return true;
  }
  // For a two-input commutative node reading `v`, the other input; -1 if `v` is not an input.
  static int other(const ir::Node& n, int v) {
    if (n.inputs.size() != 2) return -1;
    if (n.inputs[0] == v) return n.inputs[1];
    if (n.inputs[1] == v) return n.inputs[0];
    return -1;
  }
  // The node reading `v` as its only consumer, or nullptr.
  ir::Node* sole_consumer(int v) {
    if (v < 0 || uses_[v] != 1 || consumers_[v].size() != 1 || removed_[consumers_[v][0]]) return nullptr;
    return &g_.nodes[consumers_[v][0]];
  }
  void compact() {
    std::vector<ir::Node> kept;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (!removed_[i]) kept.push_back(std::move(g_.nodes[i]));
    }
    g_.nodes = std::move(kept);
  }

 private:
  ModelGraph& g_;
  std::vector<int> uses_;
  std::vector<int> producer_;
  std::vector<std::vector<int>> consumers_;
  std::vector<bool> removed_;
};

bool near(float a, double b) { return std::fabs(a - b) <= 1e-4 * std::fabs(b); }

bool is_graph_output(const ModelGraph& g, int v) {
  for (int o : g.outputs) {
    if (o == v) return true;
  }
  return false;
}

}  // namespace

int fuse_gelu(ModelGraph& g) {
  Matcher m(g);
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (m.removed(i) || g.nodes[i].op != OpType::Erf) continue;
    ir::Node* erf = &g.nodes[i];
    const int e = erf->outputs[0];
    if (m.uses(e) != 1 || is_graph_output(g, e)) continue;
    // x / sqrt(2) or x * (1 / sqrt(2)).
    int x = -1;
    float c;
    ir::Node* scale = m.producer(erf->inputs[0], OpType::Div);
    if (scale && m.scalar(scale->inputs[1], &c) && near(c, std::sqrt(2.0))) {
      x = scale->inputs[0];
    } else if ((scale = m.producer(erf->inputs[0], OpType::Mul)) != nullptr) {
      for (int k = 0; k < 2; ++k) {
        if (m.scalar(scale->inputs[k], &c) && near(c, std::sqrt(0.5))) x = scale->inputs[1 - k];
      }
    }
    if (x < 0) continue;
    // 1 + erf(.)
    ir::Node* add = m.sole_consumer(e);
    if (!add || add->op != OpType::Add || !m.scalar(Matcher::other(*add, e), &c) || c != 1.0f) continue;
    const int a = add->outputs[0];
    // Either (x * a) * 0.5 or (x * 0.5) * a.
    ir::Node* mul1 = m.sole_consumer(a);
    if (!mul1 || mul1->op != OpType::Mul || is_graph_output(g, a)) continue;
    const int other = Matcher::other(*mul1, a);
    ir::Node* last = nullptr;
    ir::Node* half_node = nullptr;
    if (other == x) {
      const int xa = mul1->outputs[0];
      ir::Node* mul2 = m.sole_consumer(xa);
      if (mul2 && mul2->op == OpType::Mul && !is_graph_output(g, xa) && m.scalar(Matcher::other(*mul2, xa), &c) &&
          c == 0.5f) {
        last = mul2;
      }
    } else if ((half_node = m.producer(other, OpType::Mul)) != nullptr) {
      const int hx = Matcher::other(*half_node, x);
      if (hx >= 0 && m.scalar(hx, &c) && c == 0.5f) last = mul1;
    }
    if (!last) continue;
    for (ir::Node* n : {scale, erf, add, mul1, half_node}) {
      if (n && n != last) m.remove(n);
    }
    ir::Node gelu;
    gelu.op = OpType::Gelu;
    gelu.name = last->name;
    gelu.inputs = {x};
    gelu.outputs = last->outputs;
    // No attributes: approximate's default is the erf form matched here.
    *last = std::move(gelu);
    ++fused;
  }
  m.compact();
  return fused;
}

namespace {

// The axes of a ReduceMean that keeps its dims; empty when it does not, reduces every axis, or
// its attributes do not read (such a node is left for load validation to report).
std::vector<int64_t> kept_mean_axes(const ir::Node& mean) {
  const Result<ir::ReduceAttrs> a = ir::ReduceAttrs::read(mean);
  if (!a.ok() || a->keepdims != 1) return {};
  return std::vector<int64_t>(a->axes.begin(), a->axes.end());
}

}  // namespace

int fuse_layer_norm(ModelGraph& g) {
  Matcher m(g);
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (m.removed(i) || g.nodes[i].op != OpType::Sqrt) continue;
    ir::Node* sqrt = &g.nodes[i];
    float c;
    // var + eps
    ir::Node* add_eps = m.producer(sqrt->inputs[0], OpType::Add);
    if (!add_eps) continue;
    int var = -1;
    float eps = 0;
    for (int k = 0; k < 2; ++k) {
      if (m.scalar(add_eps->inputs[k], &c)) {
        eps = c;
        var = add_eps->inputs[1 - k];
      }
    }
    ir::Node* var_mean = m.producer(var, OpType::ReduceMean);
    if (!var_mean) continue;
    const std::vector<int64_t> var_axes = kept_mean_axes(*var_mean);
    if (var_axes.empty()) continue;
    ir::Node* pow = m.producer(var_mean->inputs[0], OpType::Pow);
    if (!pow || !m.scalar(pow->inputs[1], &c) || c != 2.0f) continue;
    const int d = pow->inputs[0];
    ir::Node* sub = m.producer(d, OpType::Sub, /*single_use=*/false);
    if (!sub || m.uses(d) != 2 || is_graph_output(g, d)) continue;
    const int x = sub->inputs[0];
    ir::Node* mean = m.producer(sub->inputs[1], OpType::ReduceMean);
    if (!mean || mean->inputs[0] != x) continue;
    // Both means over the same trailing axes.
    const size_t rank = g.values[x].dims.size();
    const std::vector<int64_t> axes = kept_mean_axes(*mean);
    if (axes.empty() || axes != var_axes) continue;
    bool trailing = true;
    for (size_t k = 0; k < axes.size(); ++k) {
      trailing = trailing && axes[k] == static_cast<int64_t>(rank - axes.size() + k);
    }
    if (!trailing) continue;
    const int64_t axis = static_cast<int64_t>(rank - axes.size());
    // d / sqrt(...)
    const int s = sqrt->outputs[0];
    ir::Node* div = m.sole_consumer(s);
    if (!div || div->op != OpType::Div || div->inputs[0] != d || div->inputs[1] != s) continue;
    // Optional affine part; its parameters must cover exactly x.shape[axis:].
    std::vector<SymExpr> norm_dims(g.values[x].dims.begin() + axis, g.values[x].dims.end());
    auto affine_param = [&](int v) {
      if (v < 0 || !g.values[v].data || !g.values[v].data->is_float()) return false;
      std::vector<SymExpr> pd = g.values[v].dims;
      while (pd.size() > norm_dims.size() && pd.front().is_const() && pd.front().const_value() == 1) {
        pd.erase(pd.begin());
      }
      return pd == norm_dims;
    };
    ir::Node* last = div;
    int scale = -1, bias = -1;
    const int n = div->outputs[0];
    ir::Node* mul = is_graph_output(g, n) ? nullptr : m.sole_consumer(n);
    if (mul && mul->op == OpType::Mul && affine_param(Matcher::other(*mul, n))) {
      scale = Matcher::other(*mul, n);
      last = mul;
      const int w = mul->outputs[0];
      ir::Node* add = is_graph_output(g, w) ? nullptr : m.sole_consumer(w);
      if (add && add->op == OpType::Add && affine_param(Matcher::other(*add, w))) {
        bias = Matcher::other(*add, w);
        last = add;
      }
    }
    // Scale and bias as 1-D-or-more tensors of x.shape[axis:] exactly.
    std::vector<int64_t> shape;
    for (const SymExpr& e : norm_dims) {
      if (!e.is_const()) {
        shape.clear();
        break;
      }
      shape.push_back(e.const_value());
    }
    if (shape.size() != norm_dims.size()) continue;
    auto reshaped = [&](int v, float fill) {
      if (v >= 0 && g.values[v].data->dims == shape) return v;
      auto t = std::make_shared<HostTensor>();
      t->dtype = ScalarType::Float32;
      t->dims = shape;
      if (v >= 0) {
        t->f = g.values[v].data->f;
      } else {
        t->f.assign(static_cast<size_t>(t->numel()), fill);
      }
      return g.add_const(v >= 0 ? g.values[v].name : last->name + ":scale", std::move(t));
    };
    const int scale_v = reshaped(scale, 1.0f);
    const int bias_v = bias >= 0 ? reshaped(bias, 0.0f) : -1;
    for (ir::Node* node : {mean, sub, pow, var_mean, add_eps, sqrt, div, mul}) {
      if (node && node != last && (node == mul ? scale >= 0 : true)) m.remove(node);
    }
    ir::Node ln;
    ln.op = OpType::LayerNormalization;
    ln.name = last->name;
    ln.inputs = {x, scale_v, bias_v};
    ln.outputs = last->outputs;
    ln.attrs = {ir::Attr::make_int("axis", axis), ir::Attr::make_float("epsilon", eps)};
    *last = std::move(ln);
    ++fused;
  }
  m.compact();
  return fused;
}

namespace {

// Whether `n` is a Transpose whose perm is exactly 0, 2, 1, 3, 4 (swaps axes 1 and 2 of rank 5).
bool swaps_axes_1_and_2_of_rank_5(const ir::Node& n) {
  const Result<ir::TransposeAttrs> a = ir::TransposeAttrs::read(n);
  if (!a.ok()) return false;
  static constexpr int64_t kPerm[] = {0, 2, 1, 3, 4};
  return std::equal(a->perm.begin(), a->perm.end(), std::begin(kPerm), std::end(kPerm));
}

}  // namespace

int fuse_channel_shuffle(ModelGraph& g) {
  Matcher m(g);
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (m.removed(i) || g.nodes[i].op != OpType::Transpose) continue;
    ir::Node* transpose = &g.nodes[i];
    if (transpose->activation != fb::Activation::None || transpose->inputs.size() != 1 ||
        transpose->outputs.size() != 1 || !swaps_axes_1_and_2_of_rank_5(*transpose)) {
      continue;
    }
    // Reshape [N, C, H, W] -> [N, g, C/g, H, W], read only by the Transpose.
    const int split = transpose->inputs[0];
    ir::Node* split_node = m.producer(split, OpType::Reshape);
    if (!split_node || is_graph_output(g, split) || split_node->inputs.empty()) continue;
    const int x = split_node->inputs[0];
    if (x < 0) continue;
    const std::vector<SymExpr>& xd = g.values[x].dims;
    const std::vector<SymExpr>& sd = g.values[split].dims;
    if (xd.size() != 4 || sd.size() != 5 || !(sd[0] == xd[0]) || !(sd[3] == xd[2]) ||
        !(sd[4] == xd[3])) {
      continue;
    }
    if (!xd[1].is_const() || !sd[1].is_const() || !sd[2].is_const()) continue;
    const int64_t groups = sd[1].const_value();
    if (groups < 1 || sd[2].const_value() < 1 ||
        groups * sd[2].const_value() != xd[1].const_value()) {
      continue;
    }
    // Reshape [N, C/g, g, H, W] -> the input's shape, the Transpose's only reader.
    const int swapped = transpose->outputs[0];
    if (is_graph_output(g, swapped)) continue;
    ir::Node* merge = m.sole_consumer(swapped);
    if (!merge || merge->op != OpType::Reshape || merge->outputs.size() != 1 ||
        merge->inputs.empty() || merge->inputs[0] != swapped) {
      continue;
    }
    const int y = merge->outputs[0];
    if (g.values[y].dims != xd || g.values[y].dtype != g.values[x].dtype) continue;
    m.remove(split_node);
    m.remove(transpose);
    ir::Node shuffle;
    shuffle.op = OpType::ChannelShuffle;
    shuffle.name = merge->name;
    shuffle.inputs = {x};
    shuffle.outputs = merge->outputs;
    shuffle.attrs = {ir::Attr::make_int("group", groups)};
    shuffle.activation = merge->activation;
    shuffle.activation_min = merge->activation_min;
    shuffle.activation_max = merge->activation_max;
    *merge = std::move(shuffle);
    ++fused;
  }
  m.compact();
  return fused;
}

}  // namespace tessera::compiler
