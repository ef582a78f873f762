// PayloadGraph: the payload graph view every backend builds from at init.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "tessera/backend/payload_graph.h"
#include "tessera/backend/resolution.h"
#include "tessera/ir/graph.h"
#include "tests/backend/test_support.h"

namespace tessera::test {
namespace {

const uint8_t kWeights[4 * sizeof(float)] = {};

Result<Span<const uint8_t>> weights(void*, uint32_t index) {
  if (index != 0) return Status::error(Error::NotFound, "no constant %u", index);
  return Span<const uint8_t>(kWeights);
}

// x[batch, 4] -> Mul(x, w[4]) -> t -> Relu -> y; t is also read by Add(t, t) -> z.
ir::Graph small_graph() {
  ir::Graph g;
  g.symbols.push_back({"batch", 1, 8});
  ir::Dim batch_times_2 = ir::Dim::symbol(0, 16);
  batch_times_2.expr.push_back({fb::ShapeOp::Const, 2});
  batch_times_2.expr.push_back({fb::ShapeOp::Mul, 0});
  auto value = [&](std::vector<ir::Dim> dims, int constant = -1) {
    ir::Value v;
    v.dims = std::move(dims);
    v.constant = constant;
    g.values.push_back(v);
    return static_cast<int>(g.values.size()) - 1;
  };
  const int x = value({ir::Dim::symbol(0, 8), 4});
  const int w = value({4}, 0);
  const int t = value({ir::Dim::symbol(0, 8), 4});
  const int y = value({batch_times_2, 2});
  const int z = value({ir::Dim::symbol(0, 8), 4});
  auto node = [&](fb::OpType op, std::vector<int> inputs, int output) {
    ir::Node n;
    n.op = op;
    n.inputs = std::move(inputs);
    n.outputs = {output};
    g.nodes.push_back(n);
  };
  node(fb::OpType::Mul, {x, w}, t);
  node(fb::OpType::Relu, {t}, y);
  node(fb::OpType::Add, {t, t}, z);
  g.inputs = {x};
  g.outputs = {y, z};
  return g;
}

class PayloadGraphTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(resolve_options("xnnpack", stub_.backend(), "xnnpack#0", {}, nullptr, nullptr,
                              Validation::Strict, &resolved_));
  }

  Result<PayloadGraph> make(const ir::Graph& graph, Span<const SymbolValue> symbols) {
    bytes_ = ir::encode_graph(graph);
    payload_ = FreeableBuffer(bytes_.data(), bytes_.size());
    BackendInitContext::Params params;
    params.options = &resolved_;
    params.symbols = symbols;
    params.constants = ConstantSource{weights, nullptr};
    BackendInitContext context(params);
    return PayloadGraph::make(context, &payload_);
  }

  ScopedStub stub_{"xnnpack"};
  ResolvedOptions resolved_;
  std::vector<uint8_t> bytes_;
  FreeableBuffer payload_;
};

TEST_F(PayloadGraphTest, EvaluatesDimsAgainstTheLoadsSymbols) {
  const SymbolValue symbols[] = {{"seq", 7}, {"batch", 3}};
  Result<PayloadGraph> view = make(small_graph(), symbols);
  ASSERT_TRUE(view.ok()) << view.status().message();
  ASSERT_EQ(view->num_values(), 5u);
  const PayloadValue& x = view->value(0);
  EXPECT_EQ(view->dims(0).rank, 2);
  EXPECT_EQ(view->dims(0)[0], 3);
  EXPECT_EQ(view->dims(0)[1], 4);
  EXPECT_TRUE(x.symbolic);
  EXPECT_EQ(x.graph_input, 0);
  EXPECT_EQ(view->dims(3), Dims(std::vector<int64_t>{6, 2}));  // batch * 2
  EXPECT_EQ(view->dims(3).numel(), 12);
  EXPECT_EQ(view->dims().size(), 5u);
  const PayloadValue& w = view->value(1);
  EXPECT_TRUE(w.is_constant());
  EXPECT_FALSE(w.symbolic);
  EXPECT_EQ(w.data.data(), kWeights);
  EXPECT_EQ(w.data.size(), sizeof kWeights);
  EXPECT_TRUE(view->value(2).data.empty());
}

TEST_F(PayloadGraphTest, ProducersConsumersInputsAndOutputs) {
  const SymbolValue symbols[] = {{"batch", 2}};
  Result<PayloadGraph> view = make(small_graph(), symbols);
  ASSERT_TRUE(view.ok()) << view.status().message();
  ASSERT_EQ(view->num_nodes(), 3u);
  EXPECT_EQ(view->node(1).op(), fb::OpType::Relu);
  EXPECT_EQ(view->value(2).producer, 0);
  EXPECT_EQ(view->value(0).producer, -1);
  EXPECT_EQ(view->value(1).producer, -1);
  // t is read by Relu and (twice) by Add: each node once, in order.
  const Span<const int32_t> t_readers = view->consumers(2);
  EXPECT_EQ(std::vector<int32_t>(t_readers.begin(), t_readers.end()), (std::vector<int32_t>{1, 2}));
  EXPECT_TRUE(view->consumers(3).empty());
  EXPECT_EQ(view->node_inputs(2).size(), 2u);
  EXPECT_EQ(view->node_outputs(1)[0], 3);
  EXPECT_EQ(std::vector<int32_t>(view->inputs().begin(), view->inputs().end()),
            (std::vector<int32_t>{0}));
  EXPECT_EQ(std::vector<int32_t>(view->outputs().begin(), view->outputs().end()),
            (std::vector<int32_t>{3, 4}));
  EXPECT_TRUE(view->value(3).graph_output);
  EXPECT_TRUE(view->value(4).graph_output);
  EXPECT_FALSE(view->value(2).graph_output);
  EXPECT_TRUE(view->defined_before(2, 1));
  EXPECT_FALSE(view->defined_before(2, 0));
  EXPECT_TRUE(view->defined_before(1, 0));  // a constant
  EXPECT_TRUE(view->defined_before(0, 0));  // a graph input
}

TEST_F(PayloadGraphTest, UnknownSymbolIsNotFound) {
  const SymbolValue symbols[] = {{"btch", 2}};
  Result<PayloadGraph> view = make(small_graph(), symbols);
  ASSERT_FALSE(view.ok());
  EXPECT_EQ(view.error(), Error::NotFound);
  EXPECT_NE(std::strstr(view.status().message(), "no symbolic dim 'batch'"), nullptr)
      << view.status().message();
}

TEST_F(PayloadGraphTest, BadGraphsAreInvalidPrograms) {
  const SymbolValue symbols[] = {{"batch", 2}};
  auto expect_invalid = [&](const ir::Graph& g, const char* what) {
    Result<PayloadGraph> view = make(g, symbols);
    ASSERT_FALSE(view.ok()) << what;
    EXPECT_EQ(view.error(), Error::InvalidProgram) << what;
    EXPECT_NE(std::strstr(view.status().message(), what), nullptr) << view.status().message();
    EXPECT_NE(std::strstr(view.status().message(), "xnnpack: delegate 'xnnpack#0': "), nullptr)
        << view.status().message();
  };
  ir::Graph g = small_graph();
  g.outputs.push_back(9);
  expect_invalid(g, "graph output 2 refers to value 9; the graph has 5");
  g = small_graph();
  g.nodes[2].inputs[1] = 5;
  expect_invalid(g, "an input of node 2 refers to value 5");
  g = small_graph();
  g.nodes[2].outputs[0] = 2;
  expect_invalid(g, "value 2 is written by node 0 and node 2");
  g = small_graph();
  g.nodes[0].outputs[0] = 1;
  expect_invalid(g, "node 0 writes value 1, which is a graph input or a constant");
  g = small_graph();
  g.values[4].dims.assign(9, ir::Dim(1));
  expect_invalid(g, "value 4 has rank 9 (max 8)");
  g = small_graph();
  g.values[4].dims[1] = ir::Dim(-3);
  expect_invalid(g, "value 4 has dim 1 = -3");
  g = small_graph();
  g.values[4].dims[0].expr = {{fb::ShapeOp::Sym, 5}};
  expect_invalid(g, "value 4 dim 0");

  const uint8_t garbage[] = {1, 2, 3};
  payload_ = FreeableBuffer(garbage, sizeof garbage);
  BackendInitContext::Params params;
  params.options = &resolved_;
  BackendInitContext context(params);
  Result<PayloadGraph> view = PayloadGraph::make(context, &payload_);
  EXPECT_EQ(view.error(), Error::InvalidProgram);
  EXPECT_EQ(PayloadGraph::make(context, nullptr).error(), Error::InvalidArgument);
}

}  // namespace
}  // namespace tessera::test
