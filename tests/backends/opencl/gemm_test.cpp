// gemm = clblast: Conv (group 1) and Gemm through CLBlast's GEMM with generated kernels around it
// (im2col before; bias, residual and activation after), against the portable kernels; gemm =
// auto derived and reported; gemm = clblast in a build without CLBlast is a clear init error.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "harness.h"
#include "tessera/backends/opencl/codegen.h"
#include "tessera/backends/opencl/delegate.h"
#include "tessera/backends/opencl/options.h"
#include "tests/backends/common/conv_cases.h"

namespace tessera::opencl::testing {
namespace {

::testing::AssertionResult matches_portable_with(const GraphCase& g,
                                                 const LoadBackendOptionsMap& load) {
  const std::vector<Floats> in = random_inputs(g, 4);
  Result<std::vector<Floats>> got = run_opencl(g, in, with(load));
  if (!got.ok()) return ::testing::AssertionFailure() << got.status().message();
  Result<std::vector<Floats>> want = run_portable(g, in);
  if (!want.ok()) return ::testing::AssertionFailure() << want.status().message();
  return close(*got, *want);
}

// Convolutions through im2col and in place (a ragged 1x1), a batch of two, a fused residual Add
// with its Relu, a Conv without bias or activation (the GEMM call is its only kernel), and fully
// connected layers with and without transposes, alpha, beta and a broadcast C.
GraphCase mixed_net() {
  using backend_testing::ConvCfg;
  GraphCase g;
  g.seed = 9;
  const int x = g.input({2, 5, 6, 7});
  ConvCfg c3{2, 5, 6, 7, 9, 3, 3};
  c3.pt = c3.pl = c3.pb = c3.pr = 1;
  c3.act = fb::Activation::Clip;
  c3.act_min = -0.5f;
  c3.act_max = 0.5f;
  const int a = backend_testing::add_conv(g, x, c3);
  ConvCfg c1{2, 9, 6, 7, 9, 1, 1};  // 42 pixels: ragged, read in place
  const int b = backend_testing::add_conv(g, a, c1);
  const int s = g.tensor({2, 9, 6, 7});
  g.node(fb::OpType::Add, {b, a}, s).activation = fb::Activation::Relu;
  ConvCfg plain{2, 9, 6, 7, 4, 1, 1};
  plain.bias = false;
  const int c = backend_testing::add_conv(g, s, plain);
  g.output(c);
  // Fully connected: Y = A * B^T + C (C broadcast over rows), then a plain A * B with alpha.
  const int fa = g.input({3, 20});
  const int fb_ = g.constant({11, 20});
  const int fc = g.constant({11});
  const int fy = g.tensor({3, 11});
  ir::Node& fc1 = g.node(fb::OpType::Gemm, {fa, fb_, fc}, fy);
  fc1.attrs.push_back(ir::Attr::make_int("transB", 1));
  fc1.attrs.push_back(ir::Attr::make_float("beta", 0.5f));
  fc1.activation = fb::Activation::Relu;
  g.output(fy);
  const int ga = g.input({7, 3});
  const int gb = g.constant({7, 6});
  const int gy = g.tensor({3, 6});
  ir::Node& fc2 = g.node(fb::OpType::Gemm, {ga, gb}, gy);
  fc2.attrs.push_back(ir::Attr::make_int("transA", 1));
  fc2.attrs.push_back(ir::Attr::make_float("alpha", 0.25f));
  g.output(gy);
  return g;
}

TEST(OpenClGemm, ClblastMatchesPortable) {
  if (!clblast_built_in()) GTEST_SKIP() << "this build has no CLBlast";
  GraphCase g = mixed_net();
  LoadBackendOptionsMap load;
  ASSERT_TRUE(load.set("opencl", kGemm, EnumValue{"clblast"}).is_ok());
  EXPECT_TRUE(matches_portable_with(g, load));
  Session s;
  ASSERT_TRUE(s.init(g, with(load)).is_ok());
  EXPECT_EQ(s.summary().library_gemms, 5u);  // three Convs, two Gemms
  EXPECT_EQ(s.summary().fused_adds, 1u);
  EXPECT_EQ(s.derived().find("gemm"), nullptr);  // set, not derived
  // Profiling names the library calls too.
  std::vector<Floats> in = random_inputs(g, 2), out;
  ExecuteOptions exec;
  ASSERT_TRUE(exec.set("opencl", kKernelProfiling, true).is_ok());
  ProfileEvent storage[64];
  ProfileBuffer profile(Span<ProfileEvent>(storage, 64));
  ASSERT_TRUE(s.run(in, &out, &exec, &profile).is_ok());
  int gemm_events = 0;
  for (const ProfileEvent& e : profile.events()) {
    if (std::string(e.name).find(":gemm ") != std::string::npos) ++gemm_events;
  }
  EXPECT_EQ(gemm_events, 5);
}

TEST(OpenClGemm, AutoIsDerivedFromTheDeviceAndReported) {
  GraphCase g = mixed_net();
  Session s;
  ASSERT_TRUE(s.init(g).is_ok());
  const DerivedValue* d = s.derived().find("gemm");
  ASSERT_NE(d, nullptr);
  // The rule, for whichever device the tests run on (PoCL's CPU device in CI): generated on a
  // CPU device or without CLBlast, clblast on a GPU or accelerator when built in.
  const std::string type = s.summary().device_type;
  if (type == "cpu") {
    EXPECT_STREQ(d->value, "generated");
    EXPECT_NE(std::string(d->reason).find("CPU device"), std::string::npos) << d->reason;
    EXPECT_EQ(s.summary().library_gemms, 0u);
  } else if (clblast_built_in()) {
    EXPECT_STREQ(d->value, "clblast");
    EXPECT_NE(std::string(d->reason).find("CLBlast is built in"), std::string::npos) << d->reason;
    EXPECT_EQ(s.summary().library_gemms, 5u);
  } else {
    EXPECT_STREQ(d->value, "generated");
    EXPECT_NE(std::string(d->reason).find("no CLBlast"), std::string::npos) << d->reason;
  }
  LoadBackendOptionsMap generated;
  ASSERT_TRUE(generated.set("opencl", kGemm, EnumValue{"generated"}).is_ok());
  EXPECT_TRUE(matches_portable_with(g, generated));
}

TEST(OpenClGemm, ClblastWithoutItIsAnInitError) {
  if (clblast_built_in()) GTEST_SKIP() << "this build has CLBlast";
  GraphCase g = mixed_net();
  LoadBackendOptionsMap load;
  ASSERT_TRUE(load.set("opencl", kGemm, EnumValue{"clblast"}).is_ok());
  Session s;
  const Status st = s.init(g, with(load));
  EXPECT_EQ(st.code(), Error::NotSupported);
  EXPECT_NE(std::string(st.message()).find("no CLBlast"), std::string::npos) << st.message();
}

// A Gemm with C reads C's two strides as parameters. Their order is the kernel's argument list,
// so part of its text and of every cache key made from that text (PoCL's kernel cache, the
// program cache): it must be the order the generator names them in, not the order a compiler
// happens to evaluate the operands of one expression (GCC built them the other way round from
// clang, so a GCC-built library never found a clang-built one's kernels in PoCL's cache).
// The plan of `g`'s first node, as the backend makes it at init.
NodePlan plan_first_node(const GraphCase& g, GemmImpl impl = GemmImpl::Generated) {
  const std::vector<uint8_t> bytes = ir::encode_graph(g.graph);
  const fb::Graph* graph = flatbuffers::GetRoot<fb::Graph>(bytes.data());
  const std::vector<Dims> shapes = stored_shapes(*graph);
  NodePlan plan;
  const Status st =
      plan_node(*graph, 0, Span<const Dims>(shapes.data(), shapes.size()), &plan, nullptr, impl);
  EXPECT_TRUE(st.is_ok()) << st.message();
  return plan;
}

TEST(OpenClGemm, CsStridesAreParametersInOneOrderWhateverTheCompiler) {
  GraphCase g;
  const int a = g.input({3, 20});
  const int b = g.constant({11, 20});
  const int c = g.constant({3, 11});
  const int y = g.tensor({3, 11});
  ir::Node& n = g.node(fb::OpType::Gemm, {a, b, c}, y);
  n.attrs.push_back(ir::Attr::make_int("transB", 1));
  n.attrs.push_back(ir::Attr::make_float("beta", 0.5f));
  g.output(y);
  for (GemmImpl impl : {GemmImpl::Generated, GemmImpl::Clblast}) {
    SCOPED_TRACE(impl == GemmImpl::Clblast ? "gemm = clblast" : "gemm = generated");
    const NodePlan plan = plan_first_node(g, impl);
    std::vector<std::string> names;
    for (const auto& p : plan.kernel.params) names.push_back(p.first);
    const auto csm = std::find(names.begin(), names.end(), "CSM");
    const auto csn = std::find(names.begin(), names.end(), "CSN");
    ASSERT_NE(csm, names.end());
    ASSERT_NE(csn, names.end());
    EXPECT_EQ(csn - csm, 1);
    const std::string text = kernel_source(plan.kernel, /*specialize=*/false);
    EXPECT_LT(text.find("const int P_CSM"), text.find("const int P_CSN")) << text;
  }
}

// The same for a batched MatMul's batch dims: per dim its size, then A's stride, then B's.
TEST(OpenClGemm, BatchStridesAreParametersInOneOrderWhateverTheCompiler) {
  GraphCase g;
  const int a = g.input({2, 3, 4, 5});
  const int b = g.input({2, 1, 5, 6});
  const int y = g.tensor({2, 3, 4, 6});
  g.node(fb::OpType::MatMul, {a, b}, y);
  g.output(y);
  std::string names;
  for (const auto& p : plan_first_node(g).kernel.params) names += p.first + " ";
  EXPECT_EQ(names, "N M K bd1 sa1 sb1 bd0 sa0 sb0 total ");
}

}  // namespace
}  // namespace tessera::opencl::testing
