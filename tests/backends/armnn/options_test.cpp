// The ArmNN backend's options: a seam (CallObserver) records the CreationOptions and
// OptimizerOptions ArmNN actually received, and the tests check that they hold exactly what the
// application set at each scope; init-only options set after the runtime exists fail with
// InvalidState; a backends id ArmNN does not have is an error naming the ones it has; an
// unavailable preferred id falls back and is reported; values ArmNN would ignore are refused.
//
// The runtime is created once per process (at the first init), so the tests that check its
// creation need a process of their own: ctest runs every test in its own process.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness.h"
#include "tessera/backend/global_options.h"
#include "tessera/backend/options.h"
#include "tessera/backend/options_map.h"
#include "tessera/backend/registry.h"
#include "tessera/backends/armnn/backend_ids.h"
#include "tessera/backends/armnn/options.h"
#include "tests/backends/common/elementwise_cases.h"

namespace tessera::armnn_backend::testing {
namespace {

using Op = fb::OpType;

/// What ArmNN received, as recorded through the seam.
class Recorder : public CallObserver {
 public:
  Recorder() { set_call_observer(this); }
  ~Recorder() override { set_call_observer(nullptr); }

  void on_create_runtime(const armnn::IRuntime::CreationOptions& options) override {
    ++runtimes;
    creation = options.m_BackendOptions;
  }
  void on_optimize(const std::vector<armnn::BackendId>& preferences,
                   const armnn::OptimizerOptions& options) override {
    std::string p;
    for (const armnn::BackendId& id : preferences) p += (p.empty() ? "" : ",") + id.Get();
    optimized.push_back({p, options.m_ReduceFp32ToFp16, options.m_ReduceFp32ToBf16, options.m_Debug,
                         options.m_ImportEnabled});
  }

  struct Optimized {
    std::string preferences;
    bool fp16, bf16, debug, import;
  };
  int runtimes = 0;
  std::vector<armnn::BackendOptions> creation;
  std::vector<Optimized> optimized;
};

ArmnnBackend& backend() {
  return *static_cast<ArmnnBackend*>(*get_backend(kBackendName));
}

GraphCase relu_case() {
  return backend_testing::unary_case(Op::Relu, {2, 8});
}

/// The creation options as "Backend.Name=value" lines, in order.
std::vector<std::string> describe(const std::vector<armnn::BackendOptions>& all) {
  std::vector<std::string> out;
  for (const armnn::BackendOptions& b : all) {
    for (size_t i = 0; i < b.GetOptionCount(); ++i) {
      const auto& o = b.GetOption(i);
      const auto& v = o.GetValue();
      std::string value = v.IsBool()     ? (v.AsBool() ? "true" : "false")
                          : v.IsInt()    ? std::to_string(v.AsInt())
                          : v.IsFloat()  ? std::to_string(v.AsFloat())
                          : v.IsString() ? "'" + v.AsString() + "'"
                                         : "?";
      out.push_back(b.GetBackendId().Get() + "." + o.GetName() + "=" + value);
    }
  }
  return out;
}

Status set_global(std::initializer_list<BackendOption> options) {
  return set_option(kBackendName, Span<const BackendOption>(options.begin(), options.size()));
}

BackendOption opt_int(std::string_view key, int64_t v) {
  BackendOption o;
  (void)o.set_key(key);
  o.set_int(v);
  return o;
}
BackendOption opt_bool(std::string_view key, bool v) {
  BackendOption o;
  (void)o.set_key(key);
  o.set_bool(v);
  return o;
}
BackendOption opt_string(std::string_view key, std::string_view v) {
  BackendOption o;
  (void)o.set_key(key);
  (void)o.set_string(v);
  return o;
}

// Must be the first test of the process: it sees the runtime's creation.
TEST(ArmnnOptions, CreationAndOptimizerOptionsHoldWhatWasSetAtEachScope) {
  if (backend().has_runtime()) GTEST_SKIP() << "needs a process of its own (ctest runs one)";
  Recorder rec;
  ASSERT_TRUE(set_global({opt_int("tuning_level", 2), opt_bool("kernel_profiling", true),
                          opt_string("backend_option", "GpuAcc.TuningFile=/tmp/armnn.tune")})
                  .is_ok());
  ASSERT_TRUE(set_global({opt_string("backends", "CpuAcc,CpuRef")}).is_ok());

  // Load scope: fp16 off, bf16 on; the delegate scope turns bf16 off for armnn#1.
  LoadBackendOptionsMap load;
  ASSERT_TRUE(load.set(kBackendName, kReduceFp32ToBf16, true).is_ok());
  ASSERT_TRUE(load.set(kBackendName, kBackends, std::string_view("GpuAcc,CpuRef")).is_ok());
  DelegateOptionsMap per_delegate;
  ASSERT_TRUE(per_delegate.set("armnn#1", kReduceFp32ToBf16, false).is_ok());

  const GraphCase g = relu_case();
  Session first;
  RunOptions o;
  o.load = &load;
  o.delegates = &per_delegate;
  o.delegate_id = "armnn#0";
  ASSERT_TRUE(first.init(g, o).is_ok());
  Session second;
  o.delegate_id = "armnn#1";
  ASSERT_TRUE(second.init(g, o).is_ok());
  Session global_only;
  ASSERT_TRUE(global_only.init(g).is_ok());

  EXPECT_EQ(rec.runtimes, 1);
  EXPECT_EQ(describe(rec.creation),
            (std::vector<std::string>{"GpuAcc.TuningLevel=2", "GpuAcc.KernelProfilingEnabled=true",
                                      "GpuAcc.TuningFile='/tmp/armnn.tune'"}));
  ASSERT_EQ(rec.optimized.size(), 3u);
  EXPECT_EQ(rec.optimized[0].preferences, "GpuAcc,CpuRef");
  EXPECT_TRUE(rec.optimized[0].bf16);
  EXPECT_FALSE(rec.optimized[0].fp16);
  EXPECT_EQ(rec.optimized[1].preferences, "GpuAcc,CpuRef");
  EXPECT_FALSE(rec.optimized[1].bf16);
  EXPECT_EQ(rec.optimized[2].preferences, "CpuAcc,CpuRef");  // the global value
  EXPECT_FALSE(rec.optimized[2].bf16);
  for (const Recorder::Optimized& r : rec.optimized) {
    EXPECT_FALSE(r.debug);
    EXPECT_FALSE(r.import);
  }

  // Each still runs.
  std::vector<Floats> out;
  EXPECT_TRUE(global_only.run(random_inputs(g, 1), &out).is_ok());
}

// The key form, backend_option.<BackendId>.<Name>, typed: each entry merges into the
// backend_option list (replacing the same name), and ArmNN receives the merged list.
TEST(ArmnnOptions, EntryKeysReachTheCreationOptionsTyped) {
  if (backend().has_runtime()) GTEST_SKIP() << "needs a process of its own (ctest runs one)";
  Recorder rec;
  ASSERT_TRUE(set_global({opt_string("backend_option", "GpuAcc.TuningFile=/tmp/a.tune")}).is_ok());
  ASSERT_TRUE(set_global({opt_int("backend_option.GpuAcc.TuningLevel", 3),
                          opt_bool("backend_option.GpuAcc.KernelProfilingEnabled", true)})
                  .is_ok());
  ASSERT_TRUE(set_global({opt_string("backend_option.GpuAcc.TuningFile", "/tmp/b.tune")}).is_ok());
  BackendOption probe = opt_string("backend_option", "");
  ASSERT_TRUE(get_option(kBackendName, Span<BackendOption>(&probe, 1)).is_ok());
  EXPECT_EQ(
      probe.as_string(),
      "GpuAcc.TuningLevel=3;GpuAcc.KernelProfilingEnabled=true;GpuAcc.TuningFile=/tmp/b.tune");

  Session s;
  ASSERT_TRUE(s.init(relu_case()).is_ok());
  EXPECT_EQ(rec.runtimes, 1);
  EXPECT_EQ(describe(rec.creation),
            (std::vector<std::string>{"GpuAcc.TuningLevel=3", "GpuAcc.KernelProfilingEnabled=true",
                                      "GpuAcc.TuningFile='/tmp/b.tune'"}));
  // Once the runtime exists, an entry is init-only like the whole option.
  Status late = set_global({opt_int("backend_option.GpuAcc.TuningLevel", 1)});
  EXPECT_EQ(late.code(), Error::InvalidState) << late.message();
}

TEST(ArmnnOptions, NothingSetMeansEmptyCreationOptions) {
  if (backend().has_runtime()) GTEST_SKIP() << "needs a process of its own (ctest runs one)";
  Recorder rec;
  Session s;
  ASSERT_TRUE(s.init(relu_case()).is_ok());
  EXPECT_EQ(rec.runtimes, 1);
  EXPECT_TRUE(rec.creation.empty()) << ::testing::PrintToString(describe(rec.creation));
}

TEST(ArmnnOptions, InitOnlyOptionsAfterTheRuntimeExistAreInvalidState) {
  ASSERT_TRUE(set_global({opt_int("tuning_level", 1)}).is_ok());  // before: fine
  Session s;
  ASSERT_TRUE(s.init(relu_case()).is_ok());
  ASSERT_TRUE(backend().has_runtime());
  for (const BackendOption& late :
       {opt_int("tuning_level", 3), opt_int("tuning_level", 1), opt_bool("kernel_profiling", true),
        opt_string("tuning_file", "/tmp/t"),
        opt_string("backend_option", "GpuAcc.TuningLevel=1")}) {
    Status st = set_global({late});
    EXPECT_EQ(st.code(), Error::InvalidState) << late.key_c_str() << ": " << st.message();
    EXPECT_NE(std::string(st.message()).find("before the first"), std::string::npos)
        << st.message();
  }
  // Options that are not init-only still change.
  EXPECT_TRUE(set_global({opt_string("backends", "CpuRef")}).is_ok());
}

TEST(ArmnnOptions, UnknownBackendIdNamesTheOnesArmnnHas) {
  Status st = set_global({opt_string("backends", "CpuRf")});
  EXPECT_EQ(st.code(), Error::OptionInvalidChoice);
  EXPECT_NE(std::string(st.message()).find("did you mean 'CpuRef'"), std::string::npos)
      << st.message();
  EXPECT_NE(std::string(st.message()).find("defines CpuAcc, GpuAcc, CpuRef"), std::string::npos)
      << st.message();
  // At load scope the same check runs at init.
  LoadBackendOptionsMap load;
  ASSERT_TRUE(load.set(kBackendName, kBackends, std::string_view("GpuAcc,NpuAcc")).is_ok());
  RunOptions o;
  o.load = &load;
  Session s;
  st = s.init(relu_case(), o);
  EXPECT_EQ(st.code(), Error::OptionInvalidChoice) << st.message();
  EXPECT_NE(std::string(st.message()).find("'NpuAcc'"), std::string::npos) << st.message();
  // At init the runtime exists, so the message also names what this machine's ArmNN loaded.
  EXPECT_NE(std::string(st.message()).find("this machine's ArmNN has CpuRef"), std::string::npos)
      << st.message();
}

TEST(ArmnnOptions, UnavailablePreferredIdFallsBackAndIsReported) {
  LoadBackendOptionsMap load;
  ASSERT_TRUE(load.set(kBackendName, kBackends, std::string_view("GpuAcc,CpuAcc,CpuRef")).is_ok());
  RunOptions o;
  o.load = &load;
  Session s;
  ASSERT_TRUE(s.init(relu_case(), o).is_ok());
  const DerivedValue* d = s.derived().find("backends");
  ASSERT_NE(d, nullptr);
  EXPECT_STREQ(d->value, "CpuRef");
  EXPECT_NE(std::string(d->reason).find("not loaded here: GpuAcc,CpuAcc"), std::string::npos)
      << d->reason;
  EXPECT_EQ(s.summary().layers_by_backend.at("CpuRef"), s.summary().layers);
  std::vector<Floats> out;
  EXPECT_TRUE(s.run(random_inputs(relu_case(), 2), &out).is_ok());

  // Only unavailable ids: an error naming what ArmNN has.
  LoadBackendOptionsMap gpu_only;
  ASSERT_TRUE(gpu_only.set(kBackendName, kBackends, std::string_view("GpuAcc")).is_ok());
  o.load = &gpu_only;
  Session none;
  Status st = none.init(relu_case(), o);
  EXPECT_EQ(st.code(), Error::DelegateUnavailable);
  EXPECT_NE(std::string(st.message()).find("which has CpuRef"), std::string::npos) << st.message();
}

TEST(ArmnnOptions, AutoBackendsIsReportedResolved) {
  Session s;
  ASSERT_TRUE(s.init(relu_case()).is_ok());
  const DerivedValue* d = s.derived().find("backends");
  ASSERT_NE(d, nullptr);
  EXPECT_STREQ(d->value, "CpuRef");
  EXPECT_NE(std::string(d->reason).find("auto"), std::string::npos) << d->reason;
}

// backends=auto from the machine's ArmNN and the load's policy (GpuAcc exists only on Arm
// machines, so the registry is given here).
TEST(ArmnnOptions, AutoBackendsFollowTheLoadPolicy) {
  const std::vector<std::string> arm = {"CpuRef", "CpuAcc", "GpuAcc"};
  std::string why;
  EXPECT_EQ(auto_backend_preferences(arm, true, "latency", &why),
            (std::vector<std::string>{"GpuAcc", "CpuAcc", "CpuRef"}));
  EXPECT_EQ(why, "auto: ArmNN here has CpuRef,CpuAcc,GpuAcc");
  EXPECT_EQ(auto_backend_preferences(arm, false, "power_saver", &why),
            (std::vector<std::string>{"CpuAcc", "CpuRef"}));
  EXPECT_NE(why.find("GpuAcc left out under power_saver"), std::string::npos) << why;
  // Nothing to leave out on x86, where Debian's ArmNN has CpuRef only.
  EXPECT_EQ(auto_backend_preferences({"CpuRef"}, false, "power_saver", &why),
            (std::vector<std::string>{"CpuRef"}));
  EXPECT_EQ(why.find("left out"), std::string::npos) << why;
}

TEST(ArmnnOptions, ValuesArmnnWouldIgnoreAreRefusedWhenSet) {
  struct Case {
    BackendOption option;
    Error code;
    const char* text;
  };
  const Case cases[] = {
      {opt_int("tuning_level", -1), Error::OptionOutOfRange, "tuning_level"},
      {opt_int("tuning_levle", 1), Error::OptionUnknownKey, "did you mean 'tuning_level'"},
      {opt_string("backend_option", "GpuAcc.TuningLevl=1"), Error::OptionInvalidChoice,
       "did you mean 'TuningLevel'"},
      {opt_string("backend_option", "GpuAc.TuningLevel=1"), Error::OptionInvalidChoice,
       "did you mean 'GpuAcc'"},
      {opt_string("backend_option", "GpuAcc.TuningLevel=-1"), Error::OptionOutOfRange, "[0, 3]"},
      {opt_string("backend_option", "GpuAcc.KernelProfilingEnabled=yes"), Error::OptionTypeMismatch,
       "takes bool"},
      {opt_string("backend_option", "CpuAcc.NumberOfThreads=4"), Error::NotSupported,
       "needs ArmNN 21.05"},
      {opt_string("backend_option", "CpuAcc.FastMathEnabled=true"), Error::NotSupported,
       "needs ArmNN 20.11"},
      {opt_string("backend_option", "TuningLevel"), Error::OptionParseError,
       "<BackendId>.<Name>=<value>"},
      // The same checks through entry keys: the merged list goes through them.
      {opt_int("backend_option.GpuAcc.TuningLevl", 1), Error::OptionInvalidChoice,
       "did you mean 'TuningLevel'"},
      {opt_int("backend_option.GpuAcc.TuningLevel", 4), Error::OptionOutOfRange, "[0, 3]"},
      {opt_string("backend_option.GpuAcc.KernelProfilingEnabled", "yes"), Error::OptionTypeMismatch,
       "takes bool"},
      {opt_int("backend_option.CpuAcc.NumberOfThreads", 4), Error::NotSupported,
       "needs ArmNN 21.05"},
      {opt_string("backend_option.GpuAcc.TuningFile", "a;b"), Error::InvalidArgument,
       "cannot hold ';'"},
      {opt_int("backend_option.", 1), Error::InvalidArgument, "followed by a name"},
      {opt_int("backend_options.GpuAcc.TuningLevel", 1), Error::OptionUnknownKey, "unknown"},
  };
  for (const Case& c : cases) {
    Status st = set_global({c.option});
    EXPECT_EQ(st.code(), c.code) << c.option.key_c_str() << ": " << st.message();
    EXPECT_NE(std::string(st.message()).find(c.text), std::string::npos) << st.message();
  }
  // Nothing was stored: all of them were refused whole.
  BackendOption probe = opt_string("backend_option", "");
  ASSERT_TRUE(get_option(kBackendName, Span<BackendOption>(&probe, 1)).is_ok());
  EXPECT_EQ(probe.as_string(), "");
}

TEST(ArmnnOptions, OptimizerOptionsArmnn2008CannotTakeAreInitErrors) {
  struct Case {
    BackendOption option;
    Error code;
    const char* text;
  };
  const Case cases[] = {
      {opt_bool("fast_math", true), Error::NotSupported, "needs ArmNN 20.11"},
      {opt_int("num_threads", 2), Error::NotSupported, "needs ArmNN 21.05"},
  };
  for (const Case& c : cases) {
    LoadBackendOptionsMap load;
    ASSERT_TRUE(load.set_options(kBackendName, Span<const BackendOption>(&c.option, 1)).is_ok());
    RunOptions o;
    o.load = &load;
    Session s;
    Status st = s.init(relu_case(), o);
    EXPECT_EQ(st.code(), c.code) << st.message();
    EXPECT_NE(std::string(st.message()).find(c.text), std::string::npos) << st.message();
  }
  LoadBackendOptionsMap both;
  ASSERT_TRUE(both.set(kBackendName, kReduceFp32ToFp16, true).is_ok());
  ASSERT_TRUE(both.set(kBackendName, kReduceFp32ToBf16, true).is_ok());
  RunOptions o;
  o.load = &both;
  Session s;
  EXPECT_EQ(s.init(relu_case(), o).code(), Error::InvalidArgument);
}

TEST(ArmnnOptions, PassThroughContradictingItsTypedOptionIsRefused) {
  if (backend().has_runtime()) GTEST_SKIP() << "needs a process of its own (ctest runs one)";
  ASSERT_TRUE(
      set_global({opt_int("tuning_level", 2), opt_string("backend_option", "GpuAcc.TuningLevel=3")})
          .is_ok());
  Session s;
  Status st = s.init(relu_case());
  EXPECT_EQ(st.code(), Error::InvalidArgument) << st.message();
  EXPECT_NE(std::string(st.message()).find("contradicts tuning_level"), std::string::npos)
      << st.message();
  EXPECT_FALSE(backend().has_runtime());
}

TEST(ArmnnOptions, ProfilingReportsEachExecute) {
  LoadBackendOptionsMap load;
  ASSERT_TRUE(load.set(kBackendName, kProfiling, true).is_ok());
  RunOptions o;
  o.load = &load;
  Session s;
  ASSERT_TRUE(s.init(relu_case(), o).is_ok());
  ProfileEvent storage[4];
  ProfileBuffer profile(Span<ProfileEvent>(storage, 4));
  std::vector<Floats> out;
  ASSERT_TRUE(s.run(random_inputs(relu_case(), 3), &out, nullptr, &profile).is_ok());
  ASSERT_EQ(profile.events().size(), 1u);
  EXPECT_STREQ(profile.events()[0].name, "armnn:EnqueueWorkload");
}

}  // namespace
}  // namespace tessera::armnn_backend::testing
