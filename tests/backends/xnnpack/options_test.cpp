// The backend's options take effect: thread pools per scope, runtime flags, execute-scoped
// profiling, and the framework's validation of the schema.
#include <gtest/gtest.h>

#include <xnnpack.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "harness.h"
#include "tessera/backend/device_info.h"
#include "tessera/backend/global_options.h"
#include "tessera/backend/options.h"
#include "tessera/backend/registry.h"
#include "tessera/backends/xnnpack/options.h"
#include "tests/backends/common/conv_cases.h"

namespace tessera::xnnpack::testing {
namespace {

using Op = fb::OpType;

GraphCase small_conv() {
  backend_testing::ConvCfg c{1, 8, 12, 12, 8, 3, 3};
  c.bias = false;
  return backend_testing::conv_case(c, 1);
}

class XnnpackOptions : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(reset_backend_options("xnnpack").is_ok()); }
  void TearDown() override { EXPECT_TRUE(reset_backend_options("xnnpack").is_ok()); }

  static Status set_global_threads(int64_t n) {
    BackendOptions<1> o;
    TESSERA_RETURN_IF_ERROR(o.set(kNumThreads, n));
    return set_option("xnnpack", o.view());
  }
};

TEST_F(XnnpackOptions, DefaultSharesOnePoolOfRecommendedSize) {
  const GraphCase c = small_conv();
  Session a, b;
  ASSERT_TRUE(a.init(c).is_ok());
  ASSERT_TRUE(b.init(c).is_ok());
  EXPECT_EQ(a.summary().threads, DeviceInfo::get().recommended_threads());
  EXPECT_EQ(a.summary().pool, b.summary().pool);
}

PolicyDecision decision(Policy effective, uint32_t threads, bool yield) {
  PolicyDecision d;
  d.requested = Policy::Auto;
  d.effective = effective;
  d.threads = threads;
  d.yield_workers = yield;
  d.expensive_load_transforms = effective != Policy::PowerSaver;
  std::snprintf(d.threads_reason, sizeof d.threads_reason, "%u from the test's policy", threads);
  return d;
}

TEST_F(XnnpackOptions, AutoValuesFollowThePolicyAndAreReported) {
  const GraphCase c = small_conv();
  const PolicyDecision saver = decision(Policy::PowerSaver, 1, true);
  RunOptions on_saver;
  on_saver.policy = &saver;
  Session a;
  ASSERT_TRUE(a.init(c, on_saver).is_ok());
  EXPECT_EQ(a.summary().threads, 1u);
  EXPECT_NE(a.summary().runtime_flags & XNN_FLAG_YIELD_WORKERS, 0u);
  ASSERT_NE(a.derived().find("num_threads"), nullptr);
  EXPECT_STREQ(a.derived().find("num_threads")->value, "1");
  EXPECT_STREQ(a.derived().find("num_threads")->reason, "auto: 1 from the test's policy");
  ASSERT_NE(a.derived().find("yield_workers"), nullptr);
  EXPECT_STREQ(a.derived().find("yield_workers")->value, "true");

  const PolicyDecision latency = decision(Policy::Latency, 3, false);
  RunOptions on_latency;
  on_latency.policy = &latency;
  Session b;
  ASSERT_TRUE(b.init(c, on_latency).is_ok());
  EXPECT_EQ(b.summary().threads, 3u);
  EXPECT_EQ(b.summary().runtime_flags & XNN_FLAG_YIELD_WORKERS, 0u);
  EXPECT_STREQ(b.derived().find("yield_workers")->value, "false");

  // Values the application set are not derived, and nothing is reported for them.
  LoadBackendOptionsMap load;
  ASSERT_TRUE(load.set("xnnpack", kNumThreads, 2).is_ok());
  ASSERT_TRUE(load.set("xnnpack", kYieldWorkers, false).is_ok());
  RunOptions explicit_values;
  explicit_values.policy = &saver;
  explicit_values.load = &load;
  Session e;
  ASSERT_TRUE(e.init(c, explicit_values).is_ok());
  EXPECT_EQ(e.summary().threads, 2u);
  EXPECT_EQ(e.summary().runtime_flags & XNN_FLAG_YIELD_WORKERS, 0u);
  EXPECT_EQ(e.derived().find("num_threads"), nullptr);
  EXPECT_EQ(e.derived().find("yield_workers"), nullptr);
}

TEST_F(XnnpackOptions, LoadAndDelegateScopesGetOwnPools) {
  const GraphCase c = small_conv();
  ASSERT_TRUE(set_global_threads(2).is_ok());
  Session shared;
  ASSERT_TRUE(shared.init(c).is_ok());
  EXPECT_EQ(shared.summary().threads, 2u);

  LoadBackendOptionsMap load;
  ASSERT_TRUE(load.set("xnnpack", kNumThreads, 2).is_ok());
  RunOptions lo;
  lo.load = &load;
  Session own;
  ASSERT_TRUE(own.init(c, lo).is_ok());
  EXPECT_EQ(own.summary().threads, 2u);
  EXPECT_NE(own.summary().pool, shared.summary().pool);  // same size, still its own

  DelegateOptionsMap per_delegate;
  ASSERT_TRUE(per_delegate.set("xnnpack#0", kNumThreads, 3).is_ok());
  RunOptions dop;
  dop.load = &load;
  dop.delegates = &per_delegate;
  Session three;
  ASSERT_TRUE(three.init(c, dop).is_ok());
  EXPECT_EQ(three.summary().threads, 3u);

  // All of them compute the same thing.
  std::vector<Floats> in = random_inputs(c, 3), r1, r2, r3;
  ASSERT_TRUE(shared.run(in, &r1).is_ok());
  ASSERT_TRUE(own.run(in, &r2).is_ok());
  ASSERT_TRUE(three.run(in, &r3).is_ok());
  EXPECT_TRUE(close(r2, r1));
  EXPECT_TRUE(close(r3, r1));
}

// Method instances far from the runtime's counter (which starts at 1), so that no Method loaded
// elsewhere in this process shares them.
constexpr uint64_t kMethodA = 0x7e57'0000'0000'0001u;
constexpr uint64_t kMethodB = 0x7e57'0000'0000'0002u;
constexpr uint64_t kMethodC = 0x7e57'0000'0000'0003u;

// A value set for the load gives the delegates of one Method one pool of that size (workers of
// per-delegate pools would spin beside the next delegate's), and never shares it with another
// Method. The sharing is reported as a derived value.
TEST_F(XnnpackOptions, LoadScopeDelegatesOfOneMethodShareOnePool) {
  const GraphCase c = small_conv();
  LoadBackendOptionsMap load;
  ASSERT_TRUE(load.set("xnnpack", kNumThreads, 2).is_ok());
  RunOptions in_a;
  in_a.load = &load;
  in_a.method_instance = kMethodA;
  Session first, second;
  ASSERT_TRUE(first.init(c, in_a).is_ok());
  in_a.delegate_id = "xnnpack#1";
  ASSERT_TRUE(second.init(c, in_a).is_ok());
  EXPECT_EQ(first.summary().threads, 2u);
  EXPECT_NE(first.summary().pool, nullptr);
  EXPECT_EQ(first.summary().pool, second.summary().pool);
  EXPECT_FALSE(first.summary().parks_workers);
  EXPECT_FALSE(second.summary().parks_workers);
  EXPECT_EQ(first.derived().find("num_threads"), nullptr);  // set, not derived
  const DerivedValue* pool = first.derived().find(kThreadPoolReport);
  ASSERT_NE(pool, nullptr);
  EXPECT_STREQ(pool->value, "method");
  EXPECT_STREQ(pool->reason,
               "num_threads set (load): the method's pool of 2 threads, shared by its xnnpack "
               "delegates of that size");

  // The same size at delegate scope joins the Method's pool too.
  DelegateOptionsMap per_delegate;
  ASSERT_TRUE(per_delegate.set("xnnpack#2", kNumThreads, 2).is_ok());
  RunOptions delegate_scope;
  delegate_scope.delegates = &per_delegate;
  delegate_scope.delegate_id = "xnnpack#2";
  delegate_scope.method_instance = kMethodA;
  Session third;
  ASSERT_TRUE(third.init(c, delegate_scope).is_ok());
  EXPECT_EQ(third.summary().pool, first.summary().pool);
  EXPECT_FALSE(third.summary().parks_workers);

  // Another Method, or none, gets a pool of its own.
  RunOptions in_b = in_a;
  in_b.method_instance = kMethodB;
  Session other;
  ASSERT_TRUE(other.init(c, in_b).is_ok());
  EXPECT_NE(other.summary().pool, nullptr);
  EXPECT_NE(other.summary().pool, first.summary().pool);
  RunOptions no_method;
  no_method.load = &load;
  Session alone;
  ASSERT_TRUE(alone.init(c, no_method).is_ok());
  EXPECT_NE(alone.summary().pool, first.summary().pool);
  EXPECT_NE(alone.summary().pool, other.summary().pool);
  ASSERT_NE(alone.derived().find(kThreadPoolReport), nullptr);
  EXPECT_STREQ(alone.derived().find(kThreadPoolReport)->value, "own");

  // Global or default values keep the process's pool.
  ASSERT_TRUE(set_global_threads(2).is_ok());
  RunOptions global_in_a;
  global_in_a.method_instance = kMethodA + 10;
  Session global;
  ASSERT_TRUE(global.init(c, global_in_a).is_ok());
  ASSERT_NE(global.derived().find(kThreadPoolReport), nullptr);
  EXPECT_STREQ(global.derived().find(kThreadPoolReport)->value, "process");
  EXPECT_NE(global.summary().pool, first.summary().pool);

  std::vector<Floats> in = random_inputs(c, 5), r1, r2, r3;
  ASSERT_TRUE(first.run(in, &r1).is_ok());
  ASSERT_TRUE(second.run(in, &r2).is_ok());
  ASSERT_TRUE(other.run(in, &r3).is_ok());
  EXPECT_TRUE(close(r2, r1));
  EXPECT_TRUE(close(r3, r1));
}

// A Method whose delegates run on two pools (sizes or scopes differ) parks each pool's workers
// when its delegate ends, so they do not spin beside the other pool's; results are unchanged.
TEST_F(XnnpackOptions, AMethodOnSeveralPoolsParksWorkersAfterEachDelegate) {
  const GraphCase c = small_conv();
  LoadBackendOptionsMap load;
  ASSERT_TRUE(load.set("xnnpack", kNumThreads, 2).is_ok());
  DelegateOptionsMap per_delegate;
  ASSERT_TRUE(per_delegate.set("xnnpack#1", kNumThreads, 3).is_ok());
  RunOptions o;
  o.load = &load;
  o.delegates = &per_delegate;
  o.method_instance = kMethodC;
  Session two, three;
  ASSERT_TRUE(two.init(c, o).is_ok());
  EXPECT_FALSE(two.summary().parks_workers);  // alone so far
  o.delegate_id = "xnnpack#1";
  ASSERT_TRUE(three.init(c, o).is_ok());
  EXPECT_EQ(two.summary().threads, 2u);
  EXPECT_EQ(three.summary().threads, 3u);
  EXPECT_NE(two.summary().pool, three.summary().pool);
  EXPECT_TRUE(two.summary().parks_workers);
  EXPECT_TRUE(three.summary().parks_workers);
  // The delegate that brought the second pool says so.
  EXPECT_NE(std::string(three.derived().find(kThreadPoolReport)->reason)
                .find("the method also runs another pool, so each delegate's workers are parked "
                      "when it ends"),
            std::string::npos)
      << three.derived().find(kThreadPoolReport)->reason;

  // A one-thread delegate has no workers and does not count.
  RunOptions single;
  single.compile_specs = {{"num_threads", "1"}};
  single.method_instance = kMethodB + 100;
  Session one, shared_size;
  ASSERT_TRUE(one.init(c, single).is_ok());
  RunOptions two_threads;
  two_threads.load = &load;
  two_threads.method_instance = kMethodB + 100;
  two_threads.delegate_id = "xnnpack#1";
  ASSERT_TRUE(shared_size.init(c, two_threads).is_ok());
  EXPECT_FALSE(shared_size.summary().parks_workers);

  std::vector<Floats> in = random_inputs(c, 6), r1, r2, r3;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(two.run(in, &r1).is_ok());
    ASSERT_TRUE(three.run(in, &r2).is_ok());
  }
  ASSERT_TRUE(one.run(in, &r3).is_ok());
  EXPECT_TRUE(close(r1, r3));
  EXPECT_TRUE(close(r2, r3));
}

// park_idle_workers reaches the process's pool and every live Method's; runs after it compute
// the same (the workers wake for the next command).
TEST_F(XnnpackOptions, ParkIdleWorkersReachesEveryLivePool) {
  const GraphCase c = small_conv();
  ASSERT_TRUE(set_global_threads(2).is_ok());
  Session global;
  ASSERT_TRUE(global.init(c).is_ok());
  LoadBackendOptionsMap load;
  ASSERT_TRUE(load.set("xnnpack", kNumThreads, 3).is_ok());
  RunOptions o;
  o.load = &load;
  o.method_instance = kMethodA + 20;
  Session method;
  ASSERT_TRUE(method.init(c, o).is_ok());
  auto backend = get_backend("xnnpack");
  ASSERT_TRUE(backend.ok());
  const auto& pools = static_cast<const XnnpackBackend*>(*backend)->pools();
  std::vector<const void*> live;
  for (const PoolPtr& p : pools.all()) live.push_back(p.get());
  EXPECT_NE(std::find(live.begin(), live.end(), global.summary().pool), live.end());
  EXPECT_NE(std::find(live.begin(), live.end(), method.summary().pool), live.end());

  std::vector<Floats> in = random_inputs(c, 9), before, after, other;
  ASSERT_TRUE(method.run(in, &before).is_ok());
  (*backend)->park_idle_workers();
  ASSERT_TRUE(method.run(in, &after).is_ok());
  ASSERT_TRUE(global.run(in, &other).is_ok());
  EXPECT_TRUE(close(after, before));
  EXPECT_TRUE(close(other, before));
}

TEST_F(XnnpackOptions, CompileSpecGetsOwnPoolBelowGlobal) {
  const GraphCase c = small_conv();
  RunOptions spec;
  spec.compile_specs = {{"num_threads", "1"}};
  Session single;
  ASSERT_TRUE(single.init(c, spec).is_ok());
  EXPECT_EQ(single.summary().threads, 1u);
  EXPECT_EQ(single.summary().pool, nullptr);
  // A global value outranks the compile spec (and then the shared pool is used).
  ASSERT_TRUE(set_global_threads(2).is_ok());
  Session global;
  ASSERT_TRUE(global.init(c, spec).is_ok());
  EXPECT_EQ(global.summary().threads, 2u);
  std::vector<Floats> in = random_inputs(c, 8), r1, r2;
  ASSERT_TRUE(single.run(in, &r1).is_ok());
  ASSERT_TRUE(global.run(in, &r2).is_ok());
  EXPECT_TRUE(close(r1, r2));
}

TEST_F(XnnpackOptions, GlobalChangeAppliesToLaterLoadsOnly) {
  const GraphCase c = small_conv();
  ASSERT_TRUE(set_global_threads(2).is_ok());
  Session before;
  ASSERT_TRUE(before.init(c).is_ok());
  const void* old_pool = before.summary().pool;
  ASSERT_TRUE(set_global_threads(3).is_ok());
  Session after;
  ASSERT_TRUE(after.init(c).is_ok());
  EXPECT_EQ(after.summary().threads, 3u);
  EXPECT_EQ(before.summary().threads, 2u);
  EXPECT_EQ(before.summary().pool, old_pool);
  EXPECT_NE(after.summary().pool, old_pool);
  std::vector<Floats> in = random_inputs(c, 4), r1, r2;
  ASSERT_TRUE(before.run(in, &r1).is_ok());
  ASSERT_TRUE(after.run(in, &r2).is_ok());
  EXPECT_TRUE(close(r1, r2));
  Session again;  // a third load shares the new pool
  ASSERT_TRUE(again.init(c).is_ok());
  EXPECT_EQ(again.summary().pool, after.summary().pool);
}

TEST_F(XnnpackOptions, RuntimeFlags) {
  const GraphCase c = small_conv();
  LoadBackendOptionsMap load;
  ASSERT_TRUE(load.set("xnnpack", kYieldWorkers, true).is_ok());
  ASSERT_TRUE(load.set("xnnpack", kSparseInference, true).is_ok());
  ASSERT_TRUE(load.set("xnnpack", kFp16Inference, true).is_ok());
  RunOptions o;
  o.load = &load;
  Session s;
  ASSERT_TRUE(s.init(c, o).is_ok());
  const uint32_t flags = s.summary().runtime_flags;
  EXPECT_TRUE(flags & XNN_FLAG_YIELD_WORKERS);
  EXPECT_TRUE(flags & XNN_FLAG_HINT_SPARSE_INFERENCE);
  EXPECT_TRUE(flags & XNN_FLAG_HINT_FP16_INFERENCE);
  std::vector<Floats> in = random_inputs(c, 5), got;
  ASSERT_TRUE(s.run(in, &got).is_ok());
  Result<std::vector<Floats>> want = run_portable(c, in);
  ASSERT_TRUE(want.ok());
  EXPECT_TRUE(close(got, *want));
}

#if defined(__x86_64__)
// Documents a limit of this XNNPACK: the fp16 hint needs native fp16 arithmetic, which x86 does
// not have, so results are bit-identical to fp32 inference.
TEST_F(XnnpackOptions, Fp16HintIsIgnoredOnX86) {
  const GraphCase c = small_conv();
  LoadBackendOptionsMap load;
  ASSERT_TRUE(load.set("xnnpack", kFp16Inference, true).is_ok());
  RunOptions o;
  o.load = &load;
  std::vector<Floats> in = random_inputs(c, 6);
  Result<std::vector<Floats>> with = run_xnnpack(c, in, o);
  Result<std::vector<Floats>> without = run_xnnpack(c, in);
  ASSERT_TRUE(with.ok() && without.ok());
  EXPECT_EQ(*with, *without);
}
#endif

// Conv -> Add -> Conv, named nodes: what the per-operator profile reports.
GraphCase three_ops() {
  GraphCase c;
  int x = c.input({1, 8, 12, 12});
  int w1 = c.constant({8, 8, 3, 3});
  int h = c.tensor({1, 8, 10, 10});
  ir::Node& a = c.node(Op::Conv, {x, w1}, h);
  a.attrs = {ir::Attr::make_ints("kernel_shape", {3, 3})};
  a.name = "first_conv";
  int r = c.input({1, 8, 10, 10});
  int s = c.tensor({1, 8, 10, 10});
  c.node(Op::Add, {h, r}, s).name = "residual_add";
  int w2 = c.constant({4, 8, 1, 1});
  int y = c.tensor({1, 4, 10, 10});
  ir::Node& b = c.node(Op::Conv, {s, w2}, y);
  b.attrs = {ir::Attr::make_ints("kernel_shape", {1, 1})};
  b.name = "projection";
  c.output(y);
  return c;
}

TEST_F(XnnpackOptions, ProfileOnlyWhenRequested) {
  const GraphCase c = three_ops();
  Session s;
  ASSERT_TRUE(s.init(c).is_ok());
  EXPECT_EQ(summarize_delegate(s.handle()).runtimes, 1u);
  std::vector<Floats> in = random_inputs(c, 7);
  ProfileEvent storage[16];
  ProfileBuffer profile(storage);
  std::vector<Floats> plain, profiled, after;
  ASSERT_TRUE(s.run(in, &plain, nullptr, &profile).is_ok());
  EXPECT_EQ(profile.events().size(), 0u);

  // profile=true: the per-node twin runs, one event per operator (named "<op>:<node>").
  ExecuteOptions eo;
  ASSERT_TRUE(eo.set("xnnpack", kProfile, true).is_ok());
  for (int call = 0; call < 2; ++call) {
    profile.clear();
    ASSERT_TRUE(s.run(in, &profiled, &eo, &profile).is_ok());
    ASSERT_EQ(profile.events().size(), 5u);
    EXPECT_STREQ(profile.events()[0].name, "xnnpack#0:stage_inputs");
    EXPECT_STREQ(profile.events()[1].name, "Conv:first_conv");
    EXPECT_STREQ(profile.events()[2].name, "Add:residual_add");
    EXPECT_STREQ(profile.events()[3].name, "Conv:projection");
    EXPECT_STREQ(profile.events()[4].name, "xnnpack#0:stage_outputs");
    for (const ProfileEvent& e : profile.events()) EXPECT_GE(e.ms, 0.0);
    EXPECT_TRUE(close(profiled, plain, 1e-5));
  }

  // Off again: the fused delegate, no events, same numbers.
  profile.clear();
  ExecuteOptions off;
  ASSERT_TRUE(off.set("xnnpack", kProfile, false).is_ok());
  ASSERT_TRUE(s.run(in, &after, &off, &profile).is_ok());
  EXPECT_EQ(profile.events().size(), 0u);
  EXPECT_EQ(after, plain);
}

TEST_F(XnnpackOptions, SchemaIsValidated) {
  const GraphCase c = small_conv();
  LoadBackendOptionsMap load;
  ASSERT_TRUE(load.set("xnnpack", kNumThreads, 300).is_ok());
  RunOptions o;
  o.load = &load;
  Session s;
  Status st = s.init(c, o);
  EXPECT_EQ(st.code(), Error::OptionOutOfRange) << st.message();

  LoadBackendOptionsMap wrong_scope;
  ASSERT_TRUE(wrong_scope.set("xnnpack", kProfile, true).is_ok());
  o.load = &wrong_scope;
  Session t;
  st = t.init(c, o);
  EXPECT_EQ(st.code(), Error::OptionWrongScope) << st.message();

  ExecuteOptions eo;
  st = eo.set("xnnpack", kNumThreads, 2);
  EXPECT_EQ(st.code(), Error::OptionWrongScope) << st.message();
}

}  // namespace
}  // namespace tessera::xnnpack::testing
