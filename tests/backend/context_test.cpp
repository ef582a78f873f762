// BackendInitContext, BackendExecutionContext, ExecuteOptions and ProfileBuffer.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "tessera/backend/context.h"
#include "tessera/backend/device_info.h"
#include "tessera/backend/execute_options.h"
#include "tessera/backend/resolution.h"
#include "tests/backend/test_support.h"

namespace tessera::test {
namespace {

class Contexts : public ::testing::Test {
 protected:
  void SetUp() override {
    LoadBackendOptionsMap load;
    ASSERT_OK(load.set("xnnpack", kNumThreads, 4));
    ASSERT_OK(load.set("xnnpack", kCacheDir, "/data/k"));
    ASSERT_OK(load.set("xnnpack", kPerfMode, EnumValue{"throughput"}));
    ASSERT_OK(resolve_options("xnnpack", stub_.backend(), "xnnpack#0", {}, &load, nullptr,
                              Validation::Strict, &resolved_));
  }
  ScopedStub stub_{"xnnpack"};
  ResolvedOptions resolved_;
};

TEST_F(Contexts, InitContextReadsOptionsByKeyAndByTypedKey) {
  SymbolValue symbols[] = {{"batch", 4}, {"seq_len", 128}};
  BackendInitContext::Params params;
  params.options = &resolved_;
  params.method_name = "forward";
  params.symbols = symbols;
  BackendInitContext ctx(params);

  EXPECT_EQ(ctx.backend_name(), "xnnpack");
  EXPECT_EQ(ctx.delegate_id(), "xnnpack#0");
  EXPECT_EQ(ctx.method_name(), "forward");
  EXPECT_EQ(*ctx.get(kNumThreads), 4);
  EXPECT_EQ(*ctx.get_runtime_spec<int64_t>("num_threads"), 4);
  EXPECT_EQ(*ctx.get_runtime_spec<int>("num_threads"), 4);
  EXPECT_STREQ(*ctx.get_runtime_spec<const char*>("cache_dir"), "/data/k");
  EXPECT_STREQ(*ctx.get_runtime_spec<const char*>("perf_mode"), "throughput");
  EXPECT_EQ(ctx.get_runtime_spec<EnumValue>("perf_mode")->index, 1);
  EXPECT_TRUE(*ctx.get_runtime_spec<bool>("weight_cache"));

  Result<bool> mismatch = ctx.get_runtime_spec<bool>("num_threads");
  EXPECT_EQ(mismatch.error(), Error::OptionTypeMismatch);
  EXPECT_STREQ(mismatch.status().message(), "xnnpack: option 'num_threads' is int, not bool");
  Result<int64_t> missing = ctx.get_runtime_spec<int64_t>("num_thread");
  EXPECT_EQ(missing.error(), Error::NotFound);
  EXPECT_STREQ(missing.status().message(),
               "xnnpack: the schema has no option 'num_thread' (did you mean 'num_threads'?)");
  EXPECT_EQ(ctx.get_runtime_spec<const char*>("num_threads").error(), Error::OptionTypeMismatch);
}

TEST_F(Contexts, InitContextSymbolsConstantsAndDevice) {
  SymbolValue symbols[] = {{"batch", 4}, {"seq_len", 128}};
  static const uint8_t kWeights[] = {1, 2, 3};
  BackendInitContext::Params params;
  params.options = &resolved_;
  params.symbols = symbols;
  params.constants.fn = [](void*, uint32_t index) -> Result<Span<const uint8_t>> {
    if (index != 0) return Status::error(Error::NotFound, "no constant %u", index);
    return Span<const uint8_t>(kWeights);
  };
  DeviceInfo fake;
  fake.usable_cpus = 8;
  fake.usable_performance_cores = 6;
  params.device_info = &fake;
  BackendInitContext ctx(params);

  EXPECT_EQ(*ctx.symbol_value("batch"), 4);
  Result<int64_t> typo = ctx.symbol_value("btach");
  EXPECT_EQ(typo.error(), Error::NotFound);
  EXPECT_STREQ(typo.status().message(),
               "xnnpack#0: no symbolic dim 'btach' (did you mean 'batch'?; known: batch, seq_len)");
  EXPECT_EQ(ctx.constant(0)->size(), 3u);
  EXPECT_EQ(ctx.constant(5).error(), Error::NotFound);
  EXPECT_EQ(ctx.device_info().recommended_threads(), 6u);
  // Without a runtime decision, the policy is latency on the given machine.
  EXPECT_EQ(ctx.policy().effective, Policy::Latency);
  EXPECT_EQ(ctx.policy().threads, 6u);
  DerivedValues derived;
  params.derived = &derived;
  BackendInitContext reporting(params);
  reporting.report_derived("num_threads", "6", "auto: %u cores", 6u);
  ASSERT_NE(derived.find("num_threads"), nullptr);
  EXPECT_STREQ(derived.find("num_threads")->value, "6");
  EXPECT_STREQ(derived.find("num_threads")->reason, "auto: 6 cores");
  EXPECT_FALSE(reporting.is_default("num_threads"));  // set at load scope
  EXPECT_TRUE(reporting.is_default("weight_cache"));

  BackendInitContext::Params bare;
  bare.options = &resolved_;
  BackendInitContext no_constants(bare);
  EXPECT_EQ(no_constants.constant(0).error(), Error::NotSupported);
  EXPECT_GE(no_constants.device_info().recommended_threads(), 1u);  // the real machine
}

TEST_F(Contexts, ExecutionContextPrefersThisCallsValues) {
  ExecuteOptions execute;
  ASSERT_OK(execute.set("xnnpack", kNumThreads, 1));
  ASSERT_OK(execute.set("xnnpack", kBatchHint, 8));
  ExecuteOptionView view;
  ASSERT_OK(select_execute_options(execute, "xnnpack", kTestSchema, &view));
  ASSERT_EQ(view.options.size(), 2u);
  BackendExecutionContext ctx(&resolved_, view);
  EXPECT_EQ(*ctx.get(kNumThreads), 1);
  EXPECT_EQ(ctx.source("num_threads"), OptionLevel::Execute);
  EXPECT_EQ(*ctx.get(kBatchHint), 8);
  EXPECT_EQ(ctx.get(kPerfMode)->name, "throughput");  // load-resolved fallback
  EXPECT_EQ(ctx.source("perf_mode"), OptionLevel::Load);
  EXPECT_EQ(ctx.source("weight_cache"), OptionLevel::Default);

  BackendExecutionContext plain(&resolved_);
  EXPECT_EQ(*plain.get(kNumThreads), 4);
  EXPECT_EQ(*plain.get(kBatchHint), 1);  // schema default
}

TEST_F(Contexts, ExecuteOptionsAreCheckedWhenSet) {
  ExecuteOptions execute;
  Status scope = execute.set("xnnpack", kWeightCache, false);
  EXPECT_EQ(scope.code(), Error::OptionWrongScope);
  EXPECT_STREQ(scope.message(),
               "xnnpack: option 'weight_cache' cannot be set at execute scope (allowed: "
               "compile_spec, global, load, delegate)");
  Status backend = execute.set("xnnpak", kNumThreads, 1);
  EXPECT_EQ(backend.code(), Error::OptionUnknownBackend);
  Status range = execute.set("xnnpack", kBatchHint, 100);
  EXPECT_EQ(range.code(), Error::OptionOutOfRange);
  EXPECT_TRUE(execute.empty());
}

TEST_F(Contexts, SelectExecuteOptionsValidatesEveryCall) {
  ExecuteOptions execute;
  // Options forwarded without a check are still validated when selected.
  BackendOption wrong = opt(kWeightCache, true);
  ASSERT_OK(execute.set_options_unchecked("xnnpack", Span<const BackendOption>(&wrong, 1)));
  ExecuteOptionView view;
  Status s = select_execute_options(execute, "xnnpack", kTestSchema, &view);
  EXPECT_EQ(s.code(), Error::OptionWrongScope);
  EXPECT_TRUE(view.empty());

  // Another backend's options are not this backend's business.
  ASSERT_OK(select_execute_options(execute, "opencl", kTestSchema, &view));
  EXPECT_TRUE(view.empty());
  // The empty set costs nothing and selects nothing.
  ASSERT_OK(select_execute_options(ExecuteOptions::none(), "xnnpack", kTestSchema, &view));
  EXPECT_TRUE(view.empty());
}

TEST_F(Contexts, ExecuteOptionsCapacity) {
  ExecuteOptions execute;
  for (int i = 0; i < 8; ++i) {
    BackendOption o = opt(kNumThreads, i);
    ASSERT_OK(
        execute.set_options_unchecked(std::string(1, 'b') + std::to_string(i), Span<const BackendOption>(&o, 1)));
  }
  BackendOption o = opt(kNumThreads, 1);
  EXPECT_EQ(execute.set_options_unchecked("b8", Span<const BackendOption>(&o, 1)).code(),
            Error::MemoryAllocationFailed);
  EXPECT_EQ(execute.size(), 8u);
  EXPECT_EQ(execute.backend_at(3), "b3");
  execute.clear();
  EXPECT_TRUE(execute.empty());
}

TEST_F(Contexts, ReportEventFillsTheCallersBuffer) {
  ProfileEvent storage[2];
  ProfileBuffer profile(storage);
  BackendExecutionContext ctx(&resolved_, {}, &profile);
  ctx.report_event("pack_weights", 0.5);
  ctx.report_event("a_very_long_event_name_that_will_not_fit_in_forty_seven_chars", 1.5);
  ctx.report_event("dropped", 2.0);
  ASSERT_EQ(profile.events().size(), 2u);
  EXPECT_STREQ(profile.events()[0].name, "pack_weights");
  EXPECT_DOUBLE_EQ(profile.events()[0].ms, 0.5);
  EXPECT_EQ(std::strlen(profile.events()[1].name), 47u);
  EXPECT_EQ(profile.dropped(), 1u);
  BackendExecutionContext no_sink(&resolved_);
  no_sink.report_event("ignored", 1.0);  // no buffer: nothing happens
}

TEST_F(Contexts, StubRecordsExecuteOptionsAndCopiesTensors) {
  ExecuteOptions execute;
  ASSERT_OK(execute.set("xnnpack", kBatchHint, 2));
  ExecuteOptionView view;
  ASSERT_OK(select_execute_options(execute, "xnnpack", kTestSchema, &view));
  BackendExecutionContext ctx(&resolved_, view);
  float in_data[4] = {1, 2, 3, 4};
  float out_data[4] = {};
  int64_t sizes[] = {4};
  EValue in{Tensor(ScalarType::Float32, sizes, in_data)};
  EValue out{Tensor(ScalarType::Float32, sizes, out_data)};
  EValue* args[] = {&in, &out};
  ASSERT_OK(stub_->execute(ctx, nullptr, args));
  EXPECT_EQ(out_data[3], 4.0f);
  EXPECT_EQ(*stub_->last_execute_options().get(kBatchHint), 2);
  EXPECT_EQ(stub_->execute_count(), 1);
}

}  // namespace
}  // namespace tessera::test
