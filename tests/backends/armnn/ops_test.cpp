// The nodes the ArmNN backend's check_node rejects, with their reasons (supports_op says exactly
// what converts). The op cases every backend shares are in tests/backends/common.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness.h"
#include "tessera/backends/armnn/network_builder.h"
#include "tessera/ir/serialize.h"
#include "tests/backends/common/elementwise_cases.h"

namespace tessera::armnn_backend::testing {
namespace {

using Op = fb::OpType;
using backend_testing::unary_case;

/// check_node's reason for node `node` of `g` ("" when supported).
std::string rejection(const GraphCase& g, size_t node = 0) {
  auto bytes = ir::encode_graph(g.graph);
  const fb::Graph* fg = flatbuffers::GetRoot<fb::Graph>(bytes.data());
  Status s = check_node(*fg, *fg->nodes()->Get(static_cast<uint32_t>(node)), stored_dims(*fg));
  return s.is_ok() ? "" : s.message();
}

TEST(ArmnnSupports, RejectionsSayWhy) {
  EXPECT_NE(rejection(unary_case(Op::Gelu, {2, 8})).find("neither a Gelu activation nor an erf"),
            std::string::npos)
      << rejection(unary_case(Op::Gelu, {2, 8}));
  GraphCase mm;
  int a = mm.input({2, 4, 8});
  int b = mm.input({2, 8, 3});
  int y = mm.tensor({2, 4, 3});
  mm.node(Op::MatMul, {a, b}, y);
  mm.output(y);
  EXPECT_NE(rejection(mm).find("no batched matrix product"), std::string::npos) << rejection(mm);
  GraphCase pad = GraphCase::single(Op::Pad, {{1, 2, 4, 5}}, {1, 2, 6, 5});
  pad.graph.nodes[0].attrs.push_back(ir::Attr::make_ints("pads", {0, 0, 1, 0, 0, 0, 1, 0}));
  pad.graph.nodes[0].attrs.push_back(ir::Attr::make_string("mode", "reflect"));
  EXPECT_NE(rejection(pad).find("only constant padding"), std::string::npos) << rejection(pad);
  // The same node through init: NotSupported with the same reason.
  auto r = run_armnn(pad, random_inputs(pad, 1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Error::NotSupported);
  EXPECT_NE(std::string(r.status().message()).find("only constant padding"), std::string::npos);
}

}  // namespace
}  // namespace tessera::armnn_backend::testing
