// The support check the partitioner uses: what this XNNPACK can run, and why not otherwise.
#include <gtest/gtest.h>

#include "harness.h"
#include "tessera/backend/registry.h"
#include "tessera/backends/xnnpack/supports.h"

namespace tessera::xnnpack::testing {
namespace {

using Op = fb::OpType;

bool supported(const GraphCase& c, std::string* why = nullptr) {
  return xnnpack_supports(c.graph, c.graph.nodes[0], why);
}

TEST(XnnpackSupports, CommonOps) {
  EXPECT_TRUE(supported(GraphCase::single(Op::Relu, {{1, 3, 4, 4}}, {1, 3, 4, 4})));
  EXPECT_TRUE(supported(GraphCase::single(Op::Add, {{1, 3, 4, 4}, {3, 1, 1}}, {1, 3, 4, 4})));
  EXPECT_TRUE(supported(GraphCase::single(Op::Softmax, {{2, 10}}, {2, 10})));
  EXPECT_TRUE(supported(GraphCase::single(Op::GlobalAveragePool, {{1, 8, 3, 3}}, {1, 8, 1, 1})));
}

TEST(XnnpackSupports, RejectsWithReasons) {
  std::string why;
  EXPECT_FALSE(supported(GraphCase::single(Op::Tanh, {{4, 4}}, {4, 4}), &why));
  EXPECT_NE(why.find("Tanh"), std::string::npos) << why;
  EXPECT_FALSE(supported(GraphCase::single(Op::Transpose, {{4, 5}}, {5, 4})));
  // Concat runs as a copy step, but not with constant inputs.
  GraphCase cat = GraphCase::single(Op::Concat, {{1, 2}, {1, 3}}, {1, 5});
  cat.graph.nodes[0].attrs = {ir::Attr::make_int("axis", 1)};
  EXPECT_TRUE(supported(cat));
  GraphCase cat_const;
  int ci = cat_const.input({1, 2});
  int cc = cat_const.constant({1, 3});
  int co = cat_const.tensor({1, 5});
  cat_const.node(Op::Concat, {ci, cc}, co).attrs = {ir::Attr::make_int("axis", 1)};
  EXPECT_FALSE(supported(cat_const));
  // MatMul of two activations: no batch matrix multiply in this XNNPACK.
  EXPECT_FALSE(supported(GraphCase::single(Op::MatMul, {{4, 5}, {5, 6}}, {4, 6}), &why));
  EXPECT_NE(why.find("batch matrix multiply"), std::string::npos) << why;
  // 1-D convolution.
  GraphCase conv1d;
  int x = conv1d.input({1, 2, 9});
  int w = conv1d.constant({3, 2, 3});
  int y = conv1d.tensor({1, 3, 7});
  conv1d.node(Op::Conv, {x, w}, y);
  EXPECT_FALSE(supported(conv1d));
  // Softmax over a middle axis.
  GraphCase sm = GraphCase::single(Op::Softmax, {{2, 3, 4}}, {2, 3, 4});
  sm.graph.nodes[0].attrs = {ir::Attr::make_int("axis", 1)};
  EXPECT_FALSE(supported(sm));
  // Nearest resize, reflect pad, 1x1 pooling, int64 data.
  GraphCase rs = GraphCase::single(Op::Resize, {{1, 2, 3, 3}}, {1, 2, 6, 6});
  EXPECT_FALSE(supported(rs, &why));
  EXPECT_NE(why.find("bilinear"), std::string::npos) << why;
  GraphCase pad = GraphCase::single(Op::Pad, {{1, 2, 3, 3}}, {1, 2, 5, 5});
  pad.graph.nodes[0].attrs = {ir::Attr::make_string("mode", "reflect"),
                              ir::Attr::make_ints("pads", {0, 0, 1, 1, 0, 0, 1, 1})};
  EXPECT_FALSE(supported(pad));
  GraphCase pool = GraphCase::single(Op::MaxPool, {{1, 2, 3, 3}}, {1, 2, 3, 3});
  pool.graph.nodes[0].attrs = {ir::Attr::make_ints("kernel_shape", {1, 1})};
  EXPECT_FALSE(supported(pool));
  GraphCase ints = GraphCase::single(Op::Add, {{4}, {4}}, {4});
  for (ir::Value& v : ints.graph.values) v.dtype = ScalarType::Int64;
  EXPECT_FALSE(supported(ints));
}

TEST(XnnpackSupports, BackendSupportsOpOnSerialisedGraph) {
  Result<BackendInterface*> backend = get_backend("xnnpack");
  ASSERT_TRUE(backend.ok());
  EXPECT_TRUE((*backend)->is_available());
  GraphCase c = GraphCase::single(Op::HardSwish, {{1, 3, 4, 4}}, {1, 3, 4, 4});
  std::vector<uint8_t> bytes = ir::encode_graph(c.graph);
  const fb::Graph* g = flatbuffers::GetRoot<fb::Graph>(bytes.data());
  OpView view{static_cast<int>(Op::HardSwish), g->nodes()->Get(0), g};
  EXPECT_TRUE((*backend)->supports_op(view));
  GraphCase t = GraphCase::single(Op::Tanh, {{4}}, {4});
  std::vector<uint8_t> tbytes = ir::encode_graph(t.graph);
  const fb::Graph* tg = flatbuffers::GetRoot<fb::Graph>(tbytes.data());
  EXPECT_FALSE(
      (*backend)->supports_op(OpView{static_cast<int>(Op::Tanh), tg->nodes()->Get(0), tg}));
}

TEST(XnnpackSupports, InitRejectsUnsupportedPayload) {
  GraphCase c = GraphCase::single(Op::Tanh, {{4}}, {4});
  Session s;
  Status st = s.init(c);
  EXPECT_EQ(st.code(), Error::NotSupported) << st.message();
  EXPECT_NE(std::string(st.message()).find("xnnpack#0"), std::string::npos) << st.message();
}

TEST(XnnpackSupports, InitRejectsMalformedPayload) {
  Result<BackendInterface*> backend = get_backend("xnnpack");
  ASSERT_TRUE(backend.ok());
  ResolvedOptions resolved;
  ASSERT_TRUE(resolved.reset("xnnpack", "xnnpack#0", (*backend)->option_schema()).is_ok());
  BackendInitContext::Params params;
  params.options = &resolved;
  BackendInitContext context(params);
  const uint8_t junk[64] = {1, 2, 3, 4, 5, 6, 7, 8};
  FreeableBuffer payload(junk, sizeof junk);
  Result<DelegateHandle*> h = (*backend)->init(context, &payload, {});
  EXPECT_EQ(h.error(), Error::InvalidProgram) << h.status().message();
}

}  // namespace
}  // namespace tessera::xnnpack::testing
