#include "tessera/compiler/onnx_import.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <limits>
#include <random>

#include "tessera/compiler/graph_dump.h"
#include "tessera/ir/op.h"
#include "tessera/ir/op_attrs.h"
#include "tests/compiler/test_util.h"
#include "tests/testing/fuzz_inputs.h"

namespace tessera::compiler {
namespace {

using testing::channel_shuffle_model;
using testing::compile_model;
using testing::import_model;
using testing::OnnxBuilder;
using testing::op_names;

OnnxBuilder relu_model(int opset = 13) {
  OnnxBuilder b(opset);
  b.input("x", {int64_t{2}, int64_t{3}});
  b.node("Relu", {"x"}, {"y"});
  b.output("y");
  return b;
}

TEST(OnnxImport, SimpleModel) {
  auto g = import_model(relu_model());
  ASSERT_OK(g);
  ASSERT_EQ(g->nodes.size(), 1u);
  EXPECT_EQ(g->nodes[0].op, fb::OpType::Relu);
  EXPECT_EQ(g->dims_string(g->outputs[0]), "[2, 3]");
}

TEST(OnnxImport, UnsupportedOpNamesOpNodeAndOpset) {
  OnnxBuilder b(13);
  b.input("x", {int64_t{2}, int64_t{3}});
  b.node("Softplus", {"x"}, {"y"}, "my_softplus");
  b.output("y");
  auto g = import_model(b);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error(), Error::NotSupported);
  EXPECT_STREQ(g.status().message(), "unsupported ONNX op 'Softplus' in node 'my_softplus' (opset 13)");
}

TEST(OnnxImport, SymbolicDimWithoutBoundIsAnErrorSayingHowToBoundIt) {
  OnnxBuilder b(13);
  b.input("images", {std::string("batch"), int64_t{3}});
  b.node("Relu", {"images"}, {"y"});
  b.output("y");
  auto g = import_model(b);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error(), Error::InvalidArgument);
  EXPECT_STREQ(g.status().message(), "input 'images' dim 0 is symbolic ('batch'): bound it with --dim batch=MIN:MAX");
  auto ok = import_model(b, {{"batch", 1, 8}});
  ASSERT_OK(ok);
  ASSERT_EQ(ok->symbols.size(), 1u);
  EXPECT_EQ(ok->symbols[0].name, "batch");
  EXPECT_EQ(ok->symbols[0].max, 8);
}

TEST(OnnxImport, BoundForAnUnknownDimIsAnError) {
  auto g = import_model(relu_model(), {{"bacth", 1, 8}});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error(), Error::InvalidArgument);
  EXPECT_NE(std::string(g.status().message()).find("'bacth'"), std::string::npos) << g.status().message();
}

TEST(OnnxImport, ParseDimBound) {
  auto b = parse_dim_bound("batch=1:8");
  ASSERT_OK(b);
  EXPECT_EQ(b->name, "batch");
  EXPECT_EQ(b->min, 1);
  EXPECT_EQ(b->max, 8);
  auto fixed = parse_dim_bound("seq=16");
  ASSERT_OK(fixed);
  EXPECT_EQ(fixed->min, 16);
  EXPECT_EQ(fixed->max, 16);
  for (const char* bad : {"batch", "=1:2", "batch=8:1", "batch=0:4", "batch=a:b", "batch=1:"}) {
    EXPECT_FALSE(parse_dim_bound(bad).ok()) << bad;
  }
}

TEST(OnnxImport, OpsetOutsideElevenToSeventeenIsRejected) {
  for (int opset : {10, 18}) {
    auto g = import_model(relu_model(opset));
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.error(), Error::NotSupported);
    EXPECT_NE(std::string(g.status().message()).find("opset " + std::to_string(opset)), std::string::npos)
        << g.status().message();
  }
}

TEST(OnnxImport, MalformedBytesAreAnErrorNotACrash) {
  const std::string garbage = "\x08\x07\x12\xff\xff\xff\xff\x0f this is not a model";
  auto g = import_onnx(garbage.data(), garbage.size(), {});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error(), Error::InvalidProgram);

  auto empty = import_onnx("", 0, {});
  ASSERT_FALSE(empty.ok());

  std::string bytes = relu_model().bytes();
  for (size_t cut : {bytes.size() / 2, bytes.size() - 3, size_t{5}}) {
    auto t = import_onnx(bytes.data(), cut, {});
    EXPECT_FALSE(t.ok()) << "truncated at " << cut;
  }
  auto missing = import_onnx_file("/nonexistent/model.onnx", {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error(), Error::NotFound);
}

TEST(OnnxImport, CorruptedModelsNeverCrash) {
  OnnxBuilder b(13);
  b.input("x", {std::string("batch"), int64_t{4}});
  b.floats("w", {4, 4}, std::vector<float>(16, 0.5f));
  b.node("MatMul", {"x", "w"}, {"m"});
  b.node("Shape", {"m"}, {"s"});
  b.const_ints("zero", {0});
  b.node("Gather", {"s", "zero"}, {"b"}).i("axis", 0);
  b.const_ints("rest", {2, 2});
  b.node("Concat", {"b", "rest"}, {"shape"}).i("axis", 0);
  b.node("Reshape", {"m", "shape"}, {"y"});
  b.output("y", {std::string("batch"), int64_t{2}, int64_t{2}});
  const std::string bytes = b.bytes();
  ImportOptions bounded;
  bounded.dims = {{"batch", 1, 4}};
  ASSERT_OK(import_onnx(bytes.data(), bytes.size(), bounded));
  std::mt19937 rng(7);
  const char* env = std::getenv("TESSERA_FUZZ_TRIALS");  // more for a sanitizer soak
  const int trials = env ? std::atoi(env) : 400;
  for (int trial = 0; trial < trials; ++trial) {
    std::string mutated = bytes;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) mutated[rng() % mutated.size()] = static_cast<char>(rng());
    ImportOptions options;
    options.dims = {{"batch", 1, 4}};
    auto g = import_onnx(mutated.data(), mutated.size(), options);
    if (g.ok()) {
      (void)compile_graph(std::move(g).value(), {});
    }
  }
}

TEST(OnnxImport, InitializerWithWrongValueCountIsAnError) {
  OnnxBuilder b(13);
  b.input("x", {int64_t{2}});
  b.floats("w", {3}, {1.0f, 2.0f});
  b.node("Add", {"x", "w"}, {"y"});
  b.output("y");
  onnx::ModelProto& m = b.model();
  (void)m;
  auto g = import_model(b);
  ASSERT_FALSE(g.ok());
}

// shufflenet's channel_shuffle exported with a dynamic batch (channel_shuffle_model,
// onnx_builder.h): the target shapes computed from Shape/Gather/Div/Unsqueeze/Concat must fold
// into shape expressions over `batch`.
TEST(OnnxImport, ChannelShuffleShapeChainFoldsIntoShapeExpressions) {
  auto g = import_model(channel_shuffle_model(116, 28), {{"batch", 1, 8}});
  ASSERT_OK(g);
  EXPECT_EQ(op_names(g->nodes), (std::vector<std::string>{"Reshape", "Transpose", "Reshape"}));
  EXPECT_EQ(g->dims_string(g->nodes[0].outputs[0]), "[batch, 2, 58, 28, 28]");
  EXPECT_EQ(g->dims_string(g->nodes[1].outputs[0]), "[batch, 58, 2, 28, 28]");
  EXPECT_EQ(g->dims_string(g->outputs[0]), "[batch, 116, 28, 28]");

  // Without pattern fusion, which would make the three nodes one ChannelShuffle
  // (pattern_fusion_test.cpp).
  CompileOptions unfused;
  unfused.passes.fuse_patterns = false;
  auto c = compile_model(channel_shuffle_model(116, 28), {{"batch", 1, 8}}, unfused);
  ASSERT_OK(c);
  const ir::Graph& ig = c->graph;
  const ir::Value& r5 = ig.values[ig.nodes[0].outputs[0]];
  ASSERT_EQ(r5.dims.size(), 5u);
  EXPECT_EQ(r5.dims[0].value, 8);  // planned at the upper bound
  ASSERT_EQ(r5.dims[0].expr.size(), 1u);
  EXPECT_EQ(r5.dims[0].expr[0].op, fb::ShapeOp::Sym);
  EXPECT_TRUE(r5.dims[1].expr.empty());
  EXPECT_EQ(r5.dims[2].value, 58);
  // No shape op survives into the program.
  for (const ir::Node& n : ig.nodes) EXPECT_NE(n.op, fb::OpType::Gather) << graph_to_string(ig);
}

TEST(OnnxImport, ReshapeOfSymbolicBatchIntoProduct) {
  // [batch, 16, 64] -> [batch*16, 64] via Shape chains (as the transformer export does).
  OnnxBuilder b(13);
  b.input("x", {std::string("batch"), int64_t{16}, int64_t{64}});
  b.node("Shape", {"x"}, {"s"});
  b.const_ints("i0", {0}, true);
  b.const_ints("i1", {1}, true);
  b.node("Gather", {"s", "i0"}, {"n"}).i("axis", 0);
  b.node("Gather", {"s", "i1"}, {"l"}).i("axis", 0);
  b.node("Mul", {"n", "l"}, {"nl"});
  b.const_ints("axes0", {0});
  b.node("Unsqueeze", {"nl", "axes0"}, {"nl1"});
  b.const_ints("c64", {64});
  b.node("Concat", {"nl1", "c64"}, {"shape"}).i("axis", 0);
  b.node("Reshape", {"x", "shape"}, {"y"});
  b.output("y", {std::string("n"), int64_t{64}});
  auto c = compile_model(b, {{"batch", 2, 4}});
  ASSERT_OK(c);
  ASSERT_EQ(c->graph.nodes.size(), 1u);
  const ir::Dim& d0 = c->graph.values[c->graph.outputs[0]].dims[0];
  EXPECT_EQ(d0.value, 64);
  EXPECT_EQ(c->report.symbols[0].min, 2);
}

TEST(OnnxImport, SoftmaxBeforeOpset13IsConvertedFromItsTwoDimensionalSemantics) {
  OnnxBuilder b(11);
  b.input("x", {int64_t{2}, int64_t{3}, int64_t{4}});
  b.node("Softmax", {"x"}, {"y"}).i("axis", 1);
  b.output("y");
  auto g = import_model(b);
  ASSERT_OK(g);
  EXPECT_EQ(op_names(g->nodes), (std::vector<std::string>{"Reshape", "Softmax", "Reshape"}));
  EXPECT_EQ(g->dims_string(g->nodes[0].outputs[0]), "[2, 12]");
  EXPECT_EQ(g->dims_string(g->outputs[0]), "[2, 3, 4]");

  OnnxBuilder last(11);  // axis = rank - 1 needs no conversion
  last.input("x", {int64_t{2}, int64_t{3}});
  last.node("Softmax", {"x"}, {"y"});
  last.output("y");
  auto g2 = import_model(last);
  ASSERT_OK(g2);
  EXPECT_EQ(op_names(g2->nodes), (std::vector<std::string>{"Softmax"}));
}

TEST(OnnxImport, SliceInputsBecomeAttributes) {
  OnnxBuilder b(13);
  b.input("x", {int64_t{4}, int64_t{10}});
  b.const_ints("starts", {1, -3});
  b.const_ints("ends", {std::numeric_limits<int64_t>::max(), -1});
  b.const_ints("axes", {0, -1});
  b.node("Slice", {"x", "starts", "ends", "axes"}, {"y"});
  b.output("y");
  auto g = import_model(b);
  ASSERT_OK(g);
  ASSERT_EQ(g->nodes.size(), 1u);
  const ir::Node& n = g->nodes[0];
  ASSERT_EQ(n.inputs.size(), 1u);
  EXPECT_EQ(n.find_attr("starts")->ints, (std::vector<int64_t>{1, 7}));
  EXPECT_EQ(n.find_attr("ends")->ints, (std::vector<int64_t>{4, 9}));
  EXPECT_EQ(n.find_attr("axes")->ints, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(n.find_attr("steps")->ints, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(g->dims_string(g->outputs[0]), "[3, 2]");
}

TEST(OnnxImport, SliceOfASymbolicDimThatCanBeNegativeIsRejectedAtLowering) {
  OnnxBuilder b(13);
  b.input("x", {std::string("batch"), int64_t{4}});
  b.const_ints("starts", {2});
  b.const_ints("ends", {std::numeric_limits<int64_t>::max()});
  b.const_ints("axes", {0});
  b.node("Slice", {"x", "starts", "ends", "axes"}, {"y"});
  b.output("y");
  auto ok = compile_model(b, {{"batch", 2, 8}});
  ASSERT_OK(ok);
  auto bad = compile_model(b, {{"batch", 1, 8}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("--dim"), std::string::npos) << bad.status().message();
}

TEST(OnnxImport, ConvAutoPadIsResolvedToExplicitPads) {
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
    OnnxBuilder b(13);
    b.input("x", {int64_t{1}, int64_t{1}, int64_t{4}, int64_t{4}});
    b.floats("w", {1, 1, 3, 3}, std::vector<float>(9, 1.0f));
    b.node("Conv", {"x", "w"}, {"y"}).s("auto_pad", mode).ints("strides", {2, 2});
    b.output("y");
    auto g = import_model(b);
    ASSERT_OK(g);
    const ir::Node& n = g->nodes[0];
    std::vector<int64_t> want = std::string(mode) == "SAME_UPPER"   ? std::vector<int64_t>{0, 0, 1, 1}
                                : std::string(mode) == "SAME_LOWER" ? std::vector<int64_t>{1, 1, 0, 0}
                                                                    : std::vector<int64_t>{0, 0, 0, 0};
    EXPECT_EQ(n.find_attr("pads")->ints, want) << mode;
    EXPECT_EQ(n.find_attr("group")->i, 1);
    EXPECT_EQ(n.find_attr("dilations")->ints, (std::vector<int64_t>{1, 1}));
    ASSERT_EQ(n.inputs.size(), 3u);
    EXPECT_EQ(n.inputs[2], -1);  // no bias
    EXPECT_EQ(g->dims_string(g->outputs[0]), std::string(mode) == "VALID" ? "[1, 1, 1, 1]" : "[1, 1, 2, 2]");
  }
}

TEST(OnnxImport, CeilModePoolingFollowsPyTorchNotTheDeclaredShape) {
  // PyTorch's MaxPool2d(2, 2, padding=1, ceil_mode=True) on 5x5 gives 3x3; its ONNX export
  // declares 4x4 (the pre-opset-19 formula lets the last window start in the padding).
  OnnxBuilder b(13);
  b.input("x", {int64_t{1}, int64_t{1}, int64_t{5}, int64_t{5}});
  b.node("MaxPool", {"x"}, {"p"}).ints("kernel_shape", {2, 2}).ints("strides", {2, 2}).ints("pads", {1, 1, 1, 1}).i(
      "ceil_mode", 1);
  b.node("Relu", {"p"}, {"y"});
  b.output("y", {int64_t{1}, int64_t{1}, int64_t{4}, int64_t{4}});
  auto g = import_model(b);
  ASSERT_OK(g);
  EXPECT_EQ(g->dims_string(g->outputs[0]), "[1, 1, 3, 3]");
}

TEST(OnnxImport, InferredShapeThatDisagreesWithTheModelIsAnError) {
  OnnxBuilder b(13);
  b.input("x", {int64_t{2}, int64_t{3}});
  b.node("Relu", {"x"}, {"y"});
  b.output("y", {int64_t{2}, int64_t{4}});
  ImportOptions options;
  options.check_model = false;  // the checker would not mind; ONNX shape inference would
  const std::string bytes = b.model().SerializeAsString();
  auto g = import_onnx(bytes.data(), bytes.size(), options);
  ASSERT_FALSE(g.ok());
}

TEST(OnnxImport, ClipBoundsBecomeAttributes) {
  OnnxBuilder b(13);
  b.input("x", {int64_t{4}});
  b.floats("lo", {}, {0.0f});
  b.floats("hi", {}, {6.0f});
  b.node("Clip", {"x", "lo", "hi"}, {"y"});
  b.node("Clip", {"y", "", "hi"}, {"z"});
  b.output("z");
  auto g = import_model(b);
  ASSERT_OK(g);
  ASSERT_EQ(g->nodes.size(), 2u);
  EXPECT_EQ(g->nodes[0].inputs.size(), 1u);
  EXPECT_EQ(g->nodes[0].find_attr("min")->f, 0.0f);
  EXPECT_EQ(g->nodes[0].find_attr("max")->f, 6.0f);
  EXPECT_EQ(g->nodes[1].find_attr("min"), nullptr);
  EXPECT_EQ(g->nodes[1].find_attr("max")->f, 6.0f);
}

// Elu is a Direct row of tessera/ir/ops.def: one node, its alpha copied when given, the table's
// default (1) when not.
TEST(OnnxImport, EluMapsOneToOneWithItsAlpha) {
  OnnxBuilder b(13);
  b.input("x", {int64_t{2}, int64_t{3}});
  b.node("Elu", {"x"}, {"e"}).f("alpha", 0.5f);
  b.node("Elu", {"e"}, {"y"});
  b.output("y");
  auto g = import_model(b);
  ASSERT_OK(g);
  EXPECT_EQ(op_names(g->nodes), (std::vector<std::string>{"Elu", "Elu"}));
  ASSERT_NE(g->nodes[0].find_attr("alpha"), nullptr);
  EXPECT_EQ(g->nodes[0].find_attr("alpha")->f, 0.5f);
  EXPECT_EQ(g->nodes[1].find_attr("alpha"), nullptr);
  auto defaults = ir::EluAttrs::read(g->nodes[1]);
  ASSERT_OK(defaults);
  EXPECT_EQ(defaults->alpha, 1.0f);
  EXPECT_EQ(g->dims_string(g->outputs[0]), "[2, 3]");
}

TEST(OnnxImport, DropoutAndIdentityDisappear) {
  OnnxBuilder b(13);
  b.input("x", {int64_t{4}});
  b.node("Dropout", {"x"}, {"d"});
  b.node("Identity", {"d"}, {"i"});
  b.node("Relu", {"i"}, {"y"});
  b.output("y");
  auto g = import_model(b);
  ASSERT_OK(g);
  EXPECT_EQ(op_names(g->nodes), (std::vector<std::string>{"Relu"}));
  EXPECT_EQ(g->nodes[0].inputs[0], g->inputs[0]);
}

TEST(OnnxImport, GemmWithoutBiasHasAnAbsentThirdInput) {
  OnnxBuilder b(13);
  b.input("a", {int64_t{2}, int64_t{3}});
  b.floats("w", {4, 3}, std::vector<float>(12, 1.0f));
  b.node("Gemm", {"a", "w"}, {"y"}).i("transB", 1);
  b.output("y");
  auto g = import_model(b);
  ASSERT_OK(g);
  const ir::Node& n = g->nodes[0];
  ASSERT_EQ(n.inputs.size(), 3u);
  EXPECT_EQ(n.inputs[2], -1);
  EXPECT_EQ(n.find_attr("transB")->i, 1);
  EXPECT_EQ(n.find_attr("alpha")->f, 1.0f);
  EXPECT_EQ(g->dims_string(g->outputs[0]), "[2, 4]");
}

TEST(OnnxImport, ConstantsFoldAndWeightsBecomeProgramConstants) {
  OnnxBuilder b(13);
  b.input("x", {int64_t{2}, int64_t{3}});
  b.floats("w", {3, 2}, {1, 2, 3, 4, 5, 6});
  b.node("Transpose", {"w"}, {"wt"}).ints("perm", {1, 0});  // folded at import
  b.node("Constant", {}, {"k"}).tensor_float("value", 2.0f);
  b.node("Mul", {"x", "k"}, {"x2"});
  b.node("Gemm", {"x2", "wt"}, {"y"}).i("transB", 1);
  b.output("y");
  auto c = compile_model(b);
  ASSERT_OK(c);
  EXPECT_EQ(op_names(c->graph.nodes), (std::vector<std::string>{"Mul", "Gemm"}));
  const ir::Value& w = c->graph.values[c->graph.nodes[1].inputs[1]];
  EXPECT_GE(w.constant, 0);
  ASSERT_EQ(w.dims.size(), 2u);
  EXPECT_EQ(w.dims[0].value, 2);
  EXPECT_EQ(c->report.constants, 2);
}

TEST(OnnxImport, ExpandOfARuntimeTensorBecomesABroadcastAdd) {
  OnnxBuilder b(13);
  b.input("x", {int64_t{3}, int64_t{1}});
  b.const_ints("shape", {2, 3, 4});
  b.node("Expand", {"x", "shape"}, {"y"});
  b.output("y");
  auto g = import_model(b);
  ASSERT_OK(g);
  EXPECT_EQ(op_names(g->nodes), (std::vector<std::string>{"Add"}));
  EXPECT_EQ(g->dims_string(g->outputs[0]), "[2, 3, 4]");
}

TEST(OnnxImport, ShapeValueUsedAsRuntimeDataIsRejectedClearly) {
  OnnxBuilder b(13);
  b.input("x", {std::string("batch"), int64_t{3}});
  b.node("Shape", {"x"}, {"s"});
  b.node("Cast", {"s"}, {"f"}).i("to", onnx::TensorProto::FLOAT);
  b.node("Sqrt", {"f"}, {"y"});
  b.output("y");
  auto g = import_model(b, {{"batch", 1, 4}});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error(), Error::NotSupported);
}

TEST(OnnxImport, OutputsThatAreInputsOrConstantsGetAnIdentity) {
  OnnxBuilder b(13);
  b.input("x", {int64_t{2}});
  b.floats("c", {2}, {1.0f, 2.0f});
  b.node("Identity", {"x"}, {"y"});
  b.node("Identity", {"c"}, {"z"});
  b.output("y");
  b.output("z");
  auto c = compile_model(b);
  ASSERT_OK(c);
  EXPECT_EQ(op_names(c->graph.nodes), (std::vector<std::string>{"Identity", "Identity"}));
  for (int v : c->graph.outputs) {
    EXPECT_LT(c->graph.values[v].constant, 0);
    EXPECT_NE(v, c->graph.inputs[0]);
  }
}

}  // namespace
}  // namespace tessera::compiler

namespace tessera::compiler {
namespace {

TEST(OnnxImport, OutputsKeepTheModelsNames) {
  testing::OnnxBuilder b(13);
  b.input("x", {int64_t{2}});
  b.node("Relu", {"x"}, {"r"});
  b.node("Identity", {"r"}, {"first"});
  b.node("Identity", {"r"}, {"second"});
  b.node("Identity", {"x"}, {"third"});
  b.output("first");
  b.output("second");
  b.output("third");
  auto c = testing::compile_model(b);
  ASSERT_OK(c);
  std::vector<std::string> names;
  for (int v : c->graph.outputs) names.push_back(c->graph.values[v].name);
  EXPECT_EQ(names, (std::vector<std::string>{"first", "second", "third"}));
}

}  // namespace
}  // namespace tessera::compiler

namespace tessera::compiler {
namespace {

// A model exercising most import paths with valid shapes; the fuzz test below perturbs it.
testing::OnnxBuilder fuzz_base_model() {
  testing::OnnxBuilder b(13);
  b.input("x", {std::string("batch"), int64_t{4}, int64_t{8}, int64_t{8}});
  b.floats("w", {4, 4, 3, 3}, std::vector<float>(144, 0.1f));
  b.node("Conv", {"x", "w"}, {"c"}).ints("pads", {1, 1, 1, 1}).ints("strides", {1, 1}).ints("kernel_shape", {3, 3});
  b.node("MaxPool", {"c"}, {"p"}).ints("kernel_shape", {2, 2}).ints("strides", {2, 2});
  b.node("Shape", {"p"}, {"s"});
  b.const_ints("i0", {0}, true);
  b.node("Gather", {"s", "i0"}, {"n"}).i("axis", 0);
  b.const_ints("ax0", {0});
  b.node("Unsqueeze", {"n", "ax0"}, {"n1"});
  b.const_ints("rest", {4, 16});
  b.node("Concat", {"n1", "rest"}, {"shape"}).i("axis", 0);
  b.node("Reshape", {"p", "shape"}, {"r"});
  b.node("Transpose", {"r"}, {"t"}).ints("perm", {0, 2, 1});
  b.const_ints("st", {0});
  b.const_ints("en", {8});
  b.const_ints("sa", {1});
  b.const_ints("ss", {1});
  b.node("Slice", {"t", "st", "en", "sa", "ss"}, {"sl"});
  b.const_ints("sp", {2, 2});
  b.node("Split", {"sl", "sp"}, {"a", "b2"}).i("axis", 2);
  b.node("Concat", {"a", "b2"}, {"cc"}).i("axis", 2);
  b.const_ints("ax1", {1});
  b.node("Unsqueeze", {"cc", "ax1"}, {"u"});
  b.node("Squeeze", {"u", "ax1"}, {"sq"});
  b.const_ints("gi", {0, 2});
  b.node("Gather", {"sq", "gi"}, {"g"}).i("axis", 1);
  b.const_ints("pads", {0, 0, 1, 0, 0, 1});
  b.node("Pad", {"g", "pads"}, {"pd"});
  b.node("ReduceMean", {"pd"}, {"m"}).ints("axes", {-1}).i("keepdims", 1);
  b.node("Softmax", {"m"}, {"y"}).i("axis", -1);
  b.floats("scales", {4}, {1, 1, 2, 2});
  b.node("Resize", {"p", "", "scales"}, {"rs"}).s("mode", "nearest");
  b.const_ints("rax", {2, 3});
  b.node("ReduceSum", {"rs", "rax"}, {"z"}).i("keepdims", 0);
  b.output("y", {std::string("batch"), int64_t{2}, int64_t{1}});
  b.output("z", {std::string("batch"), int64_t{4}});
  return b;
}

TEST(OnnxImport, FuzzBaseModelCompiles) {
  auto c = testing::compile_model(fuzz_base_model(), {{"batch", 1, 4}});
  ASSERT_OK(c);
}

// Random attribute values, constant shape data and input dims: every result is a model or an
// error, never a crash (run with TESSERA_FUZZ_TRIALS=100000 under AddressSanitizer to soak).
TEST(OnnxImport, StructuredMutationsNeverCrash) {
  const onnx::ModelProto base = fuzz_base_model().model();
  std::mt19937_64 rng(11);
  const int64_t interesting[] = {0, 1, -1, 2, -2, 3, 7, 8, 16, 1000000, -1000000, INT64_MAX, INT64_MIN,
                                 INT64_MAX / 2, int64_t{1} << 33};
  auto pick = [&]() { return interesting[rng() % (sizeof(interesting) / sizeof(interesting[0]))]; };
  const char* env = std::getenv("TESSERA_FUZZ_TRIALS");
  const int trials = env ? std::atoi(env) : 1500;
  int imported = 0;
  for (int trial = 0; trial < trials; ++trial) {
    onnx::ModelProto m = base;
    auto* g = m.mutable_graph();
    const int mutations = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < mutations; ++k) {
      switch (rng() % 3) {
        case 0: {  // an attribute
          auto* node = g->mutable_node(static_cast<int>(rng() % g->node_size()));
          if (node->attribute_size() == 0) break;
          auto* a = node->mutable_attribute(static_cast<int>(rng() % node->attribute_size()));
          if (a->type() == onnx::AttributeProto::INT) a->set_i(pick());
          if (a->type() == onnx::AttributeProto::INTS && a->ints_size() > 0) {
            a->set_ints(static_cast<int>(rng() % a->ints_size()), pick());
          }
          if (a->type() == onnx::AttributeProto::TENSOR && a->t().int64_data_size() > 0) {
            a->mutable_t()->set_int64_data(static_cast<int>(rng() % a->t().int64_data_size()), pick());
          }
          break;
        }
        case 1: {  // a float initializer's dims
          auto* t = g->mutable_initializer(static_cast<int>(rng() % g->initializer_size()));
          if (t->dims_size() > 0) t->set_dims(static_cast<int>(rng() % t->dims_size()), pick());
          break;
        }
        case 2: {  // an input dim
          auto* shape = g->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
          auto* d = shape->mutable_dim(static_cast<int>(rng() % shape->dim_size()));
          if (d->has_dim_value()) d->set_dim_value(pick());
          break;
        }
      }
    }
    const std::string bytes = m.SerializeAsString();
    ImportOptions options;
    options.dims = {{"batch", 1, 4}};
    options.check_model = (trial % 2) == 0;  // half the trials bypass the checker
    auto graph = import_onnx(bytes.data(), bytes.size(), options);
    if (!graph.ok()) continue;
    ++imported;
    auto compiled = compile_graph(std::move(graph).value(), {});
    if (compiled.ok()) (void)compiled->program.build();
  }
  EXPECT_GT(imported, 0);
}

}  // namespace
}  // namespace tessera::compiler

namespace tessera::compiler {
namespace {

// Found by the onnx_compile fuzz target (fuzz/corpus/onnx_compile/regression-*): a
// BatchNormalization whose variance initializer was [3, 0, 0, 8064, ...] (rank 10, no
// elements) passed the ONNX checker and import, and compiled into a program Program::load
// rejected. BatchNormalization's parameters must be [C].
TEST(OnnxImport, FuzzRegressionBatchNormParametersMustBeChannelVectors) {
  const std::vector<uint8_t> input =
      tessera::testing::read_fuzz_input("onnx_compile", "regression-batchnorm-rank10-variance");
  ASSERT_GT(input.size(), 1u);
  ImportOptions options;  // the target's mode byte 0: checker on, no dim bounds
  auto g = import_onnx(input.data() + 1, input.size() - 1, options);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error(), Error::InvalidProgram);
  EXPECT_NE(std::string(g.status().message()).find("input 4 ('v') has rank 10, must be 1-D [3]"),
            std::string::npos)
      << g.status().message();

  OnnxBuilder b(13);
  b.input("x", {int64_t{1}, int64_t{2}, int64_t{2}, int64_t{2}});
  for (const char* p : {"s", "bb", "m"}) b.floats(p, {2}, {1.0f, 1.0f});
  b.floats("v", {3}, {1.0f, 1.0f, 1.0f});
  b.node("BatchNormalization", {"x", "s", "bb", "m", "v"}, {"y"});
  b.output("y", {});
  auto sized = import_model(b);
  ASSERT_FALSE(sized.ok());
  EXPECT_NE(
      std::string(sized.status().message()).find("input 4 ('v') has 3 elements, X has 2 channels"),
      std::string::npos)
      << sized.status().message();
}

// Found by the onnx_compile fuzz target: an unsupported attribute value (Resize mode
// "near%St") was pasted into the error message's printf format, and vsnprintf read a wide
// string through a garbage pointer. Attribute text is now only ever a %s argument.
TEST(OnnxImport, FuzzRegressionAttributeTextIsNeverAFormatString) {
  const std::vector<uint8_t> input =
      tessera::testing::read_fuzz_input("onnx_compile", "regression-resize-mode-format-string");
  ASSERT_GT(input.size(), 1u);
  ImportOptions options;  // the target's mode byte 0: checker on, no dim bounds
  ASSERT_EQ(input[0], 0);
  auto g = import_onnx(input.data() + 1, input.size() - 1, options);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error(), Error::NotSupported);
  EXPECT_NE(std::string(g.status().message()).find("mode 'near%St' is not supported"),
            std::string::npos)
      << g.status().message();
}

// Found by the onnx_compile fuzz target: a graph output 'x' naming the [1, 2, 4, 4] input but
// declared [1, 3]. The importer accepted it, and ONNX's shape inference (run afterwards as a
// second opinion) crashed on it (SEGV in onnx::convPoolShapeInference, libonnx 1.12; Python's
// onnx.shape_inference crashes the same way). A declared output shape must now agree.
TEST(OnnxImport, FuzzRegressionDeclaredOutputShapeMustAgree) {
  const std::vector<uint8_t> input =
      tessera::testing::read_fuzz_input("onnx_compile", "regression-output-redeclares-input-rank");
  ASSERT_GT(input.size(), 1u);
  ASSERT_EQ(input[0], 0);
  auto g = import_onnx(input.data() + 1, input.size() - 1, ImportOptions{});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error(), Error::InvalidProgram);
  EXPECT_NE(std::string(g.status().message()).find("graph output 'x' is declared with rank 2"),
            std::string::npos)
      << g.status().message();
}

// Found by the onnx_compile fuzz target: a model whose activations need a 97 GiB arena compiled
// into a program Program::load refused (its limit is kMaxArenaBytes). The compiler now refuses
// it, saying what the arena would need.
TEST(OnnxImport, FuzzRegressionArenaAboveTheLoaderLimitDoesNotCompile) {
  const std::vector<uint8_t> input =
      tessera::testing::read_fuzz_input("onnx_compile", "regression-arena-above-limit");
  ASSERT_GT(input.size(), 1u);
  ImportOptions options;
  if ((input[0] & 1) != 0) options.dims.push_back({"batch", 1, 4});
  options.check_model = (input[0] & 2) == 0;
  auto g = import_onnx(input.data() + 1, input.size() - 1, options);
  ASSERT_OK(g);
  auto c = compile_graph(std::move(g).value(), {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error(), Error::NotSupported);
  EXPECT_NE(std::string(c.status().message()).find("the activation arena would need"),
            std::string::npos)
      << c.status().message();
}

}  // namespace
}  // namespace tessera::compiler
