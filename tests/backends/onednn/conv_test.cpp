// oneDNN's own Conv tests: the activation arena, Conv + Add fused as a sum post-op, the
// conv_algorithm option (Winograd), Concat without copies, a broadcast Mul after a grouped Conv and
// SiLU as a swish post-op, against the portable kernels and the delegate's summary. The Conv cases
// every backend shares are in tests/backends/common/conformance_test.cpp, instantiated here.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "harness.h"
#include "tessera/backend/options.h"
#include "tessera/backend/registry.h"
#include "tessera/backends/onednn/options.h"
#include "tessera/backends/onednn/silu.h"
#include "tests/backends/common/conformance.h"
#include "tests/backends/common/conv_cases.h"

namespace tessera::onednn::testing {
namespace {

using Op = fb::OpType;

using backend_testing::add_conv;
using backend_testing::conv_case;
using backend_testing::ConvCfg;

// ---- activation arena
// ------------------------------------------------------------------------------

/// `convs` 3x3 Convs with ReLU in a row, each `channels` in and out at `size` x `size` (padded).
GraphCase conv_chain(uint32_t seed, int64_t channels, int64_t size, int convs) {
  GraphCase g;
  g.seed = seed;
  ConvCfg c{1, channels, size, size, channels, 3, 3};
  c.pt = c.pl = c.pb = c.pr = 1;
  c.act = fb::Activation::Relu;
  int v = g.input({1, channels, size, size});
  for (int i = 0; i < convs; ++i) v = add_conv(g, v, c);
  g.output(v);
  return g;
}

TEST(OnednnArena, ChainSharesBuffersAndStaysExact) {
  // Six convolutions in a row: at most two activations are live at once, so the arena holds
  // about two of the six buffers, and results stay exact over repeated runs.
  const GraphCase g = conv_chain(40, 16, 12, 6);
  for (int run = 0; run < 2; ++run) EXPECT_TRUE(matches_portable(g)) << run;
  Session s;
  ASSERT_TRUE(s.init(g).is_ok());
  const DelegateSummary sum = summarize_delegate(s.handle());
  EXPECT_GT(sum.arena_bytes, 0u);
  EXPECT_GE(sum.activation_bytes, 5 * 16 * 12 * 12 * sizeof(float));
  EXPECT_LE(sum.arena_bytes * 2, sum.activation_bytes)
      << sum.arena_bytes << " of " << sum.activation_bytes;
}

// ---- residual blocks: Conv + Add as a sum post-op
// ------------------------------------------------

/// x -> conv1(relu) -> conv2 -> add(residual) [relu]. `residual_from_conv`: the residual is a
/// conv output (can be overwritten in place) instead of the graph input (copied first).
GraphCase residual_case(bool residual_from_conv, bool residual_read_later, bool add_relu,
                        bool conv_second_operand, uint32_t seed) {
  GraphCase g;
  g.seed = seed;
  ConvCfg c{1, 16, 10, 10, 16, 3, 3};
  c.pt = c.pl = c.pb = c.pr = 1;
  int x = g.input({1, 16, 10, 10});
  int r = x;
  if (residual_from_conv) {
    ConvCfg stem = c;
    stem.act = fb::Activation::Relu;
    r = add_conv(g, x, stem);
  }
  ConvCfg c1 = c;
  c1.act = fb::Activation::Relu;
  int h = add_conv(g, r, c1);
  int h2 = add_conv(g, h, c);
  int y = g.tensor({1, 16, 10, 10});
  ir::Node& add =
      g.node(Op::Add, conv_second_operand ? std::vector<int>{r, h2} : std::vector<int>{h2, r}, y);
  if (add_relu) add.activation = fb::Activation::Relu;
  g.output(y);
  if (residual_read_later) {
    int z = g.tensor({1, 16, 10, 10});
    g.node(Op::Mul, {r, y}, z);
    g.output(z);
  }
  return g;
}

TEST(OnednnResidual, SumPostOpInPlace) {
  GraphCase g = residual_case(true, false, true, false, 30);
  EXPECT_TRUE(matches_portable(g));
  Session s;
  ASSERT_TRUE(s.init(g).is_ok());
  const DelegateSummary sum = summarize_delegate(s.handle());
  EXPECT_EQ(sum.fused_sums, 1u);
  EXPECT_EQ(sum.in_place_sums, 1u);
  for (const std::string& step : sum.steps)
    EXPECT_EQ(step.find("binary"), std::string::npos) << step;
}

TEST(OnednnResidual, SumPostOpCopiesAReadOnlyResidual) {
  // Residual is the graph input (read only), or still read after the add.
  for (int variant = 0; variant < 2; ++variant) {
    GraphCase g = variant == 0 ? residual_case(false, false, true, true, 31)
                               : residual_case(true, true, false, false, 32);
    EXPECT_TRUE(matches_portable(g)) << variant;
    Session s;
    ASSERT_TRUE(s.init(g).is_ok());
    const DelegateSummary sum = summarize_delegate(s.handle());
    EXPECT_EQ(sum.fused_sums, 1u);
    EXPECT_EQ(sum.in_place_sums, 0u);
  }
}

TEST(OnednnResidual, RepeatedRunsStayCorrect) {
  // In-place accumulation must not carry state from one execute to the next.
  GraphCase g = residual_case(true, false, true, false, 33);
  std::vector<Floats> inputs = random_inputs(g, 5);
  auto want = run_portable(g, inputs);
  ASSERT_TRUE(want.ok());
  RunOptions o;
  o.repeat = 3;
  auto got = run_onednn(g, inputs, o);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_TRUE(close(*got, *want));
}

// ---- conv_algorithm: Winograd and direct
// ----------------------------------------------------------

/// Runs `g` with onednn.`key`=`value` at load scope: results against the portable kernels (1e-4
/// relative to the output's magnitude, random inputs from `seed`; those of the last of `repeat`
/// executes in one delegate), and the delegate's summary.
::testing::AssertionResult run_with_load(const GraphCase& g, LoadBackendOptionsMap* load,
                                         uint32_t seed, DelegateSummary* summary, int repeat = 1) {
  RunOptions o;
  o.load = load;
  o.repeat = repeat;
  const std::vector<Floats> inputs = random_inputs(g, seed);
  auto want = run_portable(g, inputs);
  auto got = run_onednn(g, inputs, o);
  if (!want.ok()) return ::testing::AssertionFailure() << want.status().message();
  if (!got.ok()) return ::testing::AssertionFailure() << got.status().message();
  Session s;
  const Status init = s.init(g, o);
  if (!init.is_ok()) return ::testing::AssertionFailure() << init.message();
  *summary = s.summary();
  return close(*got, *want, 1e-4);
}

template <typename T>
::testing::AssertionResult run_with_option(const GraphCase& g, OptionKey<T> key, T value,
                                           uint32_t seed, DelegateSummary* summary) {
  LoadBackendOptionsMap load;
  ::testing::AssertionResult set = set_load_option(&load, key, value);
  if (!set) return set;
  return run_with_load(g, &load, seed, summary);
}

/// The first Conv step of `sum`, or steps.end(). Its output is channels-last where oneDNN's
/// brgconv kernels took it (the step names the implementation).
std::vector<std::string>::const_iterator first_conv_step(const DelegateSummary& sum) {
  return std::find_if(sum.steps.begin(), sum.steps.end(),
                      [](const std::string& st) { return st.rfind("conv:", 0) == 0; });
}

/// Whether a step of `sum` names implementation `impl` (a kernel of Tessera's: "tessera:...").
bool has_step_of(const DelegateSummary& sum, const char* impl) {
  return std::any_of(sum.steps.begin(), sum.steps.end(),
                     [impl](const std::string& st) { return st.find(impl) != std::string::npos; });
}

/// `g` with conv_algorithm=`algorithm` on a team of `threads`, `repeat` executes (see
/// run_with_load).
::testing::AssertionResult run_with_algorithm(const GraphCase& g, const char* algorithm,
                                              DelegateSummary* summary, int64_t threads = 1,
                                              int repeat = 1) {
  BackendOptions<2> opts;
  LoadBackendOptionsMap load;
  if (!opts.set(kConvAlgorithm, EnumValue{algorithm}).is_ok() ||
      !opts.set(kNumThreads, threads).is_ok() ||
      !load.set_options(kBackendName, opts.view()).is_ok()) {
    return ::testing::AssertionFailure() << "cannot set the options";
  }
  return run_with_load(g, &load, 11, summary, repeat)
         << "=" << algorithm << ", " << threads << " thread(s)";
}

/// Where oneDNN has no Winograd kernels (its effective ISA below AVX-512: the CPU's, or capped by
/// max_cpu_isa), conv_algorithm=winograd asked for is an init error that says so: checks that `g`
/// gets it.
void expect_winograd_refused(const GraphCase& g) {
  DelegateSummary sum;
  const ::testing::AssertionResult run = run_with_algorithm(g, "winograd", &sum);
  EXPECT_FALSE(run);
  EXPECT_NE(std::string(run.message()).find("conv_algorithm=winograd needs oneDNN's float32"),
            std::string::npos)
      << run.message();
}

/// A graph input of 16 channels (into `*input`) and a 1x1 Conv with ReLU to `channels` after
/// it, whose output is channels-last where oneDNN's brgconv kernels write it; returns that
/// output.
int expanded_input(GraphCase& g, int64_t batch, int64_t hw, int64_t channels, int* input) {
  *input = g.input({batch, 16, hw, hw});
  ConvCfg expand{batch, 16, hw, hw, channels, 1, 1};
  expand.act = fb::Activation::Relu;
  return add_conv(g, *input, expand);
}

/// `g` (made with expanded_input) at 1 and 2 threads, each run matching the portable kernels
/// (conv_algorithm=auto); `check(summary, its first Conv step)` for each run whose first Conv
/// wrote a channels-last output (a brgconv kernel). Returns how many runs were checked.
template <typename Check>
int check_channels_last_runs(const GraphCase& g, size_t case_index, Check check) {
  int checked = 0;
  for (int64_t threads : {1, 2}) {
    DelegateSummary sum;
    EXPECT_TRUE(run_with_algorithm(g, "auto", &sum, threads)) << "case " << case_index;
    const auto first = first_conv_step(sum);
    if (first == sum.steps.end() || first->find("brgconv") == std::string::npos) continue;
    ++checked;
    check(sum, first);
  }
  return checked;
}

TEST(OnednnConvAlgorithm, WinogradAndDirectMatchPortable) {
  // 3x3, stride 1, no groups or dilation: what Winograd applies to, with odd spatial sizes,
  // batches, channel counts off the 16-wide blocks, no or asymmetric padding and fused
  // activations. oneDNN 2.6's Winograd kernels have limits of their own (here: they take neither
  // case 3 nor case 5); those convolutions stay direct, and every case matches either way.
  struct Case {
    ConvCfg cfg;
    bool kernel;  // oneDNN has a Winograd kernel for it: conv_algorithm=winograd uses it
    bool chosen;  // conv_algorithm=auto uses it too (>= 16 in, >= 32 out channels, >= 14x14 out)
    bool chosen_at_2 = chosen;  // with 2 threads (below 20x20 out: >= 256 in channels)
  };
  std::vector<Case> cases = {
      {{1, 16, 12, 12, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true, fb::Activation::Relu},
       true,
       false},
      {{2, 32, 13, 11, 48, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, true, false},
      {{1, 64, 7, 7, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, false}, true, false},
      {{1, 32, 9, 17, 16, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, true, fb::Activation::Clip},
       false,
       false},
      {{1, 32, 28, 28, 48, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, true, true},
      {{2, 5, 13, 11, 7, 3, 3, 1, 1, 1, 1, 1, 0, 0, 2}, false, false},
      {{1, 3, 9, 17, 33, 3, 3}, true, false},
      {{2, 16, 14, 15, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true, fb::Activation::Relu},
       true,
       true,
       false},
      {{1, 256, 14, 14, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, true, true, true},
  };
  const bool kernels = winograd_kernels_available();
  for (size_t i = 0; i < cases.size(); ++i) {
    const GraphCase g = conv_case(cases[i].cfg, static_cast<uint32_t>(50 + i));
    DelegateSummary direct, automatic, winograd;
    EXPECT_TRUE(run_with_algorithm(g, "direct", &direct)) << "case " << i;
    EXPECT_EQ(direct.winograd_convs, 0u) << "case " << i;
    EXPECT_TRUE(run_with_algorithm(g, "auto", &automatic)) << "case " << i;
    EXPECT_EQ(automatic.winograd_convs, kernels && cases[i].kernel && cases[i].chosen ? 1u : 0u)
        << "case " << i;
    EXPECT_TRUE(run_with_algorithm(g, "auto", &automatic, 2)) << "case " << i;
    EXPECT_EQ(automatic.winograd_convs,
              kernels && cases[i].kernel && cases[i].chosen_at_2 ? 1u : 0u)
        << "case " << i;
    if (!kernels) continue;
    EXPECT_TRUE(run_with_algorithm(g, "winograd", &winograd)) << "case " << i;
    EXPECT_EQ(winograd.winograd_convs, cases[i].kernel ? 1u : 0u) << "case " << i;
    bool wino_impl = false;
    for (const std::string& step : winograd.steps)
      wino_impl |= step.find("wino") != std::string::npos;
    EXPECT_EQ(wino_impl, cases[i].kernel) << "case " << i;
  }
}

TEST(OnednnConvAlgorithm, PowerSaverPolicyKeepsAutoDirectAndSaysWhy) {
  // A convolution auto would compute with Winograd (where oneDNN has the kernels): under the
  // power_saver policy it stays direct, as the weight transform is expensive at load.
  const GraphCase g = conv_case({1, 32, 28, 28, 48, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, 77);
  PolicyDecision saver;
  saver.effective = Policy::PowerSaver;
  saver.threads = 1;
  saver.yield_workers = true;
  saver.expensive_load_transforms = false;
  std::snprintf(saver.reason, sizeof saver.reason, "auto: on battery at 15%% (below 30%%)");
  std::snprintf(saver.threads_reason, sizeof saver.threads_reason, "1 thread of 4");
  RunOptions o;
  o.policy = &saver;
  Session s;
  ASSERT_TRUE(s.init(g, o).is_ok());
  EXPECT_EQ(s.summary().winograd_convs, 0u);
  EXPECT_EQ(s.summary().threads, 1);
  ASSERT_NE(s.derived().find("conv_algorithm"), nullptr);
  EXPECT_STREQ(s.derived().find("conv_algorithm")->value, "direct");
  EXPECT_STREQ(s.derived().find("conv_algorithm")->reason,
               "auto: policy power_saver avoids Winograd's load-time weight transform");
  ASSERT_NE(s.derived().find("num_threads"), nullptr);
  EXPECT_STREQ(s.derived().find("num_threads")->value, "1");
  std::vector<Floats> in = random_inputs(g, 5), out;
  ASSERT_TRUE(s.run(in, &out).is_ok());
  auto want = run_portable(g, in);
  ASSERT_TRUE(want.ok());
  EXPECT_TRUE(close(out, *want));

  // Under latency, auto keeps its shape rule and reports how many convolutions it took.
  PolicyDecision latency;
  latency.threads = 2;
  RunOptions lo;
  lo.policy = &latency;
  Session l;
  ASSERT_TRUE(l.init(g, lo).is_ok());
  EXPECT_EQ(l.summary().winograd_convs, winograd_kernels_available() ? 1u : 0u);
  EXPECT_EQ(l.summary().threads, 2);
  ASSERT_NE(l.derived().find("conv_algorithm"), nullptr);
  EXPECT_STREQ(l.derived().find("conv_algorithm")->value,
               winograd_kernels_available() ? "winograd+direct" : "direct");
}

TEST(OnednnConvAlgorithm, OtherConvolutionsStayDirect) {
  // Stride 2, dilation, groups, 1x1 and 5x5: never Winograd, even when asked for.
  std::vector<ConvCfg> cases = {{1, 8, 13, 13, 8, 3, 3},
                                {1, 8, 15, 15, 8, 3, 3},
                                {1, 8, 10, 10, 8, 3, 3},
                                {1, 8, 10, 10, 8, 1, 1},
                                {1, 8, 10, 10, 8, 5, 5}};
  cases[0].sh = cases[0].sw = 2;
  cases[1].dh = cases[1].dw = 2;
  cases[2].group = 2;
  for (size_t i = 0; i < cases.size(); ++i) {
    const GraphCase g = conv_case(cases[i], static_cast<uint32_t>(60 + i));
    if (!winograd_kernels_available()) {
      expect_winograd_refused(g);
      continue;
    }
    DelegateSummary sum;
    EXPECT_TRUE(run_with_algorithm(g, "winograd", &sum)) << "case " << i;
    EXPECT_EQ(sum.winograd_convs, 0u) << "case " << i;
  }
}

TEST(OnednnConvAlgorithm, ResidualSumWithWinograd) {
  // The sum post-op (in place and copied residual) on Winograd convolutions (16 channels: auto
  // would keep them direct).
  for (int variant = 0; variant < 2; ++variant) {
    GraphCase g =
        residual_case(true, variant == 1, true, false, static_cast<uint32_t>(70 + variant));
    if (!winograd_kernels_available()) {
      expect_winograd_refused(g);
      continue;
    }
    DelegateSummary sum;
    EXPECT_TRUE(run_with_algorithm(g, "winograd", &sum)) << variant;
    EXPECT_EQ(sum.fused_sums, 1u);
    EXPECT_EQ(sum.winograd_convs, 3u);
  }
}

TEST(OnednnConvAlgorithm, StepScratchpadsLiveInTheArena) {
  // Three Winograd convolutions in a row: each asks oneDNN for a user-mode scratchpad larger
  // than any activation (its transformed tiles). Each lives in the activation arena at its own
  // step only, so the arena holds the largest of them once, beside what is live at that step,
  // and repeated runs stay exact (a scratchpad overwrites bytes other steps' activations use).
  const GraphCase g = conv_chain(75, 32, 28, 3);
  const char* algorithm = winograd_kernels_available() ? "winograd" : "direct";
  DelegateSummary sum;
  EXPECT_TRUE(run_with_algorithm(g, algorithm, &sum));
  // On every machine: the arena holds the largest scratchpad and never more than the
  // activations one by one plus that scratchpad (the steps' scratchpads share bytes).
  EXPECT_GE(sum.arena_bytes, sum.scratchpad_bytes);
  EXPECT_LE(sum.arena_bytes, sum.activation_bytes + sum.scratchpad_bytes)
      << sum.arena_bytes << " for " << sum.activation_bytes << " + " << sum.scratchpad_bytes;
  if (winograd_kernels_available()) {
    EXPECT_EQ(sum.winograd_convs, 3u);
    EXPECT_GT(sum.scratchpad_bytes, size_t{32 * 28 * 28 * sizeof(float)});
  }
  // Three executes in one delegate: nothing a scratchpad leaves in the arena reaches a result.
  DelegateSummary again;
  EXPECT_TRUE(run_with_algorithm(g, algorithm, &again, 1, 3));
}

TEST(OnednnConvAlgorithm, WinogradTransformsScratchpadIsTesseras) {
  // oneDNN's Winograd weight transform (a reorder) books a scratchpad about the size of the
  // transformed weights. Run at init with a scratchpad Tessera allocates (reorder_at_init,
  // mapped for huge pages), not one oneDNN mallocs in 4 KiB pages: the summary reports the
  // largest, and the three transforms (one scratchpad reused) give exact results, run twice.
  const GraphCase g = conv_chain(76, 32, 28, 3);
  // On every machine: direct convolutions' weight reorders book none.
  DelegateSummary direct;
  EXPECT_TRUE(run_with_algorithm(g, "direct", &direct));
  EXPECT_EQ(direct.init_scratchpad_bytes, 0u);
  if (!winograd_kernels_available()) GTEST_SKIP() << "no Winograd kernels on this CPU";
  DelegateSummary sum;
  EXPECT_TRUE(run_with_algorithm(g, "winograd", &sum, 1, 2));
  EXPECT_EQ(sum.winograd_convs, 3u);
  // More than the plain weights of one 32x32 3x3 convolution (the transform's tiles).
  EXPECT_GT(sum.init_scratchpad_bytes, size_t{32 * 32 * 3 * 3 * sizeof(float)});
}

// ---- Concat without copies
// ------------------------------------------------------------------------------

// Two parts made from a row-major graph input by elementwise ops (which keep its layout on every
// machine, unlike a Conv, whose output layout oneDNN picks per ISA), concatenated along the
// channels, then read by a Conv. `batch`, and whether a part is read again after the Concat,
// decide whether the parts can be written in place in the output.
GraphCase plain_parts_case(int64_t batch, bool part_read_later, uint32_t seed) {
  GraphCase g;
  g.seed = seed;
  const int x = g.input({batch, 8, 9, 9});
  const int a = g.tensor({batch, 8, 9, 9});
  g.node(Op::Relu, {x}, a);
  const int b = g.tensor({batch, 8, 9, 9});
  g.node(Op::Sigmoid, {x}, b);
  const int c = g.tensor({batch, 16, 9, 9});
  g.node(Op::Concat, {a, b}, c).attrs.push_back(ir::Attr::make_int("axis", 1));
  ConvCfg next{batch, 16, 9, 9, 8, 3, 3};
  next.pt = next.pl = next.pb = next.pr = 1;
  g.output(add_conv(g, c, next));
  if (part_read_later) {
    const int z = g.tensor({batch, 8, 9, 9});
    g.node(Op::Mul, {a, a}, z);
    g.output(z);
  }
  return g;
}

TEST(OnednnConcat, PartsWrittenInPlaceAtBatchOne) {
  GraphCase g = plain_parts_case(1, false, 40);
  EXPECT_TRUE(matches_portable(g));
  Session s;
  ASSERT_TRUE(s.init(g).is_ok());
  const DelegateSummary sum = summarize_delegate(s.handle());
  EXPECT_EQ(sum.copy_free_concats, 1u);
  for (const std::string& step : sum.steps) {
    EXPECT_EQ(step.find("concat:"), std::string::npos) << step;
  }
  // Repeated runs stay exact (the parts' buffers now live in the output's regions).
  std::vector<Floats> in = random_inputs(g, 3), first, again;
  ASSERT_TRUE(s.run(in, &first).is_ok());
  ASSERT_TRUE(s.run(in, &again).is_ok());
  EXPECT_EQ(first, again);
}

TEST(OnednnConcat, CopiesWhenAPartIsReadLaterOrTheBatchIsAboveOne) {
  // A part still read after the Concat keeps its own buffer; at batch 2 a part's channels are
  // not one contiguous region of the output. Both copy, correctly.
  const GraphCase cases[] = {plain_parts_case(1, true, 41), plain_parts_case(2, false, 42)};
  for (const GraphCase& g : cases) {
    EXPECT_TRUE(matches_portable(g));
    Session s;
    ASSERT_TRUE(s.init(g).is_ok());
    EXPECT_EQ(summarize_delegate(s.handle()).copy_free_concats, 0u);
  }
}

// A DenseNet block: every layer's 1x1 Conv reads the Concat of everything before it, and each
// Concat extends the previous one (the first has one part, as torchvision's does). At batch 1
// the parts go once into one buffer and every Concat is a view of its first channels; at batch 2
// the Concats copy. Correct and stable over repeated runs either way.
GraphCase dense_block(int64_t batch, uint32_t seed, int64_t growth = 8) {
  GraphCase g;
  g.seed = seed;
  const int in = g.input({batch, growth, 6, 6});
  const int x0 = g.tensor({batch, growth, 6, 6});
  g.node(Op::Relu, {in}, x0);
  std::vector<int> parts = {x0};
  int64_t channels = growth;
  int last = -1;
  for (int layer = 0; layer < 4; ++layer) {
    const int c = g.tensor({batch, channels, 6, 6});
    g.node(Op::Concat, parts, c).attrs.push_back(ir::Attr::make_int("axis", 1));
    last = c;
    if (layer == 3) break;
    ConvCfg conv{batch, channels, 6, 6, growth, 1, 1};
    conv.act = fb::Activation::Relu;
    parts.push_back(add_conv(g, c, conv));
    channels += growth;
  }
  ConvCfg head{batch, channels, 6, 6, 4, 3, 3};
  head.pt = head.pl = head.pb = head.pr = 1;
  g.output(add_conv(g, last, head));
  return g;
}

TEST(OnednnConcat, DenseBlockSharesOneBufferAtBatchOne) {
  for (int64_t batch : {1, 2}) {
    GraphCase g = dense_block(batch, 44);
    EXPECT_TRUE(matches_portable(g)) << batch;
    Session s;
    ASSERT_TRUE(s.init(g).is_ok());
    const DelegateSummary sum = summarize_delegate(s.handle());
    if (batch == 1) {
      EXPECT_EQ(sum.copy_free_concats, 4u);
      for (const std::string& step : sum.steps) {
        EXPECT_EQ(step.find("concat:"), std::string::npos) << step;
      }
    } else {
      EXPECT_EQ(sum.copy_free_concats, 0u);
    }
    std::vector<Floats> in = random_inputs(g, 6), first, again;
    ASSERT_TRUE(s.run(in, &first).is_ok());
    ASSERT_TRUE(s.run(in, &again).is_ok());
    EXPECT_EQ(first, again) << batch;
  }
}

// With 16 channels per part the chain is channel-blocked (aBcd16b), each Concat a view of its
// start, and each 1x1 Conv reads it in that layout (no reorder to channels-last first).
TEST(OnednnConcat, DenseBlockOfSixteenChannelPartsIsChannelBlocked) {
  GraphCase g = dense_block(1, 47, 16);
  EXPECT_TRUE(matches_portable(g));
  Session s;
  ASSERT_TRUE(s.init(g).is_ok());
  const DelegateSummary sum = summarize_delegate(s.handle());
  EXPECT_EQ(sum.copy_free_concats, 4u);
  EXPECT_EQ(sum.blocked_concat_chains, 1u);
  for (const std::string& step : sum.steps) {
    EXPECT_EQ(step.find("concat:"), std::string::npos) << step;
  }
  std::vector<Floats> in = random_inputs(g, 8), first, again;
  ASSERT_TRUE(s.run(in, &first).is_ok());
  ASSERT_TRUE(s.run(in, &again).is_ok());
  EXPECT_EQ(first, again);
  // Where oneDNN has a 1x1 kernel for that layout (its jit_1x1 kernels take aBcd16b with
  // AVX-512; with AVX2 they take aBcd8b and the input is reordered), the 1x1 Convs keep it.
  bool jit_1x1 = false;
  for (const std::string& step : sum.steps)
    jit_1x1 = jit_1x1 || step.find("jit_1x1") != std::string::npos;
  if (jit_1x1 && silu_isa_for_onednn() == SiluIsa::Avx512) {
    EXPECT_EQ(sum.blocked_1x1_convs, 3u);
  }
}

// A SqueezeNet fire module on [batch, cin, hw, hw]: a 1x1 squeeze Conv to 16 channels, 1x1
// and 3x3 expand Convs to 32 each, their Concat, and a Conv reading it (`next_kernel` square).
GraphCase fire_module(int64_t batch, int64_t cin, int64_t hw, int64_t next_out, int64_t next_kernel,
                      uint32_t seed) {
  GraphCase g;
  g.seed = seed;
  const int x = g.input({batch, cin, hw, hw});
  ConvCfg squeeze{batch, cin, hw, hw, 16, 1, 1};
  squeeze.act = fb::Activation::Relu;
  const int s = add_conv(g, x, squeeze);
  ConvCfg e1{batch, 16, hw, hw, 32, 1, 1};
  e1.act = fb::Activation::Relu;
  ConvCfg e3 = e1;
  e3.kh = e3.kw = 3;
  e3.pt = e3.pl = e3.pb = e3.pr = 1;
  const int a = add_conv(g, s, e1);
  const int b = add_conv(g, s, e3);
  const int c = g.tensor({batch, 64, hw, hw});
  g.node(Op::Concat, {a, b}, c).attrs.push_back(ir::Attr::make_int("axis", 1));
  ConvCfg next{batch, 64, hw, hw, next_out, next_kernel, next_kernel};
  next.pt = next.pl = next.pb = next.pr = next_kernel / 2;
  g.output(add_conv(g, c, next));
  return g;
}

// A SqueezeNet fire module (Convs into the Concat): in place or copied, depending on the layouts
// oneDNN chooses for this machine's ISA; correct either way, over repeated runs.
TEST(OnednnConcat, FireModuleStaysExact) {
  for (int64_t batch : {1, 2}) {
    GraphCase g = fire_module(batch, 8, 9, 8, 3, 43);
    EXPECT_TRUE(matches_portable(g)) << batch;
    Session session;
    ASSERT_TRUE(session.init(g).is_ok());
    std::vector<Floats> in = random_inputs(g, 5), first, again;
    ASSERT_TRUE(session.run(in, &first).is_ok());
    ASSERT_TRUE(session.run(in, &again).is_ok());
    EXPECT_EQ(first, again);
  }
}

// A fire module whose 3x3 expand Conv runs as Winograd (channel-blocked by 16) at batch 1: the
// 1x1 expand Conv beside it is asked for the same layout, so both write into their regions of
// the Concat's output and no concat step runs. Where oneDNN has no Winograd kernels, asking
// for them is an init error.
TEST(OnednnConcat, FireModulePartsShareTheWinogradLayout) {
  GraphCase g = fire_module(1, 16, 12, 16, 1, 45);
  if (!winograd_kernels_available()) {
    expect_winograd_refused(g);
    return;
  }
  DelegateSummary sum;
  EXPECT_TRUE(run_with_algorithm(g, "winograd", &sum));
  EXPECT_EQ(sum.winograd_convs, 1u);
  EXPECT_EQ(sum.concat_layout_convs, 1u);
  EXPECT_EQ(sum.copy_free_concats, 1u);
  for (const std::string& step : sum.steps) {
    EXPECT_EQ(step.find("concat:"), std::string::npos) << step;
  }
  // Direct 3x3 (no Winograd part): the 1x1 Conv keeps the layout oneDNN prefers.
  DelegateSummary direct;
  EXPECT_TRUE(run_with_algorithm(g, "direct", &direct));
  EXPECT_EQ(direct.concat_layout_convs, 0u);
}

// A RegNet block: 1x1 Conv, grouped 3x3 Conv (8 channels per group), 1x1 Conv. Where the first
// Conv's output is channels-last (oneDNN's brgconv kernels, on AVX-512 machines), the grouped
// Conv stays channels-last: no reorder step runs between the three. Elsewhere oneDNN chooses.
// Correct either way, at batch 1 and 2.
TEST(OnednnConv, GroupedConvKeepsItsChannelsLastInput) {
  for (int64_t batch : {1, 2}) {
    GraphCase g;
    g.seed = 46;
    const int x = g.input({batch, 32, 14, 14});
    ConvCfg a{batch, 32, 14, 14, 64, 1, 1};
    a.act = fb::Activation::Relu;
    const int y = add_conv(g, x, a);
    ConvCfg grouped{batch, 64, 14, 14, 64, 3, 3};
    grouped.pt = grouped.pl = grouped.pb = grouped.pr = 1;
    grouped.group = 8;
    grouped.act = fb::Activation::Relu;
    const int z = add_conv(g, y, grouped);
    ConvCfg c{batch, 64, 14, 14, 32, 1, 1};
    g.output(add_conv(g, z, c));
    EXPECT_TRUE(matches_portable(g)) << batch;
    Session s;
    ASSERT_TRUE(s.init(g).is_ok());
    const DelegateSummary sum = summarize_delegate(s.handle());
    const bool channels_last = sum.steps.size() > 1 && sum.steps[1].find("conv:") == 0 &&
                               sum.steps[1].find("brgconv") != std::string::npos;
    if (!channels_last) continue;
    EXPECT_EQ(sum.channels_last_grouped_convs, 1u) << batch;
    int convs_seen = 0;
    for (const std::string& step : sum.steps) {
      if (step.find("conv:") == 0) ++convs_seen;
      if (convs_seen >= 1 && convs_seen < 3) {
        EXPECT_EQ(step.find("reorder:"), std::string::npos) << step;
      }
    }
  }
}

// Grouped 3x3 Convs with 4, 8 and 16 channels per group, after a 1x1 Conv that makes their
// input channels-last: on AVX-512 (SiluIsa::Avx512, which honours max_cpu_isa) Tessera's kernel
// computes them (grouped_conv.h), elsewhere oneDNN. Every case matches the portable kernels at 1
// and 2 threads: strides 1 and 2, widths that leave a partial block of output pixels (13, 9),
// odd sizes, no padding after, with and without bias and ReLU, batch 1 and 3.
TEST(OnednnConv, SmallGroupsTakeTesserasGroupedKernel) {
  struct Case {
    int64_t batch, channels, group, hw, stride, pad_after;
    bool bias;
    fb::Activation act;
  };
  const Case cases[] = {
      {1, 128, 32, 14, 1, 1, true, fb::Activation::Relu},  // 4 a group (ResNeXt-50's layer1)
      {1, 64, 8, 13, 1, 1, false, fb::Activation::None},   // 8 a group, 13 columns
      {3, 32, 2, 9, 1, 1, true, fb::Activation::Relu},     // 16 a group, batch 3
      {1, 64, 16, 13, 2, 1, true, fb::Activation::Relu},   // 4 a group, stride 2, odd size
      {1, 48, 6, 14, 2, 0, true, fb::Activation::None},    // 8 a group, no padding after
      {2, 64, 4, 10, 2, 1, false, fb::Activation::Relu},   // 16 a group, stride 2
  };
  const bool kernel = silu_isa_for_onednn() == SiluIsa::Avx512;
  int checked = 0;  // runs whose grouped Conv read a channels-last input
  for (size_t i = 0; i < std::size(cases); ++i) {
    const Case& k = cases[i];
    GraphCase g;
    g.seed = static_cast<uint32_t>(60 + i);
    int x = -1;
    const int y = expanded_input(g, k.batch, k.hw, k.channels, &x);
    ConvCfg grouped{k.batch, k.channels, k.hw, k.hw, k.channels, 3, 3};
    grouped.sh = grouped.sw = k.stride;
    grouped.pt = grouped.pl = 1;
    grouped.pb = grouped.pr = k.pad_after;
    grouped.group = k.group;
    grouped.bias = k.bias;
    grouped.act = k.act;
    g.output(add_conv(g, y, grouped));
    checked += check_channels_last_runs(g, i, [&](const DelegateSummary& sum, auto first) {
      EXPECT_EQ(sum.host_grouped_convs, kernel ? 1u : 0u) << "case " << i;
      EXPECT_EQ(sum.channels_last_grouped_convs, 1u) << "case " << i;
      ASSERT_NE(first + 1, sum.steps.end()) << "case " << i;
      EXPECT_EQ(first[1].rfind("conv:", 0), 0u) << first[1];  // no reorder between them
      if (kernel) {
        EXPECT_NE(first[1].find("tessera:grouped_avx512"), std::string::npos) << first[1];
      }
    });
  }
  RecordProperty("channels_last_runs", checked);
}

// A grouped Conv the kernel does not take stays oneDNN's: 32 channels a group, a residual Add
// fused as a sum post-op, dilation, 5x5.
TEST(OnednnConv, OtherGroupedConvsStayOnednns) {
  struct Case {
    int64_t channels, group, kernel, dilation;
    bool residual;
  };
  const Case cases[] = {
      {64, 2, 3, 1, false}, {64, 8, 3, 1, true}, {64, 8, 3, 2, false}, {64, 8, 5, 1, false}};
  for (size_t i = 0; i < std::size(cases); ++i) {
    const Case& k = cases[i];
    GraphCase g;
    g.seed = static_cast<uint32_t>(70 + i);
    const int x = g.input({1, 16, 12, 12});
    ConvCfg expand{1, 16, 12, 12, k.channels, 1, 1};
    const int y = add_conv(g, x, expand);
    ConvCfg grouped{1, k.channels, 12, 12, k.channels, k.kernel, k.kernel};
    grouped.pt = grouped.pl = grouped.pb = grouped.pr = (k.kernel / 2) * k.dilation;
    grouped.dh = grouped.dw = k.dilation;
    grouped.group = k.group;
    int z = add_conv(g, y, grouped);
    if (k.residual) {
      const int sum = g.tensor({1, k.channels, 12, 12});
      g.node(fb::OpType::Add, {z, y}, sum);
      z = sum;
    }
    g.output(z);
    DelegateSummary sum;
    EXPECT_TRUE(run_with_algorithm(g, "auto", &sum)) << "case " << i;
    EXPECT_EQ(sum.host_grouped_convs, 0u) << "case " << i;
  }
}

// 1x1 Convs to 24 and 40 channels reading a channels-last tensor: on AVX-512 Tessera's kernel
// computes them (narrow_conv.h), elsewhere oneDNN. Every case matches the portable kernels at 1
// and 2 threads: pixel counts that leave a partial block (13x13, 9x9 x 3), batches, with and
// without bias and ReLU, and a residual Add fused in place (its other operand read by the Add
// alone), into a new buffer (the other operand also an output of the graph), and from the Conv's
// own input (y + conv(y)).
TEST(OnednnConv, NarrowOutputsTakeTesserasKernel) {
  enum class Residual { None, InPlace, Kept, OwnInput };
  struct Case {
    int64_t batch, in, out, hw;
    Residual residual;
    bool bias;
    fb::Activation act;  // the Conv's, or with a residual the Add's
  };
  const Case cases[] = {
      {1, 144, 24, 14, Residual::None, true, fb::Activation::None},     // MobileNetV2's
      {1, 96, 24, 13, Residual::InPlace, true, fb::Activation::None},   // a partial block
      {3, 72, 40, 9, Residual::Kept, false, fb::Activation::Relu},      // batch 3, 40 wide
      {1, 24, 24, 10, Residual::OwnInput, true, fb::Activation::None},  // y + conv(y)
      {2, 240, 40, 7, Residual::None, true, fb::Activation::Relu},      // EfficientNet-B0's
      {1, 32, 40, 11, Residual::InPlace, false, fb::Activation::None},
  };
  const bool kernel = silu_isa_for_onednn() == SiluIsa::Avx512;
  int checked = 0;  // runs whose narrow Conv read a channels-last input
  for (size_t i = 0; i < std::size(cases); ++i) {
    const Case& k = cases[i];
    GraphCase g;
    g.seed = static_cast<uint32_t>(80 + i);
    int x = -1;
    const int y = expanded_input(g, k.batch, k.hw, k.in, &x);
    int other = y;  // the residual; OwnInput: in == out
    if (k.residual == Residual::InPlace || k.residual == Residual::Kept) {
      ConvCfg side{k.batch, 16, k.hw, k.hw, k.out, 1, 1};
      other = add_conv(g, x, side);
      if (k.residual == Residual::Kept) g.output(other);
    }
    ConvCfg narrow{k.batch, k.in, k.hw, k.hw, k.out, 1, 1};
    narrow.bias = k.bias;
    if (k.residual == Residual::None) narrow.act = k.act;
    int z = add_conv(g, y, narrow);
    if (k.residual != Residual::None) {
      const int sum = g.tensor({k.batch, k.out, k.hw, k.hw});
      g.node(fb::OpType::Add, {z, other}, sum).activation = k.act;
      z = sum;
    }
    // Read by another 1x1 Conv, as a projection is by the next block's expansion.
    ConvCfg next{k.batch, k.out, k.hw, k.hw, 32, 1, 1};
    g.output(add_conv(g, z, next));
    checked += check_channels_last_runs(g, i, [&](const DelegateSummary& sum, auto) {
      EXPECT_EQ(sum.host_narrow_convs, kernel ? 1u : 0u) << "case " << i;
      if (k.residual != Residual::None) {
        EXPECT_EQ(sum.fused_sums, 1u) << "case " << i;
      }
      if (k.residual == Residual::InPlace) {
        EXPECT_EQ(sum.in_place_sums, 1u) << "case " << i;
      }
      if (k.residual == Residual::Kept || k.residual == Residual::OwnInput) {
        EXPECT_EQ(sum.in_place_sums, 0u) << "case " << i;
      }
      EXPECT_EQ(has_step_of(sum, "tessera:narrow1x1_avx512"), kernel) << "case " << i;
    });
  }
  RecordProperty("channels_last_runs", checked);
}

// A 1x1 Conv the kernel does not take stays oneDNN's: 32 or 16 output channels, an odd number
// of input channels, stride 2, a SiLU after it, a graph output.
TEST(OnednnConv, OtherNarrowConvsStayOnednns) {
  struct Case {
    int64_t in, out, stride;
    bool silu, graph_output;
  };
  const Case cases[] = {{96, 32, 1, false, false}, {96, 16, 1, false, false},
                        {95, 24, 1, false, false}, {96, 24, 2, false, false},
                        {96, 24, 1, true, false},  {96, 40, 1, false, true}};
  for (size_t i = 0; i < std::size(cases); ++i) {
    const Case& k = cases[i];
    GraphCase g;
    g.seed = static_cast<uint32_t>(90 + i);
    const int x = g.input({1, 16, 12, 12});
    ConvCfg expand{1, 16, 12, 12, k.in, 1, 1};
    const int y = add_conv(g, x, expand);
    ConvCfg narrow{1, k.in, 12, 12, k.out, 1, 1};
    narrow.sh = narrow.sw = k.stride;
    int z = add_conv(g, y, narrow);
    const int64_t hw = k.stride == 1 ? 12 : 6;
    if (k.silu) {
      const int sig = g.tensor({1, k.out, hw, hw});
      g.node(fb::OpType::Sigmoid, {z}, sig);
      const int mul = g.tensor({1, k.out, hw, hw});
      g.node(fb::OpType::Mul, {z, sig}, mul);
      z = mul;
    }
    if (!k.graph_output) {
      ConvCfg next{1, k.out, hw, hw, 32, 1, 1};
      z = add_conv(g, z, next);
    }
    g.output(z);
    DelegateSummary sum;
    EXPECT_TRUE(run_with_algorithm(g, "auto", &sum)) << "case " << i;
    EXPECT_EQ(sum.host_narrow_convs, 0u) << "case " << i;
  }
}

// y + conv(y): the residual is the Conv's own input, so the sum cannot be written over it in
// place (the kernel would overwrite pixels it has yet to read). 3x3 and 1x1, grouped and not.
TEST(OnednnConv, AResidualThatIsTheConvsOwnInputIsNotOverwritten) {
  for (const int64_t k : {3, 1}) {
    for (const int64_t group : {1, 4}) {
      GraphCase g;
      g.seed = static_cast<uint32_t>(80 + k + group);
      const int x = g.input({1, 16, 12, 12});
      ConvCfg expand{1, 16, 12, 12, 32, 1, 1};
      const int y = add_conv(g, x, expand);
      ConvCfg c{1, 32, 12, 12, 32, k, k};
      c.pt = c.pl = c.pb = c.pr = k / 2;
      c.group = group;
      const int z = add_conv(g, y, c);
      const int sum = g.tensor({1, 32, 12, 12});
      g.node(fb::OpType::Add, {z, y}, sum);
      g.output(sum);
      DelegateSummary s;
      EXPECT_TRUE(run_with_algorithm(g, "auto", &s)) << k << "x" << k << ", group " << group;
      EXPECT_EQ(s.fused_sums, 1u);
      EXPECT_EQ(s.in_place_sums, 0u);
    }
  }
}

// ---- a 1x1 Conv and the depthwise Conv after it as one primitive
// ----------------------------------------------------------------------------------------------

/// A 3x3 Conv from a new [batch, 8, hw, hw] input of `g` to `channels`: a channels-last tensor
/// to start from, as a Conv inside a model gives (a graph input is row-major).
int channels_last_input(GraphCase& g, int64_t batch, int64_t channels, int64_t hw) {
  ConvCfg stem{batch, 8, hw, hw, channels, 3, 3};
  stem.pt = stem.pl = stem.pb = stem.pr = 1;
  return add_conv(g, g.input({batch, 8, hw, hw}), stem);
}

/// A 3x3 depthwise Conv over [batch, channels, hw, hw], padding 1.
ConvCfg depthwise3x3(int64_t batch, int64_t channels, int64_t hw, int64_t stride) {
  ConvCfg dw{batch, channels, hw, hw, channels, 3, 3};
  dw.sh = dw.sw = stride;
  dw.pt = dw.pl = dw.pb = dw.pr = 1;
  dw.group = channels;
  return dw;
}

// A 3x3 depthwise Conv (stride 1, padding 1) whose output only a 1x1 Conv reads, on a
// channels-last input: on AVX-512 one step of Tessera's (dw_pointwise.h), elsewhere oneDNN's two.
// Every case matches the portable kernels at 1 and 2 threads: widths with whole interior blocks,
// blocks at both edges and single pixels (20, 9, 17, 8, 3), batches, with and without bias, ReLU,
// ReLU6 and other clamps on either Conv.
TEST(OnednnConv, DepthwiseThenPointwiseTakesTesserasKernel) {
  struct Case {
    int64_t batch, channels, out, hw;
    fb::Activation dw_act, pw_act;
    float pw_min, pw_max;  // the 1x1 Conv's clamp, with Clip
    bool bias;
  };
  const Case cases[] = {
      {1, 32, 16, 20, fb::Activation::Clip, fb::Activation::None, 0, 0, true},  // MobileNetV2's
      {2, 16, 32, 9, fb::Activation::Relu, fb::Activation::Relu, 0, 0, false},
      {1, 64, 16, 17, fb::Activation::None, fb::Activation::Clip, -0.5f, 0.5f, true},
      {3, 48, 32, 8, fb::Activation::Clip, fb::Activation::None, 0, 0, true},
      {1, 32, 16, 3, fb::Activation::Relu, fb::Activation::None, 0, 0, true},
  };
  const bool kernel = silu_isa_for_onednn() == SiluIsa::Avx512;
  int checked = 0;  // runs whose depthwise Conv read a channels-last input
  for (size_t i = 0; i < std::size(cases); ++i) {
    const Case& k = cases[i];
    GraphCase g;
    g.seed = static_cast<uint32_t>(110 + i);
    int x = -1;
    const int y = expanded_input(g, k.batch, k.hw, k.channels, &x);
    ConvCfg dw = depthwise3x3(k.batch, k.channels, k.hw, 1);
    dw.act = k.dw_act;
    dw.bias = k.bias;
    const int z = add_conv(g, y, dw);
    ConvCfg pw{k.batch, k.channels, k.hw, k.hw, k.out, 1, 1};
    pw.act = k.pw_act;
    pw.act_min = k.pw_min;
    pw.act_max = k.pw_max;
    pw.bias = k.bias;
    const int p = add_conv(g, z, pw);
    // Read by another 1x1 Conv, as MobileNetV2's projection is by the next block's expansion.
    ConvCfg next{k.batch, k.out, k.hw, k.hw, 24, 1, 1};
    g.output(add_conv(g, p, next));
    checked += check_channels_last_runs(g, i, [&](const DelegateSummary& sum, auto) {
      EXPECT_EQ(sum.host_dw_pointwise_convs, kernel ? 1u : 0u) << "case " << i;
      EXPECT_EQ(has_step_of(sum, "tessera:dw3x3_1x1_avx512"), kernel) << "case " << i;
    });
  }
  RecordProperty("channels_last_runs", checked);
}

// Pairs the kernel does not take stay oneDNN's (and exact): a stride-2 depthwise Conv, 40
// channels, 24 out, the 1x1 output read by a residual Add, the depthwise output read twice, the
// 1x1 output a graph output, a SiLU after the 1x1 Conv.
TEST(OnednnConv, OtherDepthwisePointwisePairsStayOnednns) {
  enum class After { Conv, Add, TwoReaders, Output, Silu };
  struct Case {
    int64_t channels, out, stride;
    After after;
  };
  const Case cases[] = {{32, 16, 2, After::Conv},       {40, 16, 1, After::Conv},
                        {32, 24, 1, After::Conv},       {32, 32, 1, After::Add},
                        {32, 16, 1, After::TwoReaders}, {32, 16, 1, After::Output},
                        {32, 16, 1, After::Silu}};
  for (size_t i = 0; i < std::size(cases); ++i) {
    const Case& k = cases[i];
    GraphCase g;
    g.seed = static_cast<uint32_t>(120 + i);
    int x = -1;
    const int y = expanded_input(g, 1, 12, k.channels, &x);
    const int z = add_conv(g, y, depthwise3x3(1, k.channels, 12, k.stride));
    const int64_t hw = k.stride == 1 ? 12 : 6;
    ConvCfg pw{1, k.channels, hw, hw, k.out, 1, 1};
    int p = add_conv(g, z, pw);
    if (k.after == After::Add) {
      const int sum = g.tensor({1, k.out, hw, hw});
      g.node(fb::OpType::Add, {p, y}, sum);
      p = sum;
    } else if (k.after == After::TwoReaders) {
      ConvCfg side{1, k.channels, hw, hw, 8, 1, 1};
      g.output(add_conv(g, z, side));
    } else if (k.after == After::Silu) {
      const int sig = g.tensor({1, k.out, hw, hw});
      g.node(fb::OpType::Sigmoid, {p}, sig);
      const int mul = g.tensor({1, k.out, hw, hw});
      g.node(fb::OpType::Mul, {p, sig}, mul);
      p = mul;
    }
    if (k.after != After::Output) {
      ConvCfg next{1, k.out, hw, hw, 8, 1, 1};
      p = add_conv(g, p, next);
    }
    g.output(p);
    for (int64_t threads : {1, 2}) {
      DelegateSummary sum;
      EXPECT_TRUE(run_with_algorithm(g, "auto", &sum, threads)) << "case " << i;
      EXPECT_EQ(sum.host_dw_pointwise_convs, 0u) << "case " << i;
    }
  }
}

// A first-layer Conv (3 input channels, the graph's row-major input) writing 16 channels reads
// its input as it is where oneDNN has a jit kernel for NCHW in and aBcd16b out (the same bytes
// as channels-last with 16 channels), with no reorder of the input first; the depthwise and 1x1
// Convs after it read its output as channels-last. 32 channels out (aBcd16b is then not
// channels-last) are not oneDNN's jit kernel's (on AVX-512 Tessera's, see the next test).
// Elsewhere the layouts are oneDNN's own choice (with AVX2 its jit kernel reads NCHW as well,
// and writes aBcd8b); all stay exact.
TEST(OnednnConv, AFirstLayerConvToSixteenChannelsReadsTheNchwInputAsItIs) {
  for (int64_t out : {16, 32}) {
    for (int64_t batch : {1, 2}) {
      GraphCase g;
      g.seed = 48;
      const int x = g.input({batch, 3, 24, 24});
      ConvCfg stem{batch, 3, 24, 24, out, 3, 3};
      stem.sh = stem.sw = 2;
      stem.pt = stem.pl = stem.pb = stem.pr = 1;
      stem.act = fb::Activation::Relu;
      const int y = add_conv(g, x, stem);
      ConvCfg dw = depthwise3x3(batch, out, 12, 1);
      dw.act = fb::Activation::Clip;
      const int d = add_conv(g, y, dw);
      g.output(add_conv(g, d, ConvCfg{batch, out, 12, 12, 8, 1, 1}));
      EXPECT_TRUE(matches_portable(g)) << out << " " << batch;
      Session s;
      ASSERT_TRUE(s.init(g).is_ok());
      const DelegateSummary sum = summarize_delegate(s.handle());
      ASSERT_FALSE(sum.steps.empty());
      if (out == 32) {
        EXPECT_EQ(sum.nchw_input_convs, 0u);
        continue;
      }
      if (sum.nchw_input_convs == 1) {
        EXPECT_EQ(sum.steps[0].find("conv:"), 0u) << sum.steps[0];  // no reorder before it
        EXPECT_NE(sum.steps[0].find("jit:"), std::string::npos) << sum.steps[0];
        // Nothing converts its output for the depthwise Conv either.
        ASSERT_GT(sum.steps.size(), 1u);
        EXPECT_EQ(sum.steps[1].find("conv:"), 0u) << sum.steps[1];
      } else {
        // The input reordered first, or read as it is by a kernel that chose NCHW itself; never
        // a reference kernel.
        const auto conv = first_conv_step(sum);
        ASSERT_NE(conv, sum.steps.end());
        EXPECT_EQ(conv->find(" ref"), std::string::npos) << *conv;
      }
      std::vector<Floats> in = random_inputs(g, 9), first, again;
      ASSERT_TRUE(s.run(in, &first).is_ok());
      ASSERT_TRUE(s.run(in, &again).is_ok());
      EXPECT_EQ(first, again);
    }
  }
}

// A first-layer 3x3 Conv of 1 to 4 input channels, read as the graph's NCHW input is, to 32, 48
// or 64 channels: on AVX-512 Tessera's kernel (stem_conv.h) with no reorder before it, elsewhere
// oneDNN's. Exact at 1 and 2 threads: strides 1 and 2, padding on every side, only before, or
// none, widths leaving partial pixel blocks, batches, with and without bias, ReLU, ReLU6, none and
// a SiLU after (computed after the kernel, as EfficientNet-B0's). A 16-channel one stays oneDNN's
// jit kernel's (the test before).
TEST(OnednnConv, AFirstLayerConvToThirtyTwoOrMoreChannelsTakesTesserasKernel) {
  struct Case {
    int64_t batch, in, h, w, out, stride, pad_before, pad_after;
    fb::Activation act;
    bool silu, bias;
  };
  const Case cases[] = {
      {1, 3, 24, 24, 32, 2, 1, 1, fb::Activation::Clip, false, true},  // MobileNetV2's
      {2, 3, 23, 19, 48, 2, 1, 1, fb::Activation::Relu, false, true},
      {1, 1, 17, 13, 64, 1, 1, 1, fb::Activation::None, false, false},
      {1, 4, 20, 20, 32, 2, 0, 1, fb::Activation::Relu, false, true},  // "same" padding, after
      {2, 3, 16, 18, 32, 1, 0, 0, fb::Activation::None, true, true},   // no padding
      {1, 3, 24, 24, 32, 2, 1, 1, fb::Activation::None, true, false},  // EfficientNet-B0's
  };
  const bool kernel = silu_isa_for_onednn() == SiluIsa::Avx512;
  for (size_t i = 0; i < std::size(cases); ++i) {
    const Case& k = cases[i];
    GraphCase g;
    g.seed = static_cast<uint32_t>(130 + i);
    const int x = g.input({k.batch, k.in, k.h, k.w});
    ConvCfg stem{k.batch, k.in, k.h, k.w, k.out, 3, 3};
    stem.sh = stem.sw = k.stride;
    stem.pt = stem.pl = k.pad_before;
    stem.pb = stem.pr = k.pad_after;
    stem.act = k.act;
    stem.bias = k.bias;
    int y = add_conv(g, x, stem);
    const std::vector<int64_t> dy = conv_out(stem);
    if (k.silu) {
      const int sig = g.tensor({dy[0], dy[1], dy[2], dy[3]});
      g.node(fb::OpType::Sigmoid, {y}, sig);
      const int mul = g.tensor({dy[0], dy[1], dy[2], dy[3]});
      g.node(fb::OpType::Mul, {y, sig}, mul);
      y = mul;
    }
    g.output(add_conv(g, y, ConvCfg{k.batch, k.out, dy[2], dy[3], 8, 1, 1}));
    for (int64_t threads : {1, 2}) {
      DelegateSummary sum;
      EXPECT_TRUE(run_with_algorithm(g, "auto", &sum, threads)) << "case " << i;
      EXPECT_EQ(sum.host_stem_convs, kernel ? 1u : 0u) << "case " << i;
      ASSERT_FALSE(sum.steps.empty()) << "case " << i;
      if (kernel) {
        // The first step, no reorder of the input before it.
        EXPECT_EQ(sum.steps[0].rfind("conv:", 0), 0u) << "case " << i << ": " << sum.steps[0];
        EXPECT_NE(sum.steps[0].find("tessera:stem3x3_avx512"), std::string::npos)
            << "case " << i << ": " << sum.steps[0];
      }
      if (k.silu) {
        EXPECT_EQ(sum.fused_silus, 1u) << "case " << i;
      }
    }
  }
}

/// An inverted-residual block's first half and its projection (MobileNetV2's second block), on
/// a channels-last input as in the model: 3x3 to 16 -> 1x1 to 96 (ReLU6) -> 3x3 depthwise,
/// stride `stride` (ReLU6) -> 1x1 to 24.
GraphCase expand_depthwise_project(int64_t batch, int64_t hw, int64_t stride) {
  GraphCase g;
  g.seed = 31;
  const int x = channels_last_input(g, batch, 16, hw);
  ConvCfg expand{batch, 16, hw, hw, 96, 1, 1};
  expand.act = fb::Activation::Clip;
  const int e = add_conv(g, x, expand);
  ConvCfg dw = depthwise3x3(batch, 96, hw, stride);
  dw.act = fb::Activation::Clip;
  const int d = add_conv(g, e, dw);
  const int64_t out = (hw - 1) / stride + 1;
  g.output(add_conv(g, d, ConvCfg{batch, 96, out, out, 24, 1, 1}));
  return g;
}

/// `g` on a team of `threads` (num_threads at load scope; see run_with_option).
::testing::AssertionResult run_on_threads(const GraphCase& g, int64_t threads,
                                          DelegateSummary* summary) {
  return run_with_option(g, kNumThreads, threads, 12, summary) << ", num_threads " << threads;
}

// Threads of this process (/proc/self/task), or -1 where that cannot be read.
int process_threads() {
  std::error_code ec;
  int n = 0;
  for (std::filesystem::directory_iterator it("/proc/self/task", ec), end; !ec && it != end;
       it.increment(ec)) {
    ++n;
  }
  return ec ? -1 : n;
}

// Two 1x1 convolutions at 28x28 (64 -> 128 -> 256 channels): big enough for a team of two.
GraphCase two_pointwise_convs(uint32_t seed) {
  GraphCase g;
  g.seed = seed;
  const int x = channels_last_input(g, 1, 64, 28);
  const int a = add_conv(g, x, ConvCfg{1, 64, 28, 28, 128, 1, 1});
  g.output(add_conv(g, a, ConvCfg{1, 128, 28, 28, 256, 1, 1}));
  return g;
}

// The load reorders weights on the calling thread alone: a parallel region at load would start
// OpenMP's workers, and every JIT kernel made executable and every page unmapped after that
// would interrupt their core too. The workers start at the first execute, and the results match.
// (Winograd's weight transform is the exception: it is compute, and two threads load ResNet-18
// faster. The convolutions here are not 3x3.)
TEST(OnednnThreads, ALoadOnTwoThreadsStartsNoThread) {
  const GraphCase g = two_pointwise_convs(41);
  LoadBackendOptionsMap load;
  ASSERT_TRUE(set_load_option(&load, kNumThreads, int64_t{2}));
  RunOptions o;
  o.load = &load;
  const int before = process_threads();
  ASSERT_GT(before, 0);
  Session s;
  const Status init = s.init(g, o);
  ASSERT_TRUE(init.is_ok()) << init.message();
  EXPECT_EQ(process_threads(), before);
  const std::vector<Floats> inputs = random_inputs(g, 5);
  std::vector<Floats> got;
  const Status run = s.run(inputs, &got);
  ASSERT_TRUE(run.is_ok()) << run.message();
  auto want = run_portable(g, inputs);
  ASSERT_TRUE(want.ok()) << want.status().message();
  EXPECT_TRUE(close(got, *want, 1e-4));
}

// park_idle_workers ends the idle OpenMP team a 2-thread run left (its workers busy-wait for the
// next parallel region, which would take a CPU from another backend's candidate measured next);
// the next run starts it again and computes the same.
TEST(OnednnThreads, ParkingEndsTheIdleTeamAndTheNextRunStartsItAgain) {
  const GraphCase g = two_pointwise_convs(43);
  LoadBackendOptionsMap load;
  ASSERT_TRUE(set_load_option(&load, kNumThreads, int64_t{2}));
  RunOptions o;
  o.load = &load;
  Result<BackendInterface*> backend = get_backend("onednn");
  ASSERT_TRUE(backend.ok());
  (*backend)->park_idle_workers();  // none left by earlier tests of this process
  Session s;
  const Status init = s.init(g, o);
  ASSERT_TRUE(init.is_ok()) << init.message();
  const std::vector<Floats> inputs = random_inputs(g, 7);
  auto want = run_portable(g, inputs);
  ASSERT_TRUE(want.ok()) << want.status().message();
  // Workers leave a little after the pause returns: wait for the count, up to 5 s.
  auto settles_at = [](int threads) {
    for (int i = 0; i < 500 && process_threads() != threads; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return process_threads();
  };
  // libgomp (Debian's oneDNN's runtime) ends the team's workers on a pause. A clang build links
  // LLVM's libomp too, which then answers oneDNN's OpenMP calls; its soft pause puts the workers
  // to sleep instead, so there the thread count says nothing and only the runs are checked.
  void* libomp = dlopen("libomp.so.5", RTLD_LAZY | RTLD_NOLOAD);
  const bool counts = libomp == nullptr;
  if (libomp != nullptr) dlclose(libomp);
  const int idle = process_threads();
  ASSERT_GT(idle, 0);
  for (int round = 0; round < 2; ++round) {
    std::vector<Floats> got;
    const Status run = s.run(inputs, &got);
    ASSERT_TRUE(run.is_ok()) << run.message();
    EXPECT_TRUE(close(got, *want, 1e-4)) << "round " << round;
    if (counts) {
      EXPECT_EQ(process_threads(), idle + 1) << "round " << round << ": the team's one worker";
    }
    (*backend)->park_idle_workers();
    if (counts) {
      EXPECT_EQ(settles_at(idle), idle) << "round " << round;
    }
  }
}

// On one thread the expansion and the depthwise Conv run as one primitive where oneDNN has an
// optimised kernel for the pair (jit_1x1 with its depthwise post-op, on AVX-512 at this size);
// elsewhere, and on two threads (where it measured no faster), they stay two. Either way the
// results match the portable kernels, at both strides and at batch 2.
TEST(OnednnDepthwiseFusion, ExpansionAndDepthwiseRunAsOnePrimitiveOnOneThread) {
  for (int64_t stride : {1, 2}) {
    for (int64_t batch : {1, 2}) {
      const GraphCase g = expand_depthwise_project(batch, 112, stride);
      DelegateSummary one;
      ASSERT_TRUE(run_on_threads(g, 1, &one)) << "stride " << stride << " batch " << batch;
      ASSERT_LE(one.fused_depthwise_convs, 1u);
      size_t convs = 0, fused_kernels = 0;
      for (const std::string& step : one.steps) {
        if (step.rfind("conv:", 0) == 0) ++convs;
        if (step.rfind("conv:", 0) == 0 && step.find("jit_1x1") != std::string::npos) {
          ++fused_kernels;
        }
      }
      if (one.fused_depthwise_convs == 1) {
        EXPECT_EQ(convs, 3u);  // the stem, the pair, the projection
        EXPECT_GE(fused_kernels, 1u);
        for (const std::string& step : one.steps) {
          EXPECT_EQ(step.find("ref"), std::string::npos) << step;
        }
      } else {
        EXPECT_EQ(convs, 4u);
      }
      DelegateSummary two;
      ASSERT_TRUE(run_on_threads(g, 2, &two)) << "stride " << stride << " batch " << batch;
      EXPECT_EQ(two.fused_depthwise_convs, 0u);
    }
  }
}

// A projection to 24 or 40 channels that Tessera's narrow kernel computes reads the fused
// expansion + depthwise primitive's channel-blocked output as it is, with no reorder back to
// channels-last between them: read by a 1x1 Conv alone, or by a 1x1 Conv and a residual Add
// (MobileNetV2's second block into its third). Exact at batches 1 and 2, strides 1 and 2.
TEST(OnednnDepthwiseFusion, ANarrowProjectionReadsTheChannelBlockedOutput) {
  const bool kernel = silu_isa_for_onednn() == SiluIsa::Avx512;
  int fused_runs = 0;
  for (int64_t out : {24, 40}) {
    for (int64_t stride : {1, 2}) {
      for (int64_t batch : {1, 2}) {
        GraphCase g;
        g.seed = static_cast<uint32_t>(out + stride + batch);
        const int x = channels_last_input(g, batch, 16, 56);
        ConvCfg expand{batch, 16, 56, 56, 96, 1, 1};
        expand.act = fb::Activation::Clip;
        ConvCfg dw = depthwise3x3(batch, 96, 56, stride);
        dw.act = fb::Activation::Clip;
        const int d = add_conv(g, add_conv(g, x, expand), dw);
        const int64_t hw = (56 - 1) / stride + 1;
        const int p = add_conv(g, d, ConvCfg{batch, 96, hw, hw, out, 1, 1});
        const int q = add_conv(g, p, ConvCfg{batch, out, hw, hw, out, 1, 1});
        if (out == 24) {
          g.output(q);
        } else {
          const int sum = g.tensor({batch, out, hw, hw});
          g.node(fb::OpType::Add, {p, q}, sum);
          g.output(sum);
        }
        const std::string what = "out " + std::to_string(out) + " stride " +
                                 std::to_string(stride) + " batch " + std::to_string(batch);
        DelegateSummary one;
        ASSERT_TRUE(run_on_threads(g, 1, &one)) << what;
        if (one.fused_depthwise_convs != 1) continue;
        ++fused_runs;
        // With 40, q (40 -> 40 and the residual sum) is the narrow kernel's too; with 24 it is
        // a graph output.
        EXPECT_EQ(one.host_narrow_convs, kernel ? (out == 40 ? 2u : 1u) : 0u) << what;
        const auto fused = std::find_if(one.steps.begin(), one.steps.end(), [](const auto& st) {
          return st.rfind("conv:", 0) == 0 && st.find("jit_1x1") != std::string::npos;
        });
        ASSERT_NE(fused, one.steps.end()) << what;
        ASSERT_NE(fused + 1, one.steps.end()) << what;
        if (kernel) {
          EXPECT_NE((fused + 1)->find("tessera:narrow1x1_avx512"), std::string::npos)
              << what << ": " << *(fused + 1);
        }
      }
    }
  }
  RecordProperty("fused_runs", fused_runs);
}

// Not fused: a depthwise Conv whose output a residual Add reads (its own lowering fuses that
// Add), and a 1x1 Conv whose input is channels-last with other than 16 channels.
TEST(OnednnDepthwiseFusion, OnlyTheShapesItHelpsAreFused) {
  GraphCase wide;  // 32 input channels, channels-last: a reorder would cost what fusion saves
  wide.seed = 33;
  {
    const int x = channels_last_input(wide, 1, 32, 112);
    const int e = add_conv(wide, x, ConvCfg{1, 32, 112, 112, 96, 1, 1});
    const int d = add_conv(wide, e, depthwise3x3(1, 96, 112, 1));
    wide.output(add_conv(wide, d, ConvCfg{1, 96, 112, 112, 16, 1, 1}));
  }
  DelegateSummary sum;
  ASSERT_TRUE(run_on_threads(wide, 1, &sum));
  EXPECT_EQ(sum.fused_depthwise_convs, 0u);

  GraphCase residual;  // the depthwise output feeds an Add
  residual.seed = 34;
  {
    const int x = channels_last_input(residual, 1, 16, 112);
    const int e = add_conv(residual, x, ConvCfg{1, 16, 112, 112, 16, 1, 1});
    const int d = add_conv(residual, e, depthwise3x3(1, 16, 112, 1));
    const int y = residual.tensor({1, 16, 112, 112});
    residual.node(Op::Add, {d, x}, y);
    residual.output(y);
  }
  ASSERT_TRUE(run_on_threads(residual, 1, &sum));
  EXPECT_EQ(sum.fused_depthwise_convs, 0u);
}

// ---- broadcast binary after a grouped Conv
// ------------------------------------------------------------------------------

// RegNet's squeeze-excitation: a grouped Conv (8 channels per group, for which oneDNN picks an
// 8-channel-blocked output on AVX-512 machines), a global pool, two 1x1 Convs, a Sigmoid, and the
// Conv's output times that [1, C, 1, 1] scale. oneDNN has only its reference kernel for that Mul
// in the Conv's layout; the backend views the scale in another layout or reorders the Conv's
// output to channels-last to get an optimised one. Correct whichever runs, at batch 1 and 2.
TEST(OnednnBinary, SqueezeExcitationScaleAfterGroupedConv) {
  for (int64_t batch : {1, 2}) {
    GraphCase g;
    g.seed = 50;
    const int x = g.input({batch, 48, 12, 12});
    ConvCfg grouped{batch, 48, 12, 12, 48, 3, 3};
    grouped.pt = grouped.pl = grouped.pb = grouped.pr = 1;
    grouped.group = 6;
    grouped.act = fb::Activation::Relu;
    const int c = add_conv(g, x, grouped);
    const int p = g.tensor({batch, 48, 1, 1});
    g.node(Op::GlobalAveragePool, {c}, p);
    ConvCfg fc1{batch, 48, 1, 1, 12, 1, 1};
    fc1.act = fb::Activation::Relu;
    const int h = add_conv(g, p, fc1);
    ConvCfg fc2{batch, 12, 1, 1, 48, 1, 1};
    const int z = add_conv(g, h, fc2);
    const int sc = g.tensor({batch, 48, 1, 1});
    g.node(Op::Sigmoid, {z}, sc);
    const int y = g.tensor({batch, 48, 12, 12});
    g.node(Op::Mul, {c, sc}, y);
    g.output(y);
    EXPECT_TRUE(matches_portable(g)) << batch;
  }
}

// ---- SiLU after a Conv as a swish post-op
// ------------------------------------------------------------------------------

// EfficientNet's activation as ONNX exports it: y = Conv(x); Mul(y, Sigmoid(y)). `variant`: 0
// plain (fused, either operand order), 1 the Conv output read once more (not fused), 2 the
// Sigmoid output read once more (not fused), 3 the Conv with a Relu of its own (not fused).
GraphCase silu_case(int variant, bool sigmoid_first, uint32_t seed) {
  GraphCase g;
  g.seed = seed;
  const int x = g.input({1, 8, 10, 10});
  ConvCfg c{1, 8, 10, 10, 16, 3, 3};
  c.pt = c.pl = c.pb = c.pr = 1;
  if (variant == 3) c.act = fb::Activation::Relu;
  const int y = add_conv(g, x, c);
  const int s = g.tensor({1, 16, 10, 10});
  g.node(Op::Sigmoid, {y}, s);
  const int m = g.tensor({1, 16, 10, 10});
  g.node(Op::Mul, sigmoid_first ? std::vector<int>{s, y} : std::vector<int>{y, s}, m).activation =
      fb::Activation::Relu;
  ConvCfg next{1, 16, 10, 10, 4, 1, 1};
  g.output(add_conv(g, m, next));
  if (variant == 1 || variant == 2) {
    const int z = g.tensor({1, 16, 10, 10});
    g.node(Op::Add, {variant == 1 ? y : s, m}, z);
    g.output(z);
  }
  return g;
}

TEST(OnednnSilu, FusedIntoTheConvAsSwish) {
  for (bool sigmoid_first : {false, true}) {
    GraphCase g = silu_case(0, sigmoid_first, 60);
    EXPECT_TRUE(matches_portable(g)) << sigmoid_first;
    Session s;
    ASSERT_TRUE(s.init(g).is_ok());
    const DelegateSummary sum = summarize_delegate(s.handle());
    EXPECT_EQ(sum.fused_silus, 1u);
    for (const std::string& step : sum.steps) {
      EXPECT_EQ(step.find("eltwise:"), std::string::npos) << step;
      EXPECT_EQ(step.find("binary:"), std::string::npos) << step;
    }
  }
}

// HardSwish as opsets before 14 export it: x * HardSigmoid(x) with alpha 1/6 and beta 0.5 is
// oneDNN's eltwise_hardswish; other constants are not, and stay two steps.
TEST(OnednnSilu, HardSwishWithPyTorchConstantsFuses) {
  for (float alpha : {1.0f / 6.0f, 0.2f}) {
    GraphCase g;
    g.seed = 62;
    const int x = g.input({1, 8, 10, 10});
    ConvCfg c{1, 8, 10, 10, 16, 3, 3};
    c.pt = c.pl = c.pb = c.pr = 1;
    const int y = add_conv(g, x, c);
    const int h = g.tensor({1, 16, 10, 10});
    ir::Node& hs = g.node(Op::HardSigmoid, {y}, h);
    hs.attrs.push_back(ir::Attr::make_float("alpha", alpha));
    hs.attrs.push_back(ir::Attr::make_float("beta", 0.5f));
    const int m = g.tensor({1, 16, 10, 10});
    g.node(Op::Mul, {y, h}, m);
    g.output(m);
    EXPECT_TRUE(matches_portable(g, -4.0f, 4.0f)) << alpha;
    Session s;
    ASSERT_TRUE(s.init(g).is_ok());
    EXPECT_EQ(summarize_delegate(s.handle()).fused_silus, alpha == 0.2f ? 0u : 1u) << alpha;
  }
}

// A lone activation-like node after a Conv (Sigmoid, HardSigmoid as two eltwise post-ops, and
// one with a fused Relu of its own) runs inside the Conv.
TEST(OnednnEltwise, ALoneActivationAfterAConvIsAPostOp) {
  GraphCase g;
  g.seed = 63;
  int v = g.input({1, 8, 10, 10});
  for (Op op : {Op::Sigmoid, Op::HardSigmoid, Op::Tanh}) {
    ConvCfg c{1, 8, 10, 10, 8, 3, 3};
    c.pt = c.pl = c.pb = c.pr = 1;
    const int y = add_conv(g, v, c);
    const int z = g.tensor({1, 8, 10, 10});
    ir::Node& e = g.node(op, {y}, z);
    if (op == Op::Tanh) e.activation = fb::Activation::Relu;
    v = z;
  }
  g.output(v);
  EXPECT_TRUE(matches_portable(g, -4.0f, 4.0f));
  Session s;
  ASSERT_TRUE(s.init(g).is_ok());
  const DelegateSummary sum = summarize_delegate(s.handle());
  EXPECT_EQ(sum.fused_eltwise, 3u);
  for (const std::string& step : sum.steps) {
    EXPECT_EQ(step.find("eltwise:"), std::string::npos) << step;
  }
}

/// A graph input -> Conv `c` -> y * Sigmoid(y) (SiLU as ONNX exports it); returns the Mul's
/// output.
int add_input_conv_silu(GraphCase& g, const ConvCfg& c) {
  const int y = add_conv(g, g.input({c.n, c.cin, c.h, c.w}), c);
  const std::vector<int64_t> d = conv_out(c);
  const int s = g.tensor({d[0], d[1], d[2], d[3]});
  g.node(Op::Sigmoid, {y}, s);
  const int m = g.tensor({d[0], d[1], d[2], d[3]});
  g.node(Op::Mul, {y, s}, m);
  return m;
}

// A float32 SiLU with nothing after it runs as Tessera's kernel right after the Conv (silu.h)
// where oneDNN's ISA includes AVX2, else as oneDNN's swish post-op; either way it matches the
// portable kernels: 20 channels (a padded aBcd8b output where oneDNN is capped at AVX2, see
// CMakeLists.txt; channels-last at AVX-512), the SiLU as the graph's output (an argument's
// memory), batch 2, and a tensor large enough to be split over two threads.
TEST(OnednnSilu, APlainSiluRunsAfterTheConvAndMatchesPortable) {
  struct Case {
    ConvCfg conv;
    bool graph_output;
  };
  ConvCfg padded{1, 8, 10, 10, 20, 3, 3};
  padded.pt = padded.pl = padded.pb = padded.pr = 1;
  ConvCfg batch2 = padded;
  batch2.n = 2;
  const ConvCfg expansion{1, 16, 56, 56, 96, 1, 1};  // 301056 elements
  const std::vector<Case> cases = {
      {padded, false}, {padded, true}, {batch2, true}, {expansion, false}};
  const SiluIsa isa = silu_isa_for_onednn();
  for (size_t i = 0; i < cases.size(); ++i) {
    const ConvCfg& c = cases[i].conv;
    GraphCase g;
    g.seed = 64 + static_cast<uint32_t>(i);
    const int m = add_input_conv_silu(g, c);
    const std::vector<int64_t> dims = conv_out(c);
    if (cases[i].graph_output) {
      g.output(m);
    } else {
      g.output(add_conv(g, m, ConvCfg{c.n, c.cout, dims[2], dims[3], 4, 1, 1}));
    }
    for (int64_t threads : {1, 2}) {
      DelegateSummary sum;
      ASSERT_TRUE(run_on_threads(g, threads, &sum)) << "case " << i;
      EXPECT_EQ(sum.fused_silus, 1u) << "case " << i;
      EXPECT_EQ(sum.host_silus, isa == SiluIsa::Scalar ? 0u : 1u) << "case " << i;
      EXPECT_EQ(sum.silu_isa, silu_isa_name(isa));
      for (const std::string& step : sum.steps) {
        EXPECT_EQ(step.find("eltwise:"), std::string::npos) << step;
        EXPECT_EQ(step.find("binary:"), std::string::npos) << step;
      }
    }
  }
}

// With profile=true Tessera's SiLU reports its own event after its Conv's.
TEST(OnednnSilu, AHostSiluIsProfiledAsItsOwnEvent) {
  GraphCase g;
  g.seed = 70;
  ConvCfg c{1, 8, 10, 10, 16, 3, 3};
  c.pt = c.pl = c.pb = c.pr = 1;
  g.output(add_input_conv_silu(g, c));
  Session session;
  ASSERT_TRUE(session.init(g).is_ok());
  ExecuteOptions exec;
  ASSERT_TRUE(exec.set("onednn", kProfile, true).is_ok());
  ProfileEvent storage[8];
  ProfileBuffer profile(storage);
  ASSERT_TRUE(session.run(random_inputs(g, 3), nullptr, &exec, &profile).is_ok());
  std::vector<std::string> names;
  for (const ProfileEvent& e : profile.events()) names.emplace_back(e.name);
  const bool host = summarize_delegate(session.handle()).host_silus == 1;
  size_t conv = names.size(), silus = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].rfind("conv:", 0) == 0) conv = i;
    if (names[i].rfind("silu:", 0) == 0) {
      ++silus;
      EXPECT_EQ(i, conv + 1) << names[i] << " does not follow its conv";
    }
  }
  EXPECT_LT(conv, names.size());
  EXPECT_EQ(silus, host ? 1u : 0u);
}

// With a Relu on the Mul (the SiLU is not the last thing), oneDNN's post-op keeps it.
TEST(OnednnSilu, ASiluFollowedByAnActivationStaysAPostOp) {
  GraphCase g = silu_case(0, false, 60);  // its Mul has a Relu
  Session s;
  ASSERT_TRUE(s.init(g).is_ok());
  const DelegateSummary sum = summarize_delegate(s.handle());
  EXPECT_EQ(sum.fused_silus, 1u);
  EXPECT_EQ(sum.host_silus, 0u);
}

TEST(OnednnSilu, NotFusedWhenAnOperandIsReadElsewhereOrTheConvHasAnActivation) {
  for (int variant : {1, 2, 3}) {
    GraphCase g = silu_case(variant, false, 61);
    EXPECT_TRUE(matches_portable(g)) << variant;
    Session s;
    ASSERT_TRUE(s.init(g).is_ok());
    EXPECT_EQ(summarize_delegate(s.handle()).fused_silus, 0u) << variant;
  }
}

}  // namespace
}  // namespace tessera::onednn::testing
