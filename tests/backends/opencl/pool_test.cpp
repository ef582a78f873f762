// Conformance: MaxPool, AveragePool (pads, count_include_pad, ceil_mode, dilation) and
// GlobalAveragePool.
#include <gtest/gtest.h>

#include "harness.h"

namespace tessera::opencl::testing {
namespace {

using Op = fb::OpType;

GraphCase pool_case(Op op, std::vector<int64_t> in, std::vector<int64_t> out,
                    std::vector<int64_t> kernel, std::vector<int64_t> strides,
                    std::vector<int64_t> pads, int64_t ceil_mode = 0, int64_t include_pad = 0) {
  GraphCase g = GraphCase::single(op, {in}, out);
  auto& attrs = g.graph.nodes[0].attrs;
  attrs.push_back(ir::Attr::make_ints("kernel_shape", kernel));
  attrs.push_back(ir::Attr::make_ints("strides", strides));
  attrs.push_back(ir::Attr::make_ints("pads", pads));
  attrs.push_back(ir::Attr::make_int("ceil_mode", ceil_mode));
  if (op == Op::AveragePool) attrs.push_back(ir::Attr::make_int("count_include_pad", include_pad));
  return g;
}

TEST(OpenClPool, MaxPool) {
  EXPECT_TRUE(matches_portable(pool_case(Op::MaxPool, {1, 3, 8, 8}, {1, 3, 4, 4}, {2, 2}, {2, 2}, {0, 0, 0, 0})));
  EXPECT_TRUE(matches_portable(pool_case(Op::MaxPool, {2, 2, 9, 7}, {2, 2, 5, 4}, {3, 3}, {2, 2}, {1, 1, 1, 1})));
}

TEST(OpenClPool, MaxPoolCeilMode) {
  EXPECT_TRUE(matches_portable(pool_case(Op::MaxPool, {1, 2, 8, 8}, {1, 2, 4, 4}, {3, 3}, {2, 2}, {0, 0, 0, 0}, 1)));
}

TEST(OpenClPool, AveragePool) {
  EXPECT_TRUE(matches_portable(pool_case(Op::AveragePool, {1, 3, 7, 7}, {1, 3, 4, 4}, {3, 3}, {2, 2}, {1, 1, 1, 1})));
  EXPECT_TRUE(matches_portable(pool_case(Op::AveragePool, {1, 3, 7, 7}, {1, 3, 4, 4}, {3, 3}, {2, 2}, {1, 1, 1, 1}, 0, 1)));
  EXPECT_TRUE(matches_portable(pool_case(Op::AveragePool, {1, 2, 8, 8}, {1, 2, 4, 4}, {3, 3}, {2, 2}, {0, 0, 0, 0}, 1, 1)));
}

TEST(OpenClPool, GlobalAveragePool) {
  EXPECT_TRUE(matches_portable(GraphCase::single(Op::GlobalAveragePool, {{2, 5, 6, 7}}, {2, 5, 1, 1})));
}

}  // namespace
}  // namespace tessera::opencl::testing
