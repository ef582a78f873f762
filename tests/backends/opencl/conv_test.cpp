// Conformance: 1-D Conv against the portable kernels, which only the OpenCL backend takes. The
// 2-D Conv cases every backend shares are in tests/backends/common/conformance_test.cpp,
// instantiated here.
#include <gtest/gtest.h>

#include "harness.h"
#include "tests/backends/common/conformance.h"

namespace tessera::opencl::testing {
namespace {

TEST(OpenClConv, OneDimensional) {
  GraphCase g;
  int x = g.input({2, 3, 12});
  int w = g.constant({4, 3, 3});
  int b = g.constant({4});
  int y = g.tensor({2, 4, 6});
  ir::Node& n = g.node(fb::OpType::Conv, {x, w, b}, y);
  n.attrs.push_back(ir::Attr::make_ints("kernel_shape", {3}));
  n.attrs.push_back(ir::Attr::make_ints("strides", {2}));
  n.attrs.push_back(ir::Attr::make_ints("pads", {1, 0}));
  g.output(y);
  EXPECT_TRUE(matches_portable(g));
}

}  // namespace
}  // namespace tessera::opencl::testing

namespace tessera::backend_testing {
INSTANTIATE_TEST_SUITE_P(Conformance, Conv, ::testing::Values(opencl::testing::kBackendName),
                         BackendParamName());
}  // namespace tessera::backend_testing
