// Conformance (conformance.h): the ops that move data without arithmetic: Concat, the reshape
// family (Reshape, Flatten, Squeeze, Unsqueeze), Transpose, Slice, Split, constant Pad, and
// Resize (linear and nearest).
#include <algorithm>
#include <climits>
#include <random>
#include <string>
#include <vector>

#include "tests/backends/common/conformance.h"

namespace tessera::backend_testing {
namespace {

using Op = fb::OpType;

std::vector<ir::Dim> as_dims(const std::vector<int64_t>& d) {
  return std::vector<ir::Dim>(d.begin(), d.end());
}

GraphCase concat_case(std::vector<std::vector<int64_t>> ins, int64_t axis) {
  std::vector<int64_t> out = ins[0];
  const size_t a = static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(out.size()) : axis);
  out[a] = 0;
  for (auto& d : ins) out[a] += d[a];
  GraphCase c = GraphCase::single(Op::Concat, ins, out);
  c.graph.nodes[0].attrs = {ir::Attr::make_int("axis", axis)};
  return c;
}

struct SliceCfg {
  std::vector<int64_t> x, starts, ends, axes, steps;
};

/// Output dims of a slice with positive steps (ONNX clamping).
std::vector<int64_t> slice_out(const SliceCfg& c) {
  std::vector<int64_t> out = c.x;
  for (size_t i = 0; i < c.starts.size(); ++i) {
    int64_t d = c.axes.empty() ? static_cast<int64_t>(i) : c.axes[i];
    if (d < 0) d += static_cast<int64_t>(c.x.size());
    const int64_t dim = c.x[static_cast<size_t>(d)];
    const int64_t step = c.steps.empty() ? 1 : c.steps[i];
    int64_t b = c.starts[i], e = c.ends[i];
    if (b < 0) b += dim;
    if (e < 0) e += dim;
    b = std::clamp<int64_t>(b, 0, dim);
    e = std::clamp<int64_t>(e, 0, dim);
    out[static_cast<size_t>(d)] = e > b ? 1 + (e - b - 1) / step : 0;
  }
  return out;
}

GraphCase slice_case(const SliceCfg& c, uint32_t seed) {
  GraphCase g;
  g.seed = seed;
  int x = g.input(as_dims(c.x));
  int y = g.tensor(as_dims(slice_out(c)));
  ir::Node& n = g.node(Op::Slice, {x}, y);
  n.attrs.push_back(ir::Attr::make_ints("starts", c.starts));
  n.attrs.push_back(ir::Attr::make_ints("ends", c.ends));
  if (!c.axes.empty()) n.attrs.push_back(ir::Attr::make_ints("axes", c.axes));
  if (!c.steps.empty()) n.attrs.push_back(ir::Attr::make_ints("steps", c.steps));
  g.output(y);
  return g;
}

GraphCase split_case(const std::vector<int64_t>& x, int64_t axis, const std::vector<int64_t>& sizes,
                     bool with_split_attr, uint32_t seed) {
  GraphCase g;
  g.seed = seed;
  int in = g.input(as_dims(x));
  const size_t a = static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(x.size()) : axis);
  std::vector<int> outs;
  for (int64_t s : sizes) {
    std::vector<int64_t> d = x;
    d[a] = s;
    outs.push_back(g.tensor(as_dims(d)));
  }
  ir::Node& n = g.node(Op::Split, {in}, outs[0]);
  n.outputs = outs;
  n.attrs.push_back(ir::Attr::make_int("axis", axis));
  if (with_split_attr) n.attrs.push_back(ir::Attr::make_ints("split", sizes));
  for (int o : outs) g.output(o);
  return g;
}

/// Constant Pad of `x`: `pads` (begins then ends) over `axes` (empty: all), filled with `value`.
GraphCase pad_case(const std::vector<int64_t>& x, const std::vector<int64_t>& pads,
                   const std::vector<int64_t>& axes, float value, uint32_t seed) {
  GraphCase g;
  g.seed = seed;
  int in = g.input(as_dims(x));
  std::vector<int64_t> out = x;
  const size_t count = axes.empty() ? x.size() : axes.size();
  for (size_t i = 0; i < count; ++i) {
    int64_t d = axes.empty() ? static_cast<int64_t>(i) : axes[i];
    if (d < 0) d += static_cast<int64_t>(x.size());
    out[static_cast<size_t>(d)] += pads[i] + pads[count + i];
  }
  int y = g.tensor(as_dims(out));
  ir::Node& n = g.node(Op::Pad, {in}, y);
  n.attrs.push_back(ir::Attr::make_ints("pads", pads));
  if (!axes.empty()) n.attrs.push_back(ir::Attr::make_ints("axes", axes));
  if (value != 0.0f) n.attrs.push_back(ir::Attr::make_float("value", value));
  g.output(y);
  return g;
}

GraphCase resize_case(std::vector<int64_t> in, int64_t oh, int64_t ow,
                      std::vector<ir::Attr> attrs) {
  GraphCase c = GraphCase::single(Op::Resize, {in}, {in[0], in[1], oh, ow});
  c.graph.nodes[0].attrs = std::move(attrs);
  return c;
}

}  // namespace

// ---- Concat -------------------------------------------------------------------------------------

TEST_P(Concat, Axes) {
  for (int64_t axis : {0, 1, 2, -1}) {
    SCOPED_TRACE(axis);
    std::vector<int64_t> a = {2, 3, 4};
    const size_t ax = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
    a[ax] = 4;
    std::vector<int64_t> b = a;
    b[ax] = 5;
    EXPECT_CONFORMS(concat_case({a, b}, axis));
  }
}

TEST_P(Concat, SeveralInputs) {
  EXPECT_CONFORMS(concat_case({{1, 3, 4, 5}, {1, 2, 4, 5}}, 1));
  EXPECT_CONFORMS(concat_case({{2, 3, 4, 5}, {2, 3, 1, 5}, {2, 3, 2, 5}}, 2));
  EXPECT_CONFORMS(concat_case({{2, 3, 4, 5}, {2, 3, 4, 1}}, -1));
  EXPECT_CONFORMS(concat_case({{3, 7}, {3, 2}, {3, 1}, {3, 5}}, 1));
  EXPECT_CONFORMS(concat_case({{3, 7}, {2, 7}}, 0));
}

TEST_P(Concat, WithAConstantInput) {
  for (int64_t axis : {1, -1}) {
    SCOPED_TRACE(axis);
    GraphCase g;
    int a = g.input({2, 3, 4});
    int b = g.constant(axis == 1 ? std::vector<int64_t>{2, 2, 4} : std::vector<int64_t>{2, 3, 1});
    int c = g.input(axis == 1 ? std::vector<ir::Dim>{2, 5, 4} : std::vector<ir::Dim>{2, 3, 2});
    int y = g.tensor(axis == 1 ? std::vector<ir::Dim>{2, 10, 4} : std::vector<ir::Dim>{2, 3, 7});
    g.node(Op::Concat, {a, b, c}, y).attrs.push_back(ir::Attr::make_int("axis", axis));
    g.output(y);
    EXPECT_CONFORMS(g);
  }
}

// ---- Reshape, Flatten, Squeeze, Unsqueeze -------------------------------------------------------

TEST_P(Reshape, Family) {
  EXPECT_CONFORMS(GraphCase::single(Op::Reshape, {{2, 3, 4, 5}}, {6, 20}));
  EXPECT_CONFORMS(GraphCase::single(Op::Reshape, {{2, 6}}, {3, 4}));
  GraphCase f = GraphCase::single(Op::Flatten, {{2, 3, 4, 5}}, {2, 60});
  f.graph.nodes[0].attrs = {ir::Attr::make_int("axis", 1)};
  EXPECT_CONFORMS(f);
  GraphCase s = GraphCase::single(Op::Squeeze, {{2, 1, 5, 1}}, {2, 5});
  s.graph.nodes[0].attrs = {ir::Attr::make_ints("axes", {1, 3})};
  EXPECT_CONFORMS(s);
  GraphCase u = GraphCase::single(Op::Unsqueeze, {{2, 5}}, {2, 1, 5, 1});
  u.graph.nodes[0].attrs = {ir::Attr::make_ints("axes", {1, 3})};
  EXPECT_CONFORMS(u);
}

TEST_P(Reshape, ViewsOfInputsAndOutputs) {
  GraphCase g;
  int x = g.input({2, 3, 4});
  int r = g.tensor({6, 4});
  g.node(Op::Reshape, {x}, r);
  int u = g.tensor({1, 6, 4});
  g.node(Op::Unsqueeze, {r}, u).attrs.push_back(ir::Attr::make_ints("axes", {0}));
  int s = g.tensor({1, 6, 4});
  g.node(Op::Relu, {u}, s);
  int q = g.tensor({6, 4});
  g.node(Op::Squeeze, {s}, q).attrs.push_back(ir::Attr::make_ints("axes", {0}));
  g.output(q);
  g.output(r);  // a view of the input is also an output
  EXPECT_CONFORMS(g);
}

// ---- Transpose ----------------------------------------------------------------------------------

TEST_P(Transpose, Perms) {
  GraphCase g = GraphCase::single(Op::Transpose, {{2, 3, 4, 5}}, {4, 2, 5, 3});
  g.graph.nodes[0].attrs.push_back(ir::Attr::make_ints("perm", {2, 0, 3, 1}));
  EXPECT_CONFORMS(g);
  GraphCase n = GraphCase::single(Op::Transpose, {{2, 3, 4, 5}}, {2, 4, 5, 3});
  n.graph.nodes[0].attrs.push_back(ir::Attr::make_ints("perm", {0, 2, 3, 1}));
  EXPECT_CONFORMS(n);
  EXPECT_CONFORMS(GraphCase::single(Op::Transpose, {{3, 7}}, {7, 3}));  // default: reversed
}

// ---- Slice --------------------------------------------------------------------------------------

TEST_P(Slice, Variants) {
  EXPECT_CONFORMS(slice_case({{5, 7}, {1, 2}, {4, 6}, {}, {}}, 1));
  EXPECT_CONFORMS(slice_case({{3, 9, 5}, {1}, {8}, {1}, {3}}, 2));      // steps
  EXPECT_CONFORMS(slice_case({{3, 9, 5}, {-4}, {1000}, {-1}, {}}, 3));  // clamped
  EXPECT_CONFORMS(slice_case({{2, 6, 7, 5}, {0, 1}, {INT64_MAX, -1}, {3, 1}, {2, 2}}, 4));
  EXPECT_CONFORMS(slice_case({{11}, {-9}, {-2}, {}, {4}}, 5));
}

TEST_P(Slice, RandomShapes) {
  std::mt19937 rng(99);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int iter = 0; iter < 24; ++iter) {
    SliceCfg c;
    const int rank = pick(1, 4);
    for (int d = 0; d < rank; ++d) c.x.push_back(pick(1, 9));
    for (int d = 0; d < rank; ++d) {
      if (pick(0, 2) == 0) continue;
      c.axes.push_back(pick(0, 1) ? d : d - rank);
      c.starts.push_back(pick(-10, 9));
      c.ends.push_back(pick(-10, 12));
      c.steps.push_back(pick(1, 3));
    }
    if (c.starts.empty()) continue;
    bool empty = false;
    for (int64_t d : slice_out(c)) empty = empty || d == 0;
    if (empty) continue;
    SCOPED_TRACE("iteration " + std::to_string(iter));
    EXPECT_CONFORMS(slice_case(c, 300 + static_cast<uint32_t>(iter)));
  }
}

// ---- Split --------------------------------------------------------------------------------------

TEST_P(Split, Axes) {
  EXPECT_CONFORMS(split_case({2, 10, 3}, 1, {4, 6}, true, 1));
  EXPECT_CONFORMS(split_case({6, 4}, 0, {3, 3}, false, 2));  // equal parts
  EXPECT_CONFORMS(split_case({2, 3, 9}, -1, {2, 3, 4}, true, 3));
  EXPECT_CONFORMS(split_case({1, 8, 5, 5}, 1, {2, 2, 4}, true, 4));
  EXPECT_CONFORMS(split_case({4, 6}, 0, {1, 3}, true, 5));
  EXPECT_CONFORMS(split_case({3, 10, 5}, 1, {3, 3, 4}, true, 6));
  EXPECT_CONFORMS(split_case({3, 10, 5}, -1, {2, 3}, false, 7));
  EXPECT_CONFORMS(split_case({2, 7}, 1, {7}, false, 8));  // one output
}

// ---- Pad ----------------------------------------------------------------------------------------

TEST_P(Pad, Constant) {
  EXPECT_CONFORMS(pad_case({1, 3, 5, 5}, {0, 0, 1, 2, 0, 0, 2, 1}, {}, 0.0f, 1));
  EXPECT_CONFORMS(pad_case({1, 3, 5, 4}, {0, 0, 1, 2, 0, 0, 2, 1}, {}, 0.5f, 2));
  EXPECT_CONFORMS(pad_case({2, 3, 5, 4}, {0, 1, 0, 0, 0, 2, 0, 1}, {}, 0.0f, 3));
  EXPECT_CONFORMS(pad_case({4, 7}, {1, 0, 3, 2}, {}, -1.5f, 4));
  EXPECT_CONFORMS(pad_case({3, 7}, {1, 0, 2, 1}, {}, 0.0f, 5));
  EXPECT_CONFORMS(pad_case({2, 3, 4}, {1, 2, 0, 3}, {2, -3}, 0.25f, 6));
  EXPECT_CONFORMS(pad_case({9}, {0, 0}, {}, 0.0f, 7));  // nothing to pad
}

// ---- Resize -------------------------------------------------------------------------------------

TEST_P(Resize, Linear) {
  for (const char* ctm : {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"}) {
    SCOPED_TRACE(ctm);
    auto attrs = [&] {
      return std::vector<ir::Attr>{ir::Attr::make_string("mode", "linear"),
                                   ir::Attr::make_string("coordinate_transformation_mode", ctm)};
    };
    EXPECT_CONFORMS(resize_case({1, 3, 4, 5}, 8, 10, attrs()));
    EXPECT_CONFORMS(resize_case({2, 2, 7, 6}, 11, 9, attrs()));
    EXPECT_CONFORMS(resize_case({1, 4, 9, 8}, 5, 3, attrs()));
  }
}

TEST_P(Resize, Nearest) {
  EXPECT_CONFORMS(
      resize_case({1, 2, 4, 5}, 8, 10,
                  {ir::Attr::make_string("mode", "nearest"),
                   ir::Attr::make_string("coordinate_transformation_mode", "asymmetric"),
                   ir::Attr::make_string("nearest_mode", "floor")}));
}

}  // namespace tessera::backend_testing
