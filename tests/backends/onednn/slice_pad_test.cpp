// oneDNN's own Slice, Split and Pad cases: of layouts oneDNN chose (convolution outputs and
// constants), repeated runs, and the variants check_node rejects. The cases every backend shares
// are in tests/backends/common/shape_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "harness.h"
#include "tessera/backends/onednn/supports.h"

namespace tessera::onednn::testing {
namespace {

using Op = fb::OpType;

std::vector<ir::Dim> as_dims(const std::vector<int64_t>& d) {
  return std::vector<ir::Dim>(d.begin(), d.end());
}

std::string rejection(const GraphCase& g, size_t node = 0) {
  auto bytes = ir::encode_graph(g.graph);
  const fb::Graph* fg = flatbuffers::GetRoot<fb::Graph>(bytes.data());
  std::string why;
  if (onednn_supports(*fg, *fg->nodes()->Get(static_cast<uint32_t>(node)), &why)) return "";
  return why.empty() ? "(no reason)" : why;
}

/// A 3x3 Conv (+Relu) with `cout` channels keeping the spatial size: oneDNN picks its layout.
int conv3x3(GraphCase& g, int x, int64_t cin, int64_t cout, int64_t hw) {
  int y = g.tensor({1, cout, hw, hw});
  ir::Node& node = g.node(Op::Conv, {x, g.constant({cout, cin, 3, 3}), g.constant({cout})}, y);
  node.attrs.push_back(ir::Attr::make_ints("kernel_shape", {3, 3}));
  node.attrs.push_back(ir::Attr::make_ints("pads", {1, 1, 1, 1}));
  node.activation = fb::Activation::Relu;
  return y;
}

// ---- Slice -------------------------------------------------------------------------------------

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

TEST(OnednnSlice, OfAConvOutputIntoAConv) {
  GraphCase g;
  int x = g.input({1, 5, 9, 9});
  int c = conv3x3(g, x, 5, 24, 9);
  int s = g.tensor({1, 10, 9, 9});
  ir::Node& n = g.node(Op::Slice, {c}, s);
  n.attrs.push_back(ir::Attr::make_ints("starts", {3}));
  n.attrs.push_back(ir::Attr::make_ints("ends", {13}));
  n.attrs.push_back(ir::Attr::make_ints("axes", {1}));
  g.output(conv3x3(g, s, 10, 6, 9));
  EXPECT_TRUE(matches_portable(g));
}

TEST(OnednnSlice, Rejected) {
  GraphCase reverse = slice_case({{5, 7}, {0}, {4}, {0}, {1}}, 6);  // output [4, 7]
  reverse.graph.nodes[0].attrs[0] = ir::Attr::make_ints("starts", {4});
  reverse.graph.nodes[0].attrs[1] = ir::Attr::make_ints("ends", {0});
  reverse.graph.nodes[0].attrs[3] = ir::Attr::make_ints("steps", {-1});
  EXPECT_NE(rejection(reverse).find("negative steps"), std::string::npos) << rejection(reverse);
  GraphCase zero = slice_case({{5, 7}, {0}, {3}, {0}, {1}}, 7);
  zero.graph.nodes[0].attrs[3] = ir::Attr::make_ints("steps", {0});
  EXPECT_NE(rejection(zero).find("a step is 0"), std::string::npos) << rejection(zero);
  EXPECT_NE(rejection(slice_case({{5, 7}, {0, 0}, {3, 3}, {1, -1}, {}}, 8)).find("repeated"),
            std::string::npos);
  GraphCase lengths = slice_case({{5, 7}, {0}, {3}, {}, {}}, 9);
  lengths.graph.nodes[0].attrs[1] = ir::Attr::make_ints("ends", {3, 4});
  EXPECT_NE(rejection(lengths).find("different lengths"), std::string::npos) << rejection(lengths);
  GraphCase wrong = slice_case({{5, 7}, {0}, {3}, {}, {}}, 10);
  wrong.graph.values[static_cast<size_t>(wrong.graph.outputs[0])].dims[0] = ir::Dim(2);
  EXPECT_NE(rejection(wrong).find("output shape does not match"), std::string::npos);
}

// ShuffleNetV2's unit: a Concat into a channel shuffle, its output split into halves by two
// Slices, the second half convolved, then Concat and shuffle again. The shuffle writes
// channels-last and the Slices keep it, so nothing is reordered between them and the
// convolutions (before, each shuffle wrote row-major, and each block's convolution began with a
// reorder of its half back to channels-last: 16 of ShuffleNetV2's 135 steps).
TEST(OnednnSlice, ShuffleNetHalvesStayChannelsLast) {
  GraphCase g;
  g.seed = 77;
  const int x = g.input({1, 16, 7, 7});
  auto conv1x1 = [&](int in, int64_t cin, int64_t cout, const char* name) {
    const int y = g.tensor({1, cout, 7, 7});
    ir::Node& n = g.node(Op::Conv, {in, g.constant({cout, cin, 1, 1}), g.constant({cout})}, y);
    n.activation = fb::Activation::Relu;
    n.name = name;
    return y;
  };
  auto concat_shuffle = [&](int a, int b, const char* name) {
    const int cat = g.tensor({1, 32, 7, 7});
    g.node(Op::Concat, {a, b}, cat).attrs = {ir::Attr::make_int("axis", 1)};
    const int y = g.tensor({1, 32, 7, 7});
    ir::Node& n = g.node(Op::ChannelShuffle, {cat}, y);
    n.attrs = {ir::Attr::make_int("group", 2)};
    n.name = name;
    return y;
  };
  auto half = [&](int in, int64_t start, const char* name) {
    const int y = g.tensor({1, 16, 7, 7});
    ir::Node& n = g.node(Op::Slice, {in}, y);
    n.attrs = {ir::Attr::make_ints("starts", {start}), ir::Attr::make_ints("ends", {start + 16}),
               ir::Attr::make_ints("axes", {1})};
    n.name = name;
    return y;
  };
  const int s1 = concat_shuffle(conv1x1(x, 16, 16, "a"), conv1x1(x, 16, 16, "b"), "shuffle1");
  const int x1 = half(s1, 0, "slice1");
  const int x2 = half(s1, 16, "slice2");
  g.output(concat_shuffle(x1, conv1x1(x2, 16, 16, "c"), "shuffle2"));
  EXPECT_TRUE(matches_portable(g));
  Session s;
  ASSERT_TRUE(s.init(g).is_ok());
  const DelegateSummary sum = summarize_delegate(s.handle());
  std::string steps;
  int unnamed_reorders = 0;
  for (const std::string& step : sum.steps) {
    steps += step + "\n";
    if (step.rfind("reorder:reorder ", 0) == 0) ++unnamed_reorders;
  }
  // Where the convolutions write channels-last (oneDNN's brgconv kernels, with AVX-512), at most
  // the graph input's, into the first convolutions' layout. Elsewhere (with AVX2 they write
  // aBcd8b) the second half is reordered into that layout before its convolution too.
  const bool channels_last = std::any_of(sum.steps.begin(), sum.steps.end(), [](const auto& st) {
    return st.rfind("conv:", 0) == 0 && st.find(" brg") != std::string::npos;
  });
  EXPECT_LE(unnamed_reorders, channels_last ? 1 : 2) << steps;
}

// ---- Split -------------------------------------------------------------------------------------

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

TEST(OnednnSplit, ChannelsOfAConvOutput) {
  // ShuffleNet: split the channels of a convolution output and convolve each half.
  for (int64_t c : {16, 58, 7}) {
    GraphCase g;
    int x = g.input({1, 3, 8, 8});
    int h = conv3x3(g, x, 3, 2 * c, 8);
    int a = g.tensor({1, c, 8, 8});
    int b = g.tensor({1, c, 8, 8});
    ir::Node& n = g.node(Op::Split, {h}, a);
    n.outputs = {a, b};
    n.attrs.push_back(ir::Attr::make_int("axis", 1));
    g.output(conv3x3(g, a, c, 4, 8));
    g.output(b);
    EXPECT_TRUE(matches_portable(g)) << c;
  }
}

TEST(OnednnSplit, OfAConstantWithFusedRelu) {
  // A constant goes through the row-major path; the fused Relu applies to output 0 only.
  GraphCase g;
  int x = g.input({2, 9});
  int w = g.constant({2, 9});
  int a = g.tensor({2, 4});
  int b = g.tensor({2, 5});
  ir::Node& n = g.node(Op::Split, {w}, a);
  n.outputs = {a, b};
  n.attrs.push_back(ir::Attr::make_int("axis", 1));
  n.activation = fb::Activation::Relu;
  int c = g.tensor({2, 9});
  g.node(Op::Concat, {a, b}, c).attrs.push_back(ir::Attr::make_int("axis", 1));
  int y = g.tensor({2, 9});
  g.node(Op::Add, {x, c}, y);
  g.output(y);
  EXPECT_TRUE(matches_portable(g));
}

TEST(OnednnSplit, Rejected) {
  GraphCase bad = split_case({3, 10}, 1, {3, 7}, true, 5);
  bad.graph.nodes[0].attrs[1] = ir::Attr::make_ints("split", {4, 6});
  EXPECT_NE(rejection(bad).find("split does not match"), std::string::npos) << rejection(bad);
  GraphCase axis = split_case({3, 10}, 1, {3, 7}, false, 6);
  axis.graph.nodes[0].attrs[0] = ir::Attr::make_int("axis", 2);
  EXPECT_NE(rejection(axis).find("axis out of range"), std::string::npos) << rejection(axis);
  GraphCase count = split_case({3, 10}, 1, {3, 7}, false, 7);
  count.graph.nodes[0].attrs.push_back(ir::Attr::make_int("num_outputs", 3));
  EXPECT_NE(rejection(count).find("num_outputs"), std::string::npos) << rejection(count);
}

// ---- Pad ---------------------------------------------------------------------------------------

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

TEST(OnednnPad, RepeatedRunsKeepTheBorder) {
  // Pad -> Sigmoid -> Add: the border must hold the pad value on every run.
  GraphCase g;
  int x = g.input({2, 3, 4});
  int p = g.tensor({2, 5, 7});
  ir::Node& n = g.node(Op::Pad, {x}, p);
  n.attrs.push_back(ir::Attr::make_ints("pads", {0, 1, 2, 0, 1, 1}));
  n.attrs.push_back(ir::Attr::make_float("value", 0.5f));
  int s = g.tensor({2, 5, 7});
  g.node(Op::Sigmoid, {p}, s);
  int z = g.tensor({2, 5, 7});
  g.node(Op::Add, {s, g.input({2, 5, 7})}, z);
  g.output(z);
  std::vector<Floats> inputs = random_inputs(g, 3);
  auto want = run_portable(g, inputs);
  ASSERT_TRUE(want.ok());
  RunOptions o;
  o.repeat = 3;
  auto got = run_onednn(g, inputs, o);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_TRUE(close(*got, *want));
}

TEST(OnednnPad, OfAConvOutputWithFusedClip) {
  GraphCase g;
  int x = g.input({1, 4, 6, 6});
  int c = conv3x3(g, x, 4, 16, 6);
  int p = g.tensor({1, 16, 9, 8});
  ir::Node& n = g.node(Op::Pad, {c}, p);
  n.attrs.push_back(ir::Attr::make_ints("pads", {0, 0, 1, 2, 0, 0, 2, 0}));
  n.attrs.push_back(ir::Attr::make_float("value", -2.0f));
  n.activation = fb::Activation::Clip;
  n.activation_min = -1.0f;
  n.activation_max = 0.5f;
  g.output(p);
  EXPECT_TRUE(matches_portable(g));
}

TEST(OnednnPad, Rejected) {
  GraphCase reflect = pad_case({4, 7}, {1, 1, 1, 1}, {}, 0.0f, 5);
  reflect.graph.nodes[0].attrs.push_back(ir::Attr::make_string("mode", "reflect"));
  EXPECT_NE(rejection(reflect).find("only mode 'constant'"), std::string::npos)
      << rejection(reflect);
  EXPECT_NE(rejection(pad_case({4, 7}, {-1, 0, 0, 0}, {}, 0.0f, 6)).find("negative pads"),
            std::string::npos);
  GraphCase length = pad_case({4, 7}, {1, 1, 1, 1}, {}, 0.0f, 7);
  length.graph.nodes[0].attrs[0] = ir::Attr::make_ints("pads", {1, 1, 1});
  EXPECT_NE(rejection(length).find("wrong length"), std::string::npos) << rejection(length);
}

}  // namespace
}  // namespace tessera::onednn::testing
