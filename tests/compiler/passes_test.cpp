#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "tessera/compiler/evaluate.h"
#include "tessera/compiler/host_kernel.h"
#include "tessera/compiler/passes/activation_fusion.h"
#include "tessera/compiler/passes/batchnorm_folding.h"
#include "tessera/compiler/passes/constant_folding.h"
#include "tessera/compiler/passes/dead_node_removal.h"
#include "tessera/compiler/passes/pipeline.h"
#include "tessera/compiler/shape_inference.h"
#include "tessera/ir/op_attrs.h"
#include "tests/compiler/test_util.h"

namespace tessera::compiler {
namespace {

using testing::import_model;
using testing::OnnxBuilder;
using testing::op_names;

std::vector<float> random_floats(size_t n, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Naive NCHW 2-D convolution (stride 1, symmetric pad, groups).
std::vector<float> conv2d(const std::vector<float>& x, int c_in, int h, int w, const std::vector<float>& wt,
                          int c_out, int k, int pad, int group, const std::vector<float>* bias) {
  const int ho = h + 2 * pad - k + 1, wo = w + 2 * pad - k + 1;
  const int cpg_in = c_in / group, cpg_out = c_out / group;
  std::vector<float> y(static_cast<size_t>(c_out) * ho * wo);
  for (int m = 0; m < c_out; ++m) {
    const int g = m / cpg_out;
    for (int oy = 0; oy < ho; ++oy) {
      for (int ox = 0; ox < wo; ++ox) {
        double acc = bias ? (*bias)[m] : 0.0;
        for (int c = 0; c < cpg_in; ++c) {
          for (int ky = 0; ky < k; ++ky) {
            for (int kx = 0; kx < k; ++kx) {
              const int iy = oy + ky - pad, ix = ox + kx - pad;
              if (iy < 0 || ix < 0 || iy >= h || ix >= w) continue;
              acc += static_cast<double>(x[((g * cpg_in + c) * h + iy) * w + ix]) *
                     wt[((m * cpg_in + c) * k + ky) * k + kx];
            }
          }
        }
        y[(m * ho + oy) * wo + ox] = static_cast<float>(acc);
      }
    }
  }
  return y;
}

const HostTensor& data_of(const ModelGraph& g, int v) {
  EXPECT_TRUE(g.values[v].data != nullptr);
  return *g.values[v].data;
}

class BatchNormFolding : public ::testing::TestWithParam<int> {};

TEST_P(BatchNormFolding, ConvPlusBatchNormEqualsFoldedConv) {
  const int group = GetParam();
  const int c_in = 4, c_out = 4, h = 6, w = 5, k = 3;
  std::mt19937 rng(42 + group);
  const auto x = random_floats(c_in * h * w, rng);
  const auto wt = random_floats(c_out * (c_in / group) * k * k, rng);
  const auto bias = random_floats(c_out, rng);
  const auto scale = random_floats(c_out, rng, 0.5f, 2.0f);
  const auto shift = random_floats(c_out, rng);
  const auto mean = random_floats(c_out, rng);
  const auto var = random_floats(c_out, rng, 0.1f, 3.0f);
  const float eps = 1e-3f;

  OnnxBuilder b(13);
  b.input("x", {int64_t{1}, int64_t{c_in}, int64_t{h}, int64_t{w}});
  b.floats("w", {c_out, c_in / group, k, k}, wt);
  b.floats("b", {c_out}, bias);
  for (auto [name, v] : {std::pair{"scale", &scale}, {"shift", &shift}, {"mean", &mean}, {"var", &var}}) {
    b.floats(name, {c_out}, *v);
  }
  b.node("Conv", {"x", "w", "b"}, {"c"}).ints("pads", {1, 1, 1, 1}).i("group", group);
  b.node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"y"}).f("epsilon", eps);
  b.output("y");
  auto g = import_model(b);
  ASSERT_OK(g);
  ASSERT_EQ(op_names(g->nodes), (std::vector<std::string>{"Conv", "BatchNormalization"}));
  auto folded = fold_batch_norms(*g);
  ASSERT_OK(folded);
  EXPECT_EQ(folded.value(), 1);
  ASSERT_EQ(op_names(g->nodes), (std::vector<std::string>{"Conv"}));
  const ir::Node& conv = g->nodes[0];
  EXPECT_EQ(conv.outputs[0], g->outputs[0]);

  // Reference: conv then BN, in double precision.
  std::vector<float> ref = conv2d(x, c_in, h, w, wt, c_out, k, 1, group, &bias);
  const size_t plane = ref.size() / c_out;
  for (int m = 0; m < c_out; ++m) {
    for (size_t i = 0; i < plane; ++i) {
      float& v = ref[m * plane + i];
      v = static_cast<float>((v - mean[m]) / std::sqrt(static_cast<double>(var[m]) + eps) * scale[m] + shift[m]);
    }
  }
  const auto& fw = data_of(*g, conv.inputs[1]).f;
  const auto& fb_ = data_of(*g, conv.inputs[2]).f;
  std::vector<float> got = conv2d(x, c_in, h, w, fw, c_out, k, 1, group, &fb_);
  double max_diff = 0, max_ref = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    max_diff = std::max(max_diff, std::fabs(static_cast<double>(ref[i]) - got[i]));
    max_ref = std::max(max_ref, std::fabs(static_cast<double>(ref[i])));
  }
  EXPECT_LT(max_diff, 1e-5 * std::max(1.0, max_ref)) << "max |ref| " << max_ref;
}

INSTANTIATE_TEST_SUITE_P(Groups, BatchNormFolding, ::testing::Values(1, 2, 4));

TEST(BatchNormFoldingGemm, GemmPlusBatchNormEqualsFoldedGemm) {
  const int m = 3, kdim = 5, n = 4;
  std::mt19937 rng(5);
  const auto a = random_floats(m * kdim, rng);
  const auto wt = random_floats(n * kdim, rng);  // transB: [N, K]
  const auto c = random_floats(n, rng);
  const auto scale = random_floats(n, rng, 0.5f, 2.0f), shift = random_floats(n, rng);
  const auto mean = random_floats(n, rng), var = random_floats(n, rng, 0.2f, 2.0f);
  OnnxBuilder b(13);
  b.input("a", {int64_t{m}, int64_t{kdim}});
  b.floats("w", {n, kdim}, wt);
  b.floats("c", {n}, c);
  b.floats("scale", {n}, scale);
  b.floats("shift", {n}, shift);
  b.floats("mean", {n}, mean);
  b.floats("var", {n}, var);
  b.node("Gemm", {"a", "w", "c"}, {"g"}).i("transB", 1).f("alpha", 0.5f).f("beta", 2.0f);
  b.node("BatchNormalization", {"g", "scale", "shift", "mean", "var"}, {"y"});
  b.output("y");
  auto g = import_model(b);
  ASSERT_OK(g);
  ASSERT_OK(fold_batch_norms(*g));
  ASSERT_EQ(op_names(g->nodes), (std::vector<std::string>{"Gemm"}));
  const ir::Node& gemm = g->nodes[0];
  const auto& fw = data_of(*g, gemm.inputs[1]).f;
  const auto& fc = data_of(*g, gemm.inputs[2]).f;
  const Result<ir::GemmAttrs> attrs = ir::GemmAttrs::read(gemm);
  ASSERT_OK(attrs);
  const float alpha = attrs->alpha, beta = attrs->beta;
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double dot = 0, fdot = 0;
      for (int k = 0; k < kdim; ++k) {
        dot += static_cast<double>(a[i * kdim + k]) * wt[j * kdim + k];
        fdot += static_cast<double>(a[i * kdim + k]) * fw[j * kdim + k];
      }
      const double y = 0.5 * dot + 2.0 * c[j];
      const double ref = (y - mean[j]) / std::sqrt(var[j] + 1e-5) * scale[j] + shift[j];
      const double got = alpha * fdot + beta * fc[j];
      EXPECT_NEAR(got, ref, 1e-5) << i << "," << j;
    }
  }
}

TEST(BatchNormFoldingGemm, ConvWhoseOutputIsAlsoUsedElsewhereKeepsItsBatchNorm) {
  OnnxBuilder b(13);
  b.input("x", {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{3}});
  b.floats("w", {2, 2, 1, 1}, std::vector<float>(4, 1.0f));
  for (const char* p : {"scale", "shift", "mean", "var"}) b.floats(p, {2}, {1.0f, 1.0f});
  b.node("Conv", {"x", "w"}, {"c"});
  b.node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"y"});
  b.node("Add", {"c", "y"}, {"z"});
  b.output("z");
  auto g = import_model(b);
  ASSERT_OK(g);
  auto folded = fold_batch_norms(*g);
  ASSERT_OK(folded);
  EXPECT_EQ(folded.value(), 0);
  EXPECT_EQ(op_names(g->nodes), (std::vector<std::string>{"Conv", "BatchNormalization", "Add"}));
}

TEST(ActivationFusion, ReluAndClipFuseIntoTheirProducer) {
  OnnxBuilder b(13);
  b.input("x", {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{3}});
  b.floats("w", {2, 2, 1, 1}, std::vector<float>(4, 1.0f));
  b.floats("lo", {}, {0.0f});
  b.floats("hi", {}, {6.0f});
  b.node("Conv", {"x", "w"}, {"c"});
  b.node("Relu", {"c"}, {"r"});
  b.node("Add", {"r", "x"}, {"s"});
  b.node("Clip", {"s", "lo", "hi"}, {"y"});
  b.output("y");
  auto g = import_model(b);
  ASSERT_OK(g);
  EXPECT_EQ(fuse_activations(*g), 2);
  ASSERT_EQ(op_names(g->nodes), (std::vector<std::string>{"Conv", "Add"}));
  EXPECT_EQ(g->nodes[0].activation, fb::Activation::Relu);
  EXPECT_EQ(g->nodes[1].activation, fb::Activation::Clip);
  EXPECT_EQ(g->nodes[1].activation_min, 0.0f);
  EXPECT_EQ(g->nodes[1].activation_max, 6.0f);
  EXPECT_EQ(g->nodes[1].outputs[0], g->outputs[0]);
  EXPECT_EQ(g->nodes[1].inputs[0], g->nodes[0].outputs[0]);
}

TEST(ActivationFusion, IntermediateWithAnotherConsumerIsNotFused) {
  OnnxBuilder b(13);
  b.input("x", {int64_t{4}});
  b.input("z", {int64_t{4}});
  b.node("Add", {"x", "z"}, {"s"});
  b.node("Relu", {"s"}, {"r"});
  b.output("r");
  b.output("s");
  auto g = import_model(b);
  ASSERT_OK(g);
  EXPECT_EQ(fuse_activations(*g), 0);
  EXPECT_EQ(op_names(g->nodes), (std::vector<std::string>{"Add", "Relu"}));
}

TEST(DeadNodeRemoval, UnusedBranchIsRemoved) {
  OnnxBuilder b(13);
  b.input("x", {int64_t{4}});
  b.node("Exp", {"x"}, {"unused"});
  b.node("Relu", {"x"}, {"y"});
  b.output("y");
  auto g = import_model(b);
  ASSERT_OK(g);
  EXPECT_EQ(remove_dead_nodes(*g), 1);
  EXPECT_EQ(op_names(g->nodes), (std::vector<std::string>{"Relu"}));
}

TEST(ConstantFolding, NodesWithConstantInputsFold) {
  ModelGraph g;
  auto t = std::make_shared<HostTensor>();
  t->dims = {2, 2};
  t->f = {1, 2, 3, 4};
  const int c = g.add_const("c", t);
  const int x = g.add_value("x", ScalarType::Float32, {SymExpr(2), SymExpr(2)});
  g.inputs = {x};
  ir::Node tr;
  tr.op = fb::OpType::Transpose;
  tr.name = "tr";
  tr.inputs = {c};
  tr.attrs = {ir::Attr::make_ints("perm", {1, 0})};
  tr.outputs = {g.add_value("ct", ScalarType::Float32, {})};
  ASSERT_TRUE(infer_shapes(g, tr).is_ok());
  g.nodes.push_back(tr);
  ir::Node add;
  add.op = fb::OpType::Add;
  add.name = "add";
  add.inputs = {x, tr.outputs[0]};
  add.outputs = {g.add_value("y", ScalarType::Float32, {})};
  ASSERT_TRUE(infer_shapes(g, add).is_ok());
  g.nodes.push_back(add);
  g.outputs = {add.outputs[0]};
  auto folded = fold_constants(g);
  ASSERT_OK(folded);
  EXPECT_EQ(folded.value(), 1);
  EXPECT_EQ(op_names(g.nodes), (std::vector<std::string>{"Add"}));
  EXPECT_EQ(g.values[tr.outputs[0]].data->f, (std::vector<float>{1, 3, 2, 4}));
}

// A node over constants `inputs`, its outputs inferred; returns the node.
ir::Node const_node(ModelGraph& g, fb::OpType op, std::vector<HostTensor> inputs,
                    std::vector<ir::Attr> attrs = {}) {
  ir::Node n;
  n.op = op;
  n.name = "n" + std::to_string(g.nodes.size());
  for (HostTensor& t : inputs) {
    n.inputs.push_back(g.add_const(n.name + ":in", std::make_shared<HostTensor>(std::move(t))));
  }
  n.attrs = std::move(attrs);
  n.outputs = {g.add_value(n.name + ":out", ScalarType::Float32, {})};
  EXPECT_TRUE(infer_shapes(g, n).is_ok());
  return n;
}

TEST(ConstantFolding, IntegerShapeArithmeticIsExact) {
  ModelGraph g;
  const int64_t big = (int64_t{1} << 53) + 1;  // not a float, nor a double
  HostTensor a = HostTensor::ints({big, 7});
  HostTensor b = HostTensor::ints({3, -2});
  const ir::Node mul = const_node(g, fb::OpType::Mul, {a, b});
  std::vector<HostTensor> out;
  auto done = evaluate_node(g, mul, &out);
  ASSERT_OK(done);
  ASSERT_TRUE(*done);
  EXPECT_EQ(out[0].i, (std::vector<int64_t>{3 * big, -14}));
  const ir::Node div =
      const_node(g, fb::OpType::Div, {HostTensor::ints({-7, 7}), HostTensor::ints({2, 2})});
  ASSERT_TRUE(*evaluate_node(g, div, &out));
  EXPECT_EQ(out[0].i, (std::vector<int64_t>{-3, 3}));  // the kernel's truncation
}

// A shape value of symbolic and known dims (what Shape gives for an input with a symbolic dim).
std::shared_ptr<HostTensor> symbolic_shape(std::vector<SymExpr> dims) {
  auto shape = std::make_shared<HostTensor>();
  shape->dtype = ScalarType::Int64;
  shape->dims = {static_cast<int64_t>(dims.size())};
  shape->sym = std::move(dims);
  return shape;
}

// Gather node "g" of constants `data` by `idx` (axis 0), its output inferred.
ir::Node gather_node(ModelGraph& g, std::shared_ptr<HostTensor> data,
                     std::shared_ptr<HostTensor> idx) {
  ir::Node gather;
  gather.op = fb::OpType::Gather;
  gather.name = "g";
  gather.inputs = {g.add_const("shape", std::move(data)), g.add_const("idx", std::move(idx))};
  gather.outputs = {g.add_value("out", ScalarType::Float32, {})};
  EXPECT_TRUE(infer_shapes(g, gather).is_ok());
  return gather;
}

TEST(ConstantFolding, SymbolicShapeValuesMoveThroughTheKernels) {
  ModelGraph g;
  g.symbols.push_back({"batch", 1, 8});
  const ir::Node gather =
      gather_node(g, symbolic_shape({SymExpr::symbol(0), SymExpr(3), SymExpr(224)}),
                  std::make_shared<HostTensor>(HostTensor::ints({-3, 2})));
  std::vector<HostTensor> out;
  auto done = evaluate_node(g, gather, &out);
  ASSERT_OK(done);
  ASSERT_TRUE(*done);
  ASSERT_EQ(out[0].sym.size(), 2u);
  EXPECT_EQ(out[0].sym[0], SymExpr::symbol(0));
  EXPECT_EQ(out[0].sym[1], SymExpr(224));
  ir::Node mul;
  mul.op = fb::OpType::Mul;
  mul.name = "m";
  mul.inputs = {g.add_const("gathered", std::make_shared<HostTensor>(out[0])),
                g.add_const("two", std::make_shared<HostTensor>(HostTensor::ints({2})))};
  mul.outputs = {g.add_value("prod", ScalarType::Float32, {})};
  ASSERT_TRUE(infer_shapes(g, mul).is_ok());
  ASSERT_TRUE(*evaluate_node(g, mul, &out));
  EXPECT_EQ(out[0].sym[0], SymExpr::symbol(0) * SymExpr(2));
  EXPECT_EQ(out[0].sym[1], SymExpr(448));
}

// Found by the onnx_compile fuzzer: a Gather of a symbolic shape by constant indices of rank 9,
// empty through their last dim. A kernel's Tensor holds at most kMaxDims sizes, so the indices
// were read as a rank-8 tensor of 48 million elements (a heap overflow). Now the host kernel
// refuses the rank, and the node is left for run time (where the program's own checks apply).
TEST(ConstantFolding, ARankAboveTheKernelsLimitIsNotFolded) {
  ModelGraph g;
  g.symbols.push_back({"batch", 1, 4});
  auto idx = std::make_shared<HostTensor>();
  idx->dtype = ScalarType::Int64;
  idx->dims = {1, 6, 77, 97, 116, 77, 117, 108, 0};
  const ir::Node gather =
      gather_node(g, symbolic_shape({SymExpr::symbol(0), SymExpr(3), SymExpr(2)}), idx);
  std::vector<HostTensor> out;
  auto done = evaluate_node(g, gather, &out);
  ASSERT_OK(done);
  EXPECT_FALSE(*done);

  HostTensor data = HostTensor::ints({1, 2, 3});
  std::vector<HostTensor> outs(1);
  outs[0].dtype = ScalarType::Int64;
  outs[0].dims = idx->dims;
  const Status st = run_host_kernel(gather, {&data, idx.get()}, &outs);
  EXPECT_EQ(st.code(), Error::NotSupported);
  EXPECT_STREQ(st.message(), "input 1 of 'g' has rank 9, above 8");
}

TEST(ConstantFolding, DataDependentKernelErrorsAreTheModels) {
  ModelGraph g;
  HostTensor data = HostTensor::ints({1, 2, 3});
  const ir::Node gather = const_node(g, fb::OpType::Gather, {data, HostTensor::ints({3})});
  std::vector<HostTensor> out;
  auto done = evaluate_node(g, gather, &out);
  ASSERT_FALSE(done.ok());
  EXPECT_EQ(done.status().code(), Error::InvalidProgram);
  EXPECT_NE(std::string(done.status().message()).find("Gather node 'n0': index 3 is out of range"),
            std::string::npos)
      << done.status().message();
  const ir::Node div =
      const_node(g, fb::OpType::Div, {HostTensor::ints({1}), HostTensor::ints({0})});
  done = evaluate_node(g, div, &out);
  ASSERT_FALSE(done.ok());
  EXPECT_NE(std::string(done.status().message()).find("integer division by zero"),
            std::string::npos);
}

TEST(ConstantFolding, ANodeTheKernelRejectsIsLeftForRunTime) {
  ModelGraph g;
  HostTensor h;
  h.dtype = ScalarType::Float16;
  h.dims = {2};
  h.f = {1.0f, 2.0f};
  const ir::Node add = const_node(g, fb::OpType::Add, {h, h});  // no float16 arithmetic kernel
  std::vector<HostTensor> out;
  auto done = evaluate_node(g, add, &out);
  ASSERT_OK(done);
  EXPECT_FALSE(*done);
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace tessera::compiler

#include "tests/compiler/program_runner.h"

namespace tessera::compiler {
namespace {

TEST(BatchNormLowering, UnfoldableBatchNormBecomesMulAddWithTheSameResult) {
  // BN after an Add (DenseNet-style after a Concat) cannot be folded into a conv.
  std::mt19937 rng(9);
  const int c = 3;
  OnnxBuilder b(13);
  b.input("x", {int64_t{2}, int64_t{c}, int64_t{4}, int64_t{5}});
  b.floats("scale", {c}, random_floats(c, rng, 0.5f, 2.0f));
  b.floats("shift", {c}, random_floats(c, rng));
  b.floats("mean", {c}, random_floats(c, rng));
  b.floats("var", {c}, random_floats(c, rng, 0.1f, 2.0f));
  b.node("Add", {"x", "x"}, {"a"});
  b.node("BatchNormalization", {"a", "scale", "shift", "mean", "var"}, {"n"}).f("epsilon", 1e-3f);
  b.node("Relu", {"n"}, {"y"});
  b.output("y");
  CompileOptions keep;
  keep.passes.lower_batch_norms = false;
  auto with_bn = testing::compile_model(b, {}, keep);
  auto lowered = testing::compile_model(b);
  ASSERT_OK(with_bn);
  ASSERT_OK(lowered);
  EXPECT_EQ(op_names(with_bn->graph.nodes), (std::vector<std::string>{"Add", "BatchNormalization", "Relu"}));
  EXPECT_EQ(op_names(lowered->graph.nodes), (std::vector<std::string>{"Add", "Mul", "Add"}));
  EXPECT_EQ(lowered->graph.nodes[2].activation, fb::Activation::Relu);
  EXPECT_EQ(lowered->report.passes.batch_norms_lowered, 1);
  testing::HostArray in;
  in.dims = {2, c, 4, 5};
  in.data = random_floats(2 * c * 4 * 5, rng, -3.0f, 3.0f);
  auto r1 = testing::run_program(with_bn->program.build().value(), {}, {in});
  auto r2 = testing::run_program(lowered->program.build().value(), {}, {in});
  ASSERT_OK(r1);
  ASSERT_OK(r2);
  for (size_t i = 0; i < (*r1)[0].data.size(); ++i) EXPECT_NEAR((*r1)[0].data[i], (*r2)[0].data[i], 1e-5) << i;
}

}  // namespace
}  // namespace tessera::compiler
