#include "test_util.h"

namespace tessera::opencl::testing {

GraphCase small_net(uint32_t seed) {
  GraphCase g;
  g.seed = seed;
  int x = g.input({1, 3, 8, 8});
  int w = g.constant({4, 3, 3, 3});
  int b = g.constant({4});
  int c = g.tensor({1, 4, 8, 8});
  ir::Node& conv = g.node(fb::OpType::Conv, {x, w, b}, c);
  conv.attrs.push_back(ir::Attr::make_ints("kernel_shape", {3, 3}));
  conv.attrs.push_back(ir::Attr::make_ints("pads", {1, 1, 1, 1}));
  conv.activation = fb::Activation::Relu;
  int p = g.tensor({1, 4, 1, 1});
  g.node(fb::OpType::GlobalAveragePool, {c}, p);
  int f = g.tensor({1, 4});
  g.node(fb::OpType::Flatten, {p}, f).attrs.push_back(ir::Attr::make_int("axis", 1));
  int gw = g.constant({4, 5});
  int gb = g.constant({5});
  int y = g.tensor({1, 5});
  g.node(fb::OpType::Gemm, {f, gw, gb}, y);
  g.output(y);
  return g;
}

}  // namespace tessera::opencl::testing
