#include "tests/backends/common/release_cases.h"

#include <algorithm>
#include <numeric>

#include "tests/backends/common/conv_cases.h"

namespace tessera::backend_testing {

ReleaseCase release_case(uint32_t seed) {
  ReleaseCase r;
  GraphCase& g = r.graph;
  g.seed = seed;
  const int x = g.input({1, 8, 12, 12});
  const auto constant_of = [&](const ir::Node& n, size_t slot) {
    return static_cast<uint32_t>(g.graph.values[static_cast<size_t>(n.inputs[slot])].constant);
  };
  ConvCfg c3{1, 8, 12, 12, 16, 3, 3};
  c3.pt = c3.pl = c3.pb = c3.pr = 1;
  int y = add_conv(g, x, c3);
  r.conv3x3_w = constant_of(g.graph.nodes.back(), 1);
  r.conv3x3_b = constant_of(g.graph.nodes.back(), 2);
  ConvCfg c1{1, 16, 12, 12, 24, 1, 1};
  c1.bias = false;
  y = add_conv(g, y, c1);
  r.conv1x1_w = constant_of(g.graph.nodes.back(), 1);
  ConvCfg dw{1, 24, 12, 12, 24, 3, 3};
  dw.pt = dw.pl = dw.pb = dw.pr = 1;
  dw.group = 24;
  y = add_conv(g, y, dw);
  r.depthwise_w = constant_of(g.graph.nodes.back(), 1);
  r.depthwise_b = constant_of(g.graph.nodes.back(), 2);

  Floats variance(24);
  for (size_t i = 0; i < variance.size(); ++i) variance[i] = 0.5f + 0.05f * static_cast<float>(i);
  const int scale = g.constant({24}), bias = g.constant({24}), mean = g.constant({24}),
            var = g.constant({24}, variance);
  const int bn = g.tensor({1, 24, 12, 12});
  g.node(fb::OpType::BatchNormalization, {y, scale, bias, mean, var}, bn)
      .attrs.push_back(ir::Attr::make_float("epsilon", 1e-5f));
  for (int v : {scale, bias, mean, var}) {
    r.batchnorm.push_back(static_cast<uint32_t>(g.graph.values[static_cast<size_t>(v)].constant));
  }
  const int pooled = g.tensor({1, 24, 1, 1});
  g.node(fb::OpType::GlobalAveragePool, {bn}, pooled);
  const int flat = g.tensor({1, 24});
  g.node(fb::OpType::Flatten, {pooled}, flat).attrs.push_back(ir::Attr::make_int("axis", 1));
  const int b = g.constant({10, 24}), cc = g.constant({10});
  const int out = g.tensor({1, 10});
  ir::Node& gemm = g.node(fb::OpType::Gemm, {flat, b, cc}, out);
  gemm.attrs.push_back(ir::Attr::make_int("transB", 1));
  r.gemm_b = static_cast<uint32_t>(g.graph.values[static_cast<size_t>(b)].constant);
  r.gemm_c = static_cast<uint32_t>(g.graph.values[static_cast<size_t>(cc)].constant);
  g.output(out);
  return r;
}

::testing::AssertionResult runs_with_released_constants_poisoned(const char* backend,
                                                                 ReleaseCase& c,
                                                                 std::vector<uint32_t>* released) {
  const std::vector<Floats> inputs = random_inputs(c.graph, 3);
  Result<std::vector<Floats>> want = run_portable(c.graph, inputs);
  if (!want.ok()) return ::testing::AssertionFailure() << want.status().message();
  RunOptions options;
  options.released = released;
  options.poison_released = true;
  options.repeat = 2;
  Result<std::vector<Floats>> got = run_backend(backend, c.graph, inputs, options);
  if (!got.ok()) return ::testing::AssertionFailure() << got.status().message();
  return close(*got, *want);
}

::testing::AssertionResult releases_every_constant(const char* backend) {
  ReleaseCase c = release_case(5);
  std::vector<uint32_t> released;
  ::testing::AssertionResult ran = runs_with_released_constants_poisoned(backend, c, &released);
  if (!ran) return ran;
  std::sort(released.begin(), released.end());
  released.erase(std::unique(released.begin(), released.end()), released.end());
  std::vector<uint32_t> want(c.graph.constants.size());
  std::iota(want.begin(), want.end(), 0u);
  if (released == want) return ::testing::AssertionSuccess();
  ::testing::AssertionResult failure = ::testing::AssertionFailure();
  failure << "released " << released.size() << " of " << want.size() << " constants:";
  for (uint32_t r : released) failure << " " << r;
  return failure;
}

}  // namespace tessera::backend_testing
