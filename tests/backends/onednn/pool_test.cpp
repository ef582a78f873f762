// oneDNN's own pooling case: pooling that reads a convolution's blocked layout. The pooling and
// reduction cases every backend shares are in tests/backends/common/pool_test.cpp.
#include <gtest/gtest.h>

#include "harness.h"

namespace tessera::onednn::testing {
namespace {

using Op = fb::OpType;

TEST(OnednnPool, AfterConvLayout) {
  // Pooling reads the convolution's blocked layout directly.
  GraphCase g;
  int x = g.input({1, 16, 12, 12});
  int w = g.constant({32, 16, 3, 3});
  int h = g.tensor({1, 32, 10, 10});
  ir::Node& conv = g.node(Op::Conv, {x, w}, h);
  conv.attrs.push_back(ir::Attr::make_ints("kernel_shape", {3, 3}));
  int y = g.tensor({1, 32, 5, 5});
  ir::Node& pool = g.node(Op::MaxPool, {h}, y);
  pool.attrs.push_back(ir::Attr::make_ints("kernel_shape", {2, 2}));
  pool.attrs.push_back(ir::Attr::make_ints("strides", {2, 2}));
  g.output(y);
  EXPECT_TRUE(matches_portable(g));
}

}  // namespace
}  // namespace tessera::onednn::testing
