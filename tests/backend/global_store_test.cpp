// The global option store: set/get, atomicity, the backend's hook, and the lifecycle with
// init-only options.
#include <gtest/gtest.h>

#include <string>

#include "tessera/backend/context.h"
#include "tessera/backend/global_options.h"
#include "tessera/backend/options.h"
#include "tessera/backend/resolution.h"
#include "tests/backend/test_support.h"

namespace tessera::test {
namespace {

class GlobalStore : public ::testing::Test {
 protected:
  ScopedStub opencl_{"opencl"};
};

Result<int64_t> global_int(std::string_view backend, const OptionKey<int64_t>& key) {
  BackendOptions<1> query;
  TESSERA_RETURN_IF_ERROR(query.set(key, 0));
  TESSERA_RETURN_IF_ERROR(get_option(backend, query.mutable_view()));
  return query.get(key);
}

TEST_F(GlobalStore, SetThenGet) {
  BackendOptions<4> opts;
  ASSERT_OK(opts.set(kNumThreads, 3));
  ASSERT_OK(opts.set(kCacheDir, "/data/cache"));
  ASSERT_OK(set_option("opencl", opts.view()));

  BackendOptions<4> query;
  ASSERT_OK(query.set(kNumThreads, 0));
  ASSERT_OK(query.set(kCacheDir, ""));
  ASSERT_OK(query.set(kRatio, 0.0));  // never set: the schema default comes back
  ASSERT_OK(get_option("opencl", query.mutable_view()));
  EXPECT_EQ(*query.get(kNumThreads), 3);
  EXPECT_EQ(*query.get(kCacheDir), "/data/cache");
  EXPECT_DOUBLE_EQ(*query.get(kRatio), 0.5);
}

TEST_F(GlobalStore, TheBackendHookSeesTheValidatedSet) {
  BackendOptions<4> opts;
  ASSERT_OK(opts.set(kNumThreads, 3));
  ASSERT_OK(opts.set(kPerfMode, EnumValue{"power_saver"}));
  ASSERT_OK(set_option("opencl", opts.view()));
  BackendOptions<kMaxSchemaOptions> seen = opencl_->last_set_options();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(*seen.get(kNumThreads), 3);
  EXPECT_EQ(seen.get(kPerfMode)->index, 2);  // enum indexes are filled in before the hook
}

TEST_F(GlobalStore, UnknownBackendAndKeyAreErrors) {
  BackendOption o = opt(kNumThreads, 1);
  Status backend = set_option("opencll", Span<const BackendOption>(&o, 1));
  EXPECT_EQ(backend.code(), Error::OptionUnknownBackend);
  EXPECT_EQ(
      std::string(backend.message()).rfind("unknown backend 'opencll' (did you mean 'opencl'?", 0),
      0u)
      << backend.message();

  BackendOptions<1> typo;
  ASSERT_OK(typo.set_int("num_thread", 2));
  Status key = set_option("opencl", typo.view());
  EXPECT_STREQ(key.message(), "opencl: unknown option 'num_thread' (did you mean 'num_threads'?)");
  Status get = get_option("opencl", typo.mutable_view());
  EXPECT_EQ(get.code(), Error::OptionUnknownKey);
}

TEST_F(GlobalStore, GlobalScopeIsChecked) {
  BackendOption o = opt(kBatchHint, 2);  // execute-only
  Status s = set_option("opencl", Span<const BackendOption>(&o, 1));
  EXPECT_EQ(s.code(), Error::OptionWrongScope);
  EXPECT_STREQ(s.message(),
               "opencl: option 'batch_hint' cannot be set at global scope (allowed: execute)");
}

TEST_F(GlobalStore, ASetIsAppliedWholeOrNotAtAll) {
  BackendOptions<4> first;
  ASSERT_OK(first.set(kNumThreads, 2));
  ASSERT_OK(first.set(kCacheDir, "/before"));
  ASSERT_OK(set_option("opencl", first.view()));
  int hook_calls = opencl_->set_option_count();

  BackendOptions<4> mixed;
  ASSERT_OK(mixed.set(kNumThreads, 4));       // valid
  ASSERT_OK(mixed.set(kCacheDir, "/after"));  // valid
  ASSERT_OK(mixed.set(kRatio, 7.0));          // out of range: the whole set fails
  Status s = set_option("opencl", mixed.view());
  EXPECT_EQ(s.code(), Error::OptionOutOfRange);
  EXPECT_EQ(*global_int("opencl", kNumThreads), 2);
  EXPECT_EQ(opencl_->set_option_count(), hook_calls);  // the backend never saw it
  ResolvedOptions r;
  ASSERT_OK(resolve_options("opencl", opencl_.backend(), "opencl#0", {}, nullptr, nullptr,
                            Validation::Strict, &r));
  EXPECT_EQ(*r.get(kCacheDir), "/before");
}

TEST_F(GlobalStore, ABackendVetoLeavesEverythingUnchanged) {
  BackendOption o = opt(kNumThreads, 2);
  ASSERT_OK(set_option("opencl", Span<const BackendOption>(&o, 1)));
  opencl_->on_set_option = [](Span<const BackendOption>) {
    return Status(Error::NotSupported, "opencl: cannot resize the queue pool now");
  };
  BackendOption change = opt(kNumThreads, 6);
  Status s = set_option("opencl", Span<const BackendOption>(&change, 1));
  EXPECT_EQ(s.code(), Error::NotSupported);
  EXPECT_EQ(*global_int("opencl", kNumThreads), 2);
  opencl_->on_set_option = nullptr;
}

TEST_F(GlobalStore, LastOfDuplicateKeysWins) {
  BackendOption twice[] = {opt(kNumThreads, 1), opt(kNumThreads, 5)};
  ASSERT_OK(set_option("opencl", twice));
  EXPECT_EQ(*global_int("opencl", kNumThreads), 5);
}

TEST_F(GlobalStore, GetOptionHookMayOverwriteWithLiveValues) {
  opencl_->on_get_option = [](Span<BackendOption> options) {
    for (BackendOption& o : options) {
      if (o.key() == "num_threads") o.set_int(42);
    }
    return Status::ok();
  };
  EXPECT_EQ(*global_int("opencl", kNumThreads), 42);
  opencl_->on_get_option = nullptr;
}

TEST_F(GlobalStore, LifecycleRegisteredConfiguredInitialized) {
  EXPECT_EQ(*backend_lifecycle("opencl"), BackendLifecycle::Registered);
  BackendOption o = opt(kNumThreads, 2);
  ASSERT_OK(set_option("opencl", Span<const BackendOption>(&o, 1)));
  EXPECT_EQ(*backend_lifecycle("opencl"), BackendLifecycle::Configured);
  ASSERT_OK(mark_backend_initialized("opencl", "test"));
  EXPECT_EQ(*backend_lifecycle("opencl"), BackendLifecycle::Initialized);
  EXPECT_STREQ(backend_lifecycle_name(BackendLifecycle::Initialized), "initialized");
  EXPECT_EQ(backend_lifecycle("nope").error(), Error::NotFound);
  ASSERT_OK(reset_backend_options("opencl"));
  EXPECT_EQ(*backend_lifecycle("opencl"), BackendLifecycle::Registered);
}

TEST_F(GlobalStore, InitOnlyOptionsLockWhenTheBackendInitialises) {
  // Before initialisation init-only options are ordinary.
  BackendOption platform = opt(kPlatform, 1);
  ASSERT_OK(set_option("opencl", Span<const BackendOption>(&platform, 1)));

  // The first delegate load initialises the shared state.
  ResolvedOptions r;
  ASSERT_OK(resolve_options("opencl", opencl_.backend(), "opencl#0", {}, nullptr, nullptr,
                            Validation::Strict, &r));
  BackendInitContext::Params params;
  params.options = &r;
  params.method_name = "forward";
  BackendInitContext ctx(params);
  ASSERT_OK(ctx.mark_backend_initialized());
  ASSERT_OK(ctx.mark_backend_initialized("a later reason is ignored"));

  BackendOption change = opt(kPlatform, 2);
  Status s = set_option("opencl", Span<const BackendOption>(&change, 1));
  EXPECT_EQ(s.code(), Error::InvalidState);
  EXPECT_STREQ(s.message(),
               "opencl: option 'platform' is init-only and was locked when the backend "
               "initialised its shared state (first delegate load: method 'forward', delegate "
               "'opencl#0'); requested 2 differs from the locked 1");
  EXPECT_EQ(*global_int("opencl", kPlatform), 1);

  // Re-setting the locked value is harmless; other options stay settable.
  EXPECT_OK(set_option("opencl", Span<const BackendOption>(&platform, 1)));
  BackendOption threads = opt(kNumThreads, 8);
  EXPECT_OK(set_option("opencl", Span<const BackendOption>(&threads, 1)));

  // A set mixing a locked change with a valid change applies neither.
  BackendOption mixed[] = {opt(kNumThreads, 3), opt(kDeviceType, EnumValue{"gpu"})};
  EXPECT_EQ(set_option("opencl", mixed).code(), Error::InvalidState);
  EXPECT_EQ(*global_int("opencl", kNumThreads), 8);
}

TEST_F(GlobalStore, NewGlobalValuesReachLaterLoadsOnly) {
  BackendOption two = opt(kNumThreads, 2);
  ASSERT_OK(set_option("opencl", Span<const BackendOption>(&two, 1)));
  ResolvedOptions before;
  ASSERT_OK(resolve_options("opencl", opencl_.backend(), "opencl#0", {}, nullptr, nullptr,
                            Validation::Strict, &before));
  BackendOption five = opt(kNumThreads, 5);
  ASSERT_OK(set_option("opencl", Span<const BackendOption>(&five, 1)));
  ResolvedOptions after;
  ASSERT_OK(resolve_options("opencl", opencl_.backend(), "opencl#1", {}, nullptr, nullptr,
                            Validation::Strict, &after));
  EXPECT_EQ(*before.get(kNumThreads), 2);
  EXPECT_EQ(*after.get(kNumThreads), 5);
  EXPECT_EQ(after.source(0), OptionLevel::Global);
}

}  // namespace
}  // namespace tessera::test
