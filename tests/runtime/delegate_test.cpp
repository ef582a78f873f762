// The runtime's delegate path with stub backends: the RFC's four sets of arguments, per-delegate
// values, precedence as seen by backends, retargeting, explicit fallback, execute options.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "tessera/backend/context.h"
#include "tessera/backend/execute_options.h"
#include "tessera/backend/global_options.h"
#include "tessera/backend/lifecycle.h"
#include "tessera/backend/options.h"
#include "tessera/backend/options_map.h"
#include "tessera/backend/registry.h"
#include "tessera/backend/testing/stub_backend.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program.h"
#include "tests/testing/test_programs.h"

namespace tessera {
namespace {

int g_handle_target = 0;  // what the stubs' handles point at

constexpr const char* kModes[] = {"fast", "low_power"};
constexpr OptionSpec kStubSchema[] = {
    OptionSpec::integer(OptionKey<int64_t>{"num_threads"}, 0, 0, 64, kInitScopes, "threads"),
    OptionSpec::enumeration(OptionKey<EnumValue>{"mode"}, "fast", kModes, kInitScopes,
                            "power mode"),
    OptionSpec::boolean(OptionKey<bool>{"profile"}, false, OptionLevel::Execute,
                        "per-call profile"),
};
constexpr OptionKey<int64_t> kThreads{"num_threads"};
constexpr OptionKey<bool> kProfile{"profile"};

// Registers stub backends "stub_a" and "stub_b" for one test and records every init's options.
class DelegateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"stub_a", "stub_b"}) {
      auto* stub = new testing::StubBackend(kStubSchema);
      stub->on_init = [this, name](BackendInitContext& ctx, FreeableBuffer*, Span<const CompileSpec>)
          -> Result<DelegateHandle*> {
        std::lock_guard<std::mutex> lock(mutex_);
        auto threads = ctx.get(kThreads);
        std::string peers;
        for (std::string_view peer : ctx.cpu_pool_peers()) {
          if (!peers.empty()) peers += ',';
          peers += peer;
        }
        inits_.push_back({std::string(name), std::string(ctx.delegate_id()),
                          threads.ok() ? *threads : -1, peers, ctx.method_instance()});
        return to_handle(&g_handle_target);  // nothing to free
      };
      stub->on_execute = [](BackendExecutionContext& ctx, DelegateHandle*, Span<EValue*> args) {
        auto profile = ctx.get(kProfile);
        if (profile.ok() && *profile) ctx.report_event("stub op", 0.5);
        std::memcpy(args[1]->to_tensor().data(), args[0]->to_tensor().data(), args[0]->to_tensor().nbytes());
        return Status::ok();
      };
      stubs_[name] = stub;
      ASSERT_TRUE(register_backend(name, std::unique_ptr<BackendInterface>(stub)).is_ok());
    }
  }
  void TearDown() override {
    for (const char* name : {"stub_a", "stub_b"}) (void)unregister_backend(name);
  }

  struct Init {
    std::string backend, id;
    int64_t threads;
    std::string cpu_pool_peers;  // comma-separated
    uint64_t method_instance;
  };
  Program load_program(const ir::ProgramBuilder& pb) {
    auto bytes = pb.build();
    EXPECT_TRUE(bytes.ok());
    buffers_.push_back(std::make_unique<testing::AlignedBuffer>(*bytes));
    loaders_.push_back(std::make_unique<BufferDataLoader>(buffers_.back()->data(), buffers_.back()->size()));
    auto p = Program::load(loaders_.back().get());
    EXPECT_TRUE(p.ok()) << p.status().message();
    return std::move(*p);
  }

  std::mutex mutex_;
  std::vector<Init> inits_;
  std::map<std::string, testing::StubBackend*> stubs_;
  std::vector<std::unique_ptr<testing::AlignedBuffer>> buffers_;
  std::vector<std::unique_ptr<BufferDataLoader>> loaders_;
};

// The RFC: `forward` loaded twice, delegating to A and B, gets four separate argument sets.
TEST_F(DelegateTest, FourSetsOfArgumentsForTwoInstancesTimesTwoBackends) {
  Program program = load_program(testing::delegate_chain_program({"stub_a", "stub_b"}));
  LoadBackendOptionsMap first, second;
  ASSERT_TRUE(first.set("stub_a", kThreads, 1).is_ok());
  ASSERT_TRUE(first.set("stub_b", kThreads, 2).is_ok());
  ASSERT_TRUE(second.set("stub_a", kThreads, 3).is_ok());
  ASSERT_TRUE(second.set("stub_b", kThreads, 4).is_ok());
  LoadOptions o1, o2;
  o1.backend_options = &first;
  o2.backend_options = &second;
  auto m1 = program.load_method("forward", nullptr, o1);
  auto m2 = program.load_method("forward", nullptr, o2);
  ASSERT_TRUE(m1.ok()) << m1.status().message();
  ASSERT_TRUE(m2.ok()) << m2.status().message();
  ASSERT_EQ(inits_.size(), 4u);
  const std::pair<const char*, int64_t> want[] = {{"stub_a", 1}, {"stub_b", 2}, {"stub_a", 3}, {"stub_b", 4}};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(inits_[i].backend, want[i].first) << i;
    EXPECT_EQ(inits_[i].threads, want[i].second) << i;
  }
  // And each instance reports its own values with their source.
  const ResolvedOptions* opts = m2->delegate_info(1).options;
  ASSERT_NE(opts, nullptr);
  EXPECT_EQ(*opts->get(kThreads), 4);
  EXPECT_EQ(opts->source(static_cast<size_t>(opts->find("num_threads"))), OptionLevel::Load);
}

TEST_F(DelegateTest, TwoDelegatesOfOneBackendGetDifferentValues) {
  Program program = load_program(testing::delegate_chain_program({"stub_a", "stub_a"}));
  LoadBackendOptionsMap load;
  ASSERT_TRUE(load.set("stub_a", kThreads, 2).is_ok());
  DelegateOptionsMap per_delegate;
  ASSERT_TRUE(per_delegate.set("stub_a#1", kThreads, 7).is_ok());
  LoadOptions o;
  o.backend_options = &load;
  o.delegate_options = &per_delegate;
  auto m = program.load_method("forward", nullptr, o);
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(inits_.size(), 2u);
  EXPECT_EQ(inits_[0].id, "stub_a#0");
  EXPECT_EQ(inits_[0].threads, 2);
  EXPECT_EQ(inits_[1].id, "stub_a#1");
  EXPECT_EQ(inits_[1].threads, 7);
  const ResolvedOptions* o1 = m->delegate_info(1).options;
  EXPECT_EQ(o1->source(static_cast<size_t>(o1->find("num_threads"))), OptionLevel::Delegate);
}

TEST_F(DelegateTest, PrecedenceAsSeenByTheBackend) {
  std::vector<std::vector<ir::CompileSpecDesc>> specs = {{{"num_threads", "5"}, {"mode", "low_power"}}};
  Program program = load_program(testing::delegate_chain_program({"stub_a"}, specs));
  // Compile spec only.
  {
    auto m = program.load_method("forward");
    ASSERT_TRUE(m.ok()) << m.status().message();
    EXPECT_EQ(inits_.back().threads, 5);
    const ResolvedOptions* o = m->delegate_info(0).options;
    EXPECT_EQ(o->source(static_cast<size_t>(o->find("mode"))), OptionLevel::CompileSpec);
    EXPECT_EQ(o->source(static_cast<size_t>(o->find("profile"))), OptionLevel::Default);
  }
  // Global beats the compile spec.
  BackendOptions<2> global;
  ASSERT_TRUE(global.set(kThreads, 6).is_ok());
  ASSERT_TRUE(set_option("stub_a", global.view()).is_ok());
  ASSERT_TRUE(program.load_method("forward").ok());
  EXPECT_EQ(inits_.back().threads, 6);
  // Load beats global; delegate beats load.
  LoadBackendOptionsMap load;
  ASSERT_TRUE(load.set("stub_a", kThreads, 7).is_ok());
  LoadOptions o;
  o.backend_options = &load;
  ASSERT_TRUE(program.load_method("forward", nullptr, o).ok());
  EXPECT_EQ(inits_.back().threads, 7);
  DelegateOptionsMap per_delegate;
  ASSERT_TRUE(per_delegate.set("stub_a#0", kThreads, 8).is_ok());
  o.delegate_options = &per_delegate;
  ASSERT_TRUE(program.load_method("forward", nullptr, o).ok());
  EXPECT_EQ(inits_.back().threads, 8);
  (void)reset_backend_options("stub_a");
}

TEST_F(DelegateTest, BadOptionsFailTheLoadWithSpecificErrors) {
  Program program = load_program(testing::delegate_chain_program({"stub_a"}));
  LoadBackendOptionsMap load;
  BackendOption typo;
  ASSERT_TRUE(typo.set_key("num_thread").is_ok());
  typo.set_int(2);
  ASSERT_TRUE(load.set_options("stub_a", {&typo, 1}).is_ok());
  LoadOptions o;
  o.backend_options = &load;
  auto m = program.load_method("forward", nullptr, o);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error(), Error::OptionUnknownKey);
  EXPECT_NE(std::string(m.status().message()).find("did you mean 'num_threads'"), std::string::npos)
      << m.status().message();
  EXPECT_TRUE(inits_.empty());
  // Lenient mode skips the unknown key.
  o.lenient_options = true;
  EXPECT_TRUE(program.load_method("forward", nullptr, o).ok());

  LoadBackendOptionsMap unknown_backend;
  ASSERT_TRUE(unknown_backend.set("stub_c", kThreads, 1).is_ok());
  LoadOptions o2;
  o2.backend_options = &unknown_backend;
  EXPECT_EQ(program.load_method("forward", nullptr, o2).error(), Error::OptionUnknownBackend);

  DelegateOptionsMap wrong_id;
  ASSERT_TRUE(wrong_id.set("stub_a#3", kThreads, 1).is_ok());
  LoadOptions o3;
  o3.delegate_options = &wrong_id;
  auto m3 = program.load_method("forward", nullptr, o3);
  EXPECT_FALSE(m3.ok());
  EXPECT_NE(std::string(m3.status().message()).find("stub_a#0"), std::string::npos) << m3.status().message();

  LoadBackendOptionsMap out_of_range;
  ASSERT_TRUE(out_of_range.set("stub_a", kThreads, 65).is_ok());
  LoadOptions o4;
  o4.backend_options = &out_of_range;
  EXPECT_EQ(program.load_method("forward", nullptr, o4).error(), Error::OptionOutOfRange);
}

TEST_F(DelegateTest, FallbackIsExplicitAndReported) {
  Program program = load_program(testing::delegate_chain_program({"stub_a"}));
  stubs_["stub_a"]->available = false;
  // No chain: the load fails with the backend's error.
  auto m = program.load_method("forward");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error(), Error::DelegateUnavailable);
  EXPECT_STREQ(m.status().message(),
               "delegate 'stub_a#0': backend 'stub_a' is not available on this machine");
  // With a chain, the next backend runs it and the method says so.
  LoadOptions o;
  ASSERT_TRUE(o.set_fallback("stub_b,portable").is_ok());
  auto m2 = program.load_method("forward", nullptr, o);
  ASSERT_TRUE(m2.ok()) << m2.status().message();
  const DelegateInfo& info = m2->delegate_info(0);
  EXPECT_STREQ(info.backend, "stub_b");
  EXPECT_STREQ(info.requested_backend, "stub_a");
  EXPECT_STREQ(info.reason, "'stub_a' is not available on this machine");

  // A backend that says why: the error and the reason carry it.
  stubs_["stub_a"]->why_unavailable = "no accelerator found";
  auto why_fails = program.load_method("forward");
  ASSERT_FALSE(why_fails.ok());
  EXPECT_STREQ(why_fails.status().message(),
               "delegate 'stub_a#0': backend 'stub_a' is not available on this machine (no "
               "accelerator found)");
  auto why_falls_back = program.load_method("forward", nullptr, o);
  ASSERT_TRUE(why_falls_back.ok()) << why_falls_back.status().message();
  EXPECT_STREQ(why_falls_back->delegate_info(0).reason,
               "'stub_a' is not available on this machine (no accelerator found)");
  stubs_["stub_a"]->why_unavailable = "";

  // An init failure moves on too, and the error is in the reason.
  stubs_["stub_a"]->available = true;
  stubs_["stub_b"]->on_init = [](BackendInitContext&, FreeableBuffer*, Span<const CompileSpec>)
      -> Result<DelegateHandle*> { return Status(Error::DelegateMemoryAllocationFailed, "device out of memory"); };
  stubs_["stub_a"]->available = false;
  auto m3 = program.load_method("forward", nullptr, o);
  ASSERT_TRUE(m3.ok()) << m3.status().message();
  EXPECT_STREQ(m3->delegate_info(0).backend, "portable");
  EXPECT_NE(std::string(m3->delegate_info(0).reason).find("'stub_b' init failed: device out of memory"),
            std::string::npos) << m3->delegate_info(0).reason;
  // The portable backend really computes the payload (a Relu).
  float x[8] = {-1, 2, -3, 4, 5, -6, 7, -8};
  int64_t sizes[] = {2, 4};
  ASSERT_TRUE(m3->set_input(0, Tensor(ScalarType::Float32, sizes, x)).is_ok());
  ASSERT_TRUE(m3->execute().is_ok());
  const float* y = (*m3->get_output(0))->data_as<float>();
  for (int i = 0; i < 8; ++i) EXPECT_EQ(y[i], x[i] > 0 ? x[i] : 0);

  // Every link failing: one error listing each reason.
  LoadOptions only_b;
  ASSERT_TRUE(only_b.set_fallback("stub_b").is_ok());
  auto m4 = program.load_method("forward", nullptr, only_b);
  ASSERT_FALSE(m4.ok());
  EXPECT_NE(std::string(m4.status().message()).find("no backend could run it"), std::string::npos);
}

TEST_F(DelegateTest, RetargetRunsOnAnotherBackendOrNamesTheMissingOp) {
  Program program = load_program(testing::delegate_chain_program({"stub_a"}));
  LoadOptions o;
  ASSERT_TRUE(o.add_retarget("stub_a", "portable").is_ok());
  auto m = program.load_method("forward", nullptr, o);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_STREQ(m->delegate_info(0).backend, "portable");
  EXPECT_TRUE(inits_.empty());

  stubs_["stub_b"]->on_supports_op = [](const OpView& op) { return op.op != static_cast<int>(fb::OpType::Relu); };
  LoadOptions o2;
  ASSERT_TRUE(o2.add_retarget("stub_a", "stub_b").is_ok());
  auto m2 = program.load_method("forward", nullptr, o2);
  ASSERT_FALSE(m2.ok());
  EXPECT_EQ(m2.error(), Error::DelegateInvalidCompatibility);
  EXPECT_STREQ(m2.status().message(),
               "delegate 'stub_a#0' cannot run on backend 'stub_b': it does not support op 'Relu' "
               "(node 'relu0')");
}

// Backends with CPU thread pools learn which other backends of the same method have one.
TEST_F(DelegateTest, CpuPoolPeersNameTheMethodsOtherPoolBackends) {
  Program mixed = load_program(testing::delegate_chain_program({"stub_a", "stub_b", "stub_a"}));
  Program single = load_program(testing::delegate_chain_program({"stub_a", "stub_a"}));
  stubs_["stub_a"]->cpu_thread_pool = true;
  stubs_["stub_b"]->cpu_thread_pool = true;
  ASSERT_TRUE(mixed.load_method("forward").ok());
  ASSERT_EQ(inits_.size(), 3u);
  EXPECT_EQ(inits_[0].cpu_pool_peers, "stub_b");
  EXPECT_EQ(inits_[1].cpu_pool_peers, "stub_a");
  EXPECT_EQ(inits_[2].cpu_pool_peers, "stub_b");

  // One pool backend alone: no peers.
  inits_.clear();
  ASSERT_TRUE(single.load_method("forward").ok());
  ASSERT_EQ(inits_.size(), 2u);
  EXPECT_EQ(inits_[0].cpu_pool_peers, "");
  EXPECT_EQ(inits_[1].cpu_pool_peers, "");

  // Retargeted onto one backend: the method runs one pool.
  inits_.clear();
  LoadOptions retarget;
  ASSERT_TRUE(retarget.add_retarget("stub_b", "stub_a").is_ok());
  ASSERT_TRUE(mixed.load_method("forward", nullptr, retarget).ok());
  ASSERT_EQ(inits_.size(), 3u);
  for (const Init& init : inits_) EXPECT_EQ(init.cpu_pool_peers, "") << init.id;

  // A backend without a pool is neither told nor named.
  inits_.clear();
  stubs_["stub_b"]->cpu_thread_pool = false;
  ASSERT_TRUE(mixed.load_method("forward").ok());
  ASSERT_EQ(inits_.size(), 3u);
  for (const Init& init : inits_) EXPECT_EQ(init.cpu_pool_peers, "") << init.id;
}

// Every delegate of one loaded Method sees the same method instance, another load another one:
// backends share per-Method resources (XNNPACK's thread pool) by it.
TEST_F(DelegateTest, DelegatesOfOneLoadShareAMethodInstanceOthersDoNot) {
  Program program = load_program(testing::delegate_chain_program({"stub_a", "stub_b", "stub_a"}));
  auto m1 = program.load_method("forward");
  ASSERT_TRUE(m1.ok()) << m1.status().message();
  ASSERT_EQ(inits_.size(), 3u);
  const uint64_t first = inits_[0].method_instance;
  EXPECT_NE(first, 0u);
  EXPECT_EQ(inits_[1].method_instance, first);
  EXPECT_EQ(inits_[2].method_instance, first);

  inits_.clear();
  auto m2 = program.load_method("forward");
  ASSERT_TRUE(m2.ok()) << m2.status().message();
  ASSERT_EQ(inits_.size(), 3u);
  EXPECT_NE(inits_[0].method_instance, first);
  EXPECT_NE(inits_[0].method_instance, 0u);
  EXPECT_EQ(inits_[2].method_instance, inits_[0].method_instance);
}

TEST_F(DelegateTest, ExecuteOptionsReachTheBackendPerCall) {
  Program program = load_program(testing::delegate_chain_program({"stub_a"}));
  auto m = program.load_method("forward");
  ASSERT_TRUE(m.ok());
  ProfileEvent storage[8];
  ProfileBuffer profile({storage, 8});
  ExecuteOptions exec;
  ASSERT_TRUE(exec.set("stub_a", kProfile, true).is_ok());
  ASSERT_TRUE(m->execute(exec, &profile).is_ok());
  ASSERT_EQ(profile.events().size(), 1u);
  EXPECT_STREQ(profile.events()[0].name, "stub op");
  profile.clear();
  ASSERT_TRUE(m->execute().is_ok());  // without options: no profile
  EXPECT_TRUE(profile.events().empty());

  // A load-scoped key is rejected when set, and again at execute if it got in unchecked.
  ExecuteOptions wrong_scope;
  EXPECT_EQ(wrong_scope.set("stub_a", kThreads, 2).code(), Error::OptionWrongScope);
  BackendOption threads;
  ASSERT_TRUE(threads.set_key("num_threads").is_ok());
  threads.set_int(2);
  ASSERT_TRUE(wrong_scope.set_options_unchecked("stub_a", {&threads, 1}).is_ok());
  Status st = m->execute(wrong_scope);
  EXPECT_EQ(st.code(), Error::OptionWrongScope) << st.message();

  ExecuteOptions other_backend;
  ASSERT_TRUE(other_backend.set("stub_b", kProfile, true).is_ok());
  st = m->execute(other_backend);
  EXPECT_EQ(st.code(), Error::OptionUnknownBackend);
  EXPECT_STREQ(st.message(),
               "execute options for backend 'stub_b', but no delegate of method 'forward' runs on it");
}

// Registered -> configured -> initialised: an init-only option can be set until the backend's
// first delegate load; afterwards another value fails with InvalidState naming the option.
TEST(DelegateLifecycle, InitOnlyOptionsLockAtTheFirstLoad) {
  static constexpr const char* kPlatforms[] = {"any", "pocl", "nvidia"};
  static constexpr OptionSpec kSchema[] = {
      OptionSpec::enumeration(OptionKey<EnumValue>{"platform"}, "any", kPlatforms,
                              OptionLevel::Global, "platform")
          .init_only(),
  };
  testing::StubBackend stub(kSchema);
  ASSERT_TRUE(register_backend("stub_life", &stub).is_ok());
  EXPECT_EQ(*backend_lifecycle("stub_life"), BackendLifecycle::Registered);
  BackendOption platform;
  ASSERT_TRUE(platform.set_key("platform").is_ok());
  ASSERT_TRUE(platform.set_enum("pocl").is_ok());
  ASSERT_TRUE(set_option("stub_life", {&platform, 1}).is_ok());
  EXPECT_EQ(*backend_lifecycle("stub_life"), BackendLifecycle::Configured);

  auto bytes = testing::delegate_chain_program({"stub_life"}).build();
  testing::AlignedBuffer buf(*bytes);
  BufferDataLoader loader(buf.data(), buf.size());
  auto program = Program::load(&loader);
  ASSERT_TRUE(program.ok());
  {
    auto m = program->load_method("forward");
    ASSERT_TRUE(m.ok()) << m.status().message();
    EXPECT_EQ(*backend_lifecycle("stub_life"), BackendLifecycle::Initialized);
    EXPECT_EQ(stub.last_init_options().get_enum("platform")->name, "pocl");
  }
  BackendOption other;
  ASSERT_TRUE(other.set_key("platform").is_ok());
  ASSERT_TRUE(other.set_enum("nvidia").is_ok());
  Status st = set_option("stub_life", {&other, 1});
  EXPECT_EQ(st.code(), Error::InvalidState);
  EXPECT_NE(std::string(st.message()).find("option 'platform' is init-only"), std::string::npos) << st.message();
  EXPECT_NE(std::string(st.message()).find("method 'forward', delegate 'stub_life#0'"), std::string::npos)
      << st.message();
  EXPECT_TRUE(set_option("stub_life", {&platform, 1}).is_ok());  // the locked value: a no-op
  (void)unregister_backend("stub_life");
}

TEST_F(DelegateTest, DestroyIsCalledForEveryInitialisedDelegate) {
  Program program = load_program(testing::delegate_chain_program({"stub_a", "stub_b", "stub_a"}));
  {
    auto m = program.load_method("forward");
    ASSERT_TRUE(m.ok());
  }
  EXPECT_EQ(stubs_["stub_a"]->destroy_count(), 2);
  EXPECT_EQ(stubs_["stub_b"]->destroy_count(), 1);
  // A failure part-way destroys what was initialised and nothing else.
  stubs_["stub_b"]->available = false;
  auto m = program.load_method("forward");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(stubs_["stub_a"]->destroy_count(), 3);
}

}  // namespace
}  // namespace tessera
