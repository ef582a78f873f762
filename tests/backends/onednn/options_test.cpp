// The oneDNN backend's options: schema, num_threads per delegate (and restoring the caller's
// OpenMP setting), precision (bf16 native or a clear error), profile, primitive cache capacity.
#include <gtest/gtest.h>

#include <omp.h>

#include "harness.h"
#include "tessera/backend/device_info.h"
#include "tessera/backend/global_options.h"
#include "tessera/backend/options.h"
#include "tessera/backend/registry.h"
#include "tessera/backends/onednn/onednn_backend.h"
#include "tessera/backends/onednn/options.h"
#include "tessera/backends/onednn/supports.h"
#include "tests/backends/common/conv_cases.h"

namespace tessera::onednn::testing {
namespace {

using Op = fb::OpType;

GraphCase small_net() {
  backend_testing::ConvCfg c{1, 8, 12, 12, 16, 3, 3};
  c.pt = c.pl = c.pb = c.pr = 1;
  c.bias = false;
  c.act = fb::Activation::Relu;
  GraphCase g;
  int y = backend_testing::add_conv(g, g.input({1, 8, 12, 12}), c);
  int z = g.tensor({1, 16, 6, 6});
  ir::Node& p = g.node(Op::MaxPool, {y}, z);
  p.attrs.push_back(ir::Attr::make_ints("kernel_shape", {2, 2}));
  p.attrs.push_back(ir::Attr::make_ints("strides", {2, 2}));
  g.output(z);
  return g;
}

TEST(OnednnOptions, SchemaKeys) {
  auto backend = get_backend("onednn");
  ASSERT_TRUE(backend.ok());
  std::vector<std::string> keys;
  for (const OptionSpec& s : (*backend)->option_schema()) keys.emplace_back(s.key_view());
  EXPECT_EQ(keys, (std::vector<std::string>{"cache_dir", "cache_mode", "cache_max_mb",
                                            "conv_algorithm", "max_cpu_isa", "num_threads",
                                            "precision", "primitive_cache_capacity", "profile"}));
}

TEST(OnednnOptions, NumThreadsPerDelegateRestoresCaller) {
  GraphCase g = small_net();
  LoadBackendOptionsMap load;
  ASSERT_TRUE(set_load_option(&load, kNumThreads, int64_t{1}));
  RunOptions o;
  o.load = &load;
  Session s;
  ASSERT_TRUE(s.init(g, o).is_ok());
  EXPECT_EQ(summarize_delegate(s.handle()).threads, 1);
  omp_set_num_threads(2);
  std::vector<Floats> out;
  ASSERT_TRUE(s.run(random_inputs(g, 1), &out).is_ok());
  EXPECT_EQ(omp_get_max_threads(), 2);  // the application's setting survives execute
  auto want = run_portable(g, random_inputs(g, 1));
  ASSERT_TRUE(want.ok());
  EXPECT_TRUE(close(out, *want));

  Session auto_threads;
  ASSERT_TRUE(auto_threads.init(g).is_ok());
  EXPECT_EQ(summarize_delegate(auto_threads.handle()).threads,
            static_cast<int>(DeviceInfo::get().recommended_threads()));
}

// Beside another backend's CPU thread pool in the same method, primitives run on one thread
// (onednn/threading.h), whether num_threads was set or left at auto; alone, as requested.
TEST(OnednnOptions, OneThreadBesideAnotherCpuPool) {
  GraphCase g = small_net();
  LoadBackendOptionsMap load;
  ASSERT_TRUE(set_load_option(&load, kNumThreads, int64_t{2}));
  RunOptions alone;
  alone.load = &load;
  Session two;
  ASSERT_TRUE(two.init(g, alone).is_ok());
  EXPECT_EQ(summarize_delegate(two.handle()).threads, 2);

  RunOptions mixed = alone;
  mixed.cpu_pool_peers = {"xnnpack"};
  Session one;
  ASSERT_TRUE(one.init(g, mixed).is_ok());
  EXPECT_EQ(summarize_delegate(one.handle()).threads, 1);
  std::vector<Floats> out;
  ASSERT_TRUE(one.run(random_inputs(g, 3), &out).is_ok());
  auto want = run_portable(g, random_inputs(g, 3));
  ASSERT_TRUE(want.ok());
  EXPECT_TRUE(close(out, *want));

  RunOptions mixed_auto;
  mixed_auto.cpu_pool_peers = {"xnnpack"};
  Session auto_threads;
  ASSERT_TRUE(auto_threads.init(g, mixed_auto).is_ok());
  EXPECT_EQ(summarize_delegate(auto_threads.handle()).threads, 1);
}

TEST(OnednnOptions, Profile) {
  GraphCase g = small_net();
  Session s;
  ASSERT_TRUE(s.init(g).is_ok());
  ExecuteOptions exec;
  ASSERT_TRUE(exec.set("onednn", kProfile, true).is_ok());
  ProfileEvent storage[32];
  ProfileBuffer profile(storage);
  ASSERT_TRUE(s.run(random_inputs(g, 2), nullptr, &exec, &profile).is_ok());
  bool conv = false;
  for (const ProfileEvent& e : profile.events()) {
    conv |= std::string(e.name).rfind("conv:", 0) == 0;
    EXPECT_GE(e.ms, 0.0);
  }
  EXPECT_TRUE(conv);
  // Without the execute option nothing is reported.
  profile.clear();
  ASSERT_TRUE(s.run(random_inputs(g, 2), nullptr, nullptr, &profile).is_ok());
  EXPECT_EQ(profile.events().size(), 0u);
}

TEST(OnednnOptions, Bf16NativeOrNamedError) {
  GraphCase g = small_net();
  LoadBackendOptionsMap load;
  ASSERT_TRUE(set_load_option(&load, kPrecision, EnumValue{"bf16"}));
  RunOptions o;
  o.load = &load;
  const bool cpu_bf16 =
      DeviceInfo::get().has_isa("avx512_bf16") || DeviceInfo::get().has_isa("amx_bf16");
  Session s;
  Status st = s.init(g, o);
  // Without native bf16 arithmetic the error names the instructions; with it, but oneDNN capped
  // below its bf16 kernels (max_cpu_isa), it names oneDNN's effective ISA.
  if (!cpu_bf16 || !bf16_kernels_available()) {
    EXPECT_EQ(st.code(), Error::NotSupported);
    EXPECT_NE(std::string(st.message()).find(cpu_bf16 ? "effective ISA" : "avx512_bf16"),
              std::string::npos)
        << st.message();
    return;
  }
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_TRUE(summarize_delegate(s.handle()).bf16);
  std::vector<Floats> inputs = random_inputs(g, 3);
  std::vector<Floats> out;
  ASSERT_TRUE(s.run(inputs, &out).is_ok());
  auto want = run_portable(g, inputs);
  ASSERT_TRUE(want.ok());
  EXPECT_TRUE(close(out, *want, 2e-2));
}

TEST(OnednnOptions, AutoPrecisionPicksBf16OnlyWithAmx) {
  GraphCase g = small_net();
  LoadBackendOptionsMap load;
  ASSERT_TRUE(set_load_option(&load, kPrecision, EnumValue{"auto"}));
  RunOptions o;
  o.load = &load;
  Session s;
  ASSERT_TRUE(s.init(g, o).is_ok());
  const bool amx = amx_bf16_available();
  EXPECT_EQ(summarize_delegate(s.handle()).bf16, amx);
  std::vector<Floats> inputs = random_inputs(g, 4);
  std::vector<Floats> out;
  ASSERT_TRUE(s.run(inputs, &out).is_ok());
  auto want = run_portable(g, inputs);
  ASSERT_TRUE(want.ok());
  EXPECT_TRUE(close(out, *want, amx ? 2e-2 : 1e-4));
}

TEST(OnednnOptions, PrimitiveCacheCapacityGlobal) {
  BackendOptions<1> opts;
  ASSERT_TRUE(opts.set(kPrimitiveCacheCapacity, int64_t{256}).is_ok());
  ASSERT_TRUE(set_option("onednn", opts.view()).is_ok());
  BackendOptions<1> read;
  ASSERT_TRUE(read.set(kPrimitiveCacheCapacity, int64_t{0}).is_ok());
  ASSERT_TRUE(get_option("onednn", read.mutable_view()).is_ok());
  EXPECT_EQ(read.view()[0].as_int(), 256);
  ASSERT_TRUE(reset_backend_options("onednn").is_ok());
  ASSERT_TRUE(opts.set(kPrimitiveCacheCapacity, int64_t{1024}).is_ok());
  ASSERT_TRUE(set_option("onednn", opts.view()).is_ok());
}

TEST(OnednnOptions, WrongScopesRejected) {
  BackendOptions<1> opts;
  ASSERT_TRUE(opts.set(kPrecision, EnumValue{"bf16"}).is_ok());
  EXPECT_EQ(set_option("onednn", opts.view()).code(), Error::OptionWrongScope);
  BackendOptions<1> isa;
  ASSERT_TRUE(isa.set(kMaxCpuIsa, EnumValue{"avx3"}).is_ok());
  EXPECT_EQ(set_option("onednn", isa.view()).code(), Error::OptionInvalidChoice);
}

TEST(OnednnSupports, DeclaresWhatItLowers) {
  std::string why;
  GraphCase ok = small_net();
  auto bytes = ir::encode_graph(ok.graph);
  const fb::Graph* g = flatbuffers::GetRoot<fb::Graph>(bytes.data());
  for (const fb::Node* n : *g->nodes()) EXPECT_TRUE(onednn_supports(*g, *n, &why)) << why;
  // Conv with non-constant weights: not lowered.
  GraphCase bad = GraphCase::single(Op::Conv, {{1, 2, 5, 5}, {3, 2, 3, 3}}, {1, 3, 3, 3});
  auto b2 = ir::encode_graph(bad.graph);
  const fb::Graph* g2 = flatbuffers::GetRoot<fb::Graph>(b2.data());
  EXPECT_FALSE(onednn_supports(*g2, *g2->nodes()->Get(0), &why));
  EXPECT_NE(why.find("constant"), std::string::npos) << why;
}

// At two threads, steps too small to split (here a 1x1 Conv on 4x4 and a Sigmoid of 256
// values) are created and run on one thread; a Conv of 64 -> 64 channels, 3x3, at 32x32 (38M
// multiply-accumulates) keeps the team. At one thread nothing is marked. Outputs match either way,
// over repeated runs (the team size switches inside one execute).
TEST(OnednnOptions, StepsTooSmallToSplitRunOnOneThread) {
  GraphCase g;
  g.seed = 9;
  backend_testing::ConvCfg big{1, 64, 32, 32, 64, 3, 3};
  big.pt = big.pl = big.pb = big.pr = 1;
  const int y = backend_testing::add_conv(g, g.input({1, 64, 32, 32}), big);
  const int p = g.tensor({1, 64, 4, 4});
  ir::Node& pool = g.node(Op::MaxPool, {y}, p);
  pool.attrs.push_back(ir::Attr::make_ints("kernel_shape", {8, 8}));
  pool.attrs.push_back(ir::Attr::make_ints("strides", {8, 8}));
  backend_testing::ConvCfg tiny{1, 64, 4, 4, 16, 1, 1};
  const int t = backend_testing::add_conv(g, p, tiny);
  const int s = g.tensor({1, 16, 4, 4});
  g.node(Op::Sigmoid, {t}, s);
  g.output(s);
  const std::vector<Floats> in = random_inputs(g, 4);
  auto want = run_portable(g, in);
  ASSERT_TRUE(want.ok());
  for (int64_t threads : {1, 2}) {
    LoadBackendOptionsMap load;
    ASSERT_TRUE(set_load_option(&load, kNumThreads, threads));
    RunOptions o;
    o.load = &load;
    Session session;
    ASSERT_TRUE(session.init(g, o).is_ok());
    const DelegateSummary sum = summarize_delegate(session.handle());
    EXPECT_EQ(sum.threads, threads);
    if (threads == 1) {
      EXPECT_EQ(sum.single_thread_steps, 0u);
    } else {
      // The tiny Conv and the Sigmoid (fused into it as a post-op, or a step of its own), and
      // the pool over 65536 values stays split.
      EXPECT_GE(sum.single_thread_steps, 1u);
      EXPECT_LT(sum.single_thread_steps, sum.steps.size());
    }
    std::vector<Floats> first, again;
    ASSERT_TRUE(session.run(in, &first).is_ok());
    ASSERT_TRUE(session.run(in, &again).is_ok());
    EXPECT_TRUE(close(first, *want)) << threads;
    EXPECT_EQ(first, again) << threads;
  }
}

// Squeeze-excitation at two threads: a Conv, the global pool of its output, and its output times
// that [1, C, 1, 1] scale. Where oneDNN gives the Conv a channels-last output (its brgconv
// kernels, on AVX-512 machines) the pool and the multiply run on one thread; in other layouts
// they keep the team. Correct either way.
TEST(OnednnOptions, ChannelsLastSqueezeExcitationRunsOnOneThread) {
  GraphCase g;
  g.seed = 10;
  backend_testing::ConvCfg conv{1, 32, 28, 28, 64, 1, 1};
  const int y = backend_testing::add_conv(g, g.input({1, 32, 28, 28}), conv);
  const int p = g.tensor({1, 64, 1, 1});
  g.node(Op::GlobalAveragePool, {y}, p);
  const int z = g.tensor({1, 64, 28, 28});
  g.node(Op::Mul, {y, p}, z);
  g.output(z);
  const std::vector<Floats> in = random_inputs(g, 5);
  auto want = run_portable(g, in);
  ASSERT_TRUE(want.ok());
  LoadBackendOptionsMap load;
  ASSERT_TRUE(set_load_option(&load, kNumThreads, int64_t{2}));
  RunOptions o;
  o.load = &load;
  Session session;
  ASSERT_TRUE(session.init(g, o).is_ok());
  const DelegateSummary sum = summarize_delegate(session.handle());
  ASSERT_EQ(sum.steps.size(), sum.step_threads.size());
  bool channels_last = false;
  for (const std::string& step : sum.steps) {
    if (step.rfind("conv:", 0) == 0 && step.find("brgconv") != std::string::npos) {
      channels_last = true;
    }
  }
  for (size_t i = 0; i < sum.steps.size(); ++i) {
    const std::string& step = sum.steps[i];
    if (step.rfind("pool:", 0) == 0 || step.rfind("binary:", 0) == 0) {
      EXPECT_EQ(sum.step_threads[i], channels_last ? 1 : 0) << step;
    }
  }
  std::vector<Floats> out;
  ASSERT_TRUE(session.run(in, &out).is_ok());
  EXPECT_TRUE(close(out, *want));
}

// Measured selection asks whether a conv_algorithm variant would change a delegate: not where
// no convolution is one Winograd takes (1x1 only), nor to turn off Winograd where none runs.
TEST(OnednnOptions, ConvAlgorithmVariantsSayWhetherTheyChangeTheDelegate) {
  auto backend = get_backend("onednn");
  ASSERT_TRUE(backend.ok());
  GraphCase three = small_net();  // a 3x3, stride 1 Conv of 8 -> 16 channels: auto keeps direct
  Session s3;
  ASSERT_TRUE(s3.init(three).is_ok());
  EXPECT_FALSE((*backend)->variant_changes(s3.handle(), "conv_algorithm", "direct"));
  EXPECT_EQ((*backend)->variant_changes(s3.handle(), "conv_algorithm", "winograd"),
            winograd_kernels_available());
  EXPECT_TRUE((*backend)->variant_changes(s3.handle(), "precision", "bf16"));

  GraphCase one;
  one.seed = 11;
  backend_testing::ConvCfg c{1, 8, 12, 12, 16, 1, 1};
  one.output(backend_testing::add_conv(one, one.input({1, 8, 12, 12}), c));
  Session s1;
  ASSERT_TRUE(s1.init(one).is_ok());
  EXPECT_FALSE((*backend)->variant_changes(s1.handle(), "conv_algorithm", "winograd"));
  EXPECT_FALSE((*backend)->variant_changes(s1.handle(), "conv_algorithm", "direct"));
}

}  // namespace
}  // namespace tessera::onednn::testing
