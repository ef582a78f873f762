// Option resolution: the whole precedence table, per-delegate and per-instance values (the
// RFC's four-sets-of-arguments case), validation at every scope, and init-only locking.
#include <gtest/gtest.h>

#include <string>

#include "tessera/backend/context.h"
#include "tessera/backend/execute_options.h"
#include "tessera/backend/global_options.h"
#include "tessera/backend/options.h"
#include "tessera/backend/registry.h"
#include "tessera/backend/resolution.h"
#include "tessera/backend/resolved_options.h"
#include "tests/backend/test_support.h"

namespace tessera::test {
namespace {

class Resolution : public ::testing::Test {
 protected:
  Status resolve(std::string_view delegate_id, Span<const CompileSpec> specs,
                 const LoadBackendOptionsMap* load, const DelegateOptionsMap* delegates,
                 ResolvedOptions* out, Validation validation = Validation::Strict) {
    return resolve_options("xnnpack", stub_.backend(), delegate_id, specs, load, delegates,
                           validation, out);
  }
  ScopedStub stub_{"xnnpack"};
};

TEST_F(Resolution, DefaultsOnly) {
  ResolvedOptions r;
  ASSERT_OK(resolve("xnnpack#0", {}, nullptr, nullptr, &r));
  ASSERT_EQ(r.size(), std::size(kTestSchema));
  for (size_t i = 0; i < r.size(); ++i) EXPECT_EQ(r.source(i), OptionLevel::Default);
  EXPECT_EQ(*r.get(kNumThreads), 0);
  EXPECT_TRUE(*r.get(kWeightCache));
  EXPECT_EQ(*r.get(kCacheDir), "");
  EXPECT_EQ(r.get(kPerfMode)->name, "latency");
  EXPECT_EQ(r.get(kPerfMode)->index, 0);
  EXPECT_DOUBLE_EQ(*r.get(kRatio), 0.5);
  EXPECT_EQ(r.backend(), "xnnpack");
  EXPECT_EQ(r.delegate_id(), "xnnpack#0");
}

// Every subset of the five scopes above the default sets num_threads to its own level; the
// highest scope present must win, and report itself as the source.
TEST_F(Resolution, PrecedenceTable) {
  constexpr int kCompile = 1, kGlobal = 2, kLoad = 4, kDelegate = 8, kExecute = 16;
  for (int mask = 0; mask < 32; ++mask) {
    SCOPED_TRACE("scopes mask " + std::to_string(mask));
    ASSERT_OK(reset_backend_options("xnnpack"));
    CompileSpec spec{"num_threads", "1"};
    Span<const CompileSpec> specs;
    if (mask & kCompile) specs = Span<const CompileSpec>(&spec, 1);
    if (mask & kGlobal) {
      BackendOption g = opt(kNumThreads, 2);
      ASSERT_OK(set_option("xnnpack", Span<const BackendOption>(&g, 1)));
    }
    LoadBackendOptionsMap load;
    if (mask & kLoad) ASSERT_OK(load.set("xnnpack", kNumThreads, 3));
    DelegateOptionsMap delegates;
    if (mask & kDelegate) ASSERT_OK(delegates.set("xnnpack#0", kNumThreads, 4));
    ExecuteOptions execute;
    if (mask & kExecute) ASSERT_OK(execute.set("xnnpack", kNumThreads, 5));

    ResolvedOptions r;
    ASSERT_OK(resolve("xnnpack#0", specs, &load, &delegates, &r));
    ExecuteOptionView view;
    ASSERT_OK(select_execute_options(execute, "xnnpack", kTestSchema, &view));
    BackendExecutionContext ctx(&r, view);

    int64_t expected = 0;
    OptionLevel source = OptionLevel::Default;
    if (mask & kCompile) expected = 1, source = OptionLevel::CompileSpec;
    if (mask & kGlobal) expected = 2, source = OptionLevel::Global;
    if (mask & kLoad) expected = 3, source = OptionLevel::Load;
    if (mask & kDelegate) expected = 4, source = OptionLevel::Delegate;
    int64_t at_load = expected;
    OptionLevel load_source = source;
    if (mask & kExecute) expected = 5, source = OptionLevel::Execute;

    EXPECT_EQ(*r.get(kNumThreads), at_load);
    EXPECT_EQ(r.source(0), load_source);
    EXPECT_EQ(*ctx.get(kNumThreads), expected);
    EXPECT_EQ(ctx.source("num_threads"), source);
  }
  ASSERT_OK(reset_backend_options("xnnpack"));
}

TEST_F(Resolution, EachKeyKeepsItsOwnSource) {
  CompileSpec specs[] = {{"weight_cache", "false"}, {"ratio", "0.25"}, {"num_threads", "3"}};
  BackendOption global = opt(kRatio, 0.75);
  ASSERT_OK(set_option("xnnpack", Span<const BackendOption>(&global, 1)));
  LoadBackendOptionsMap load;
  ASSERT_OK(load.set("xnnpack", kCacheDir, "/cache"));
  DelegateOptionsMap delegates;
  ASSERT_OK(delegates.set("xnnpack#0", kPerfMode, EnumValue{"throughput"}));
  ResolvedOptions r;
  ASSERT_OK(resolve("xnnpack#0", specs, &load, &delegates, &r));
  auto source_of = [&](const char* key) { return r.source(static_cast<size_t>(r.find(key))); };
  EXPECT_EQ(source_of("weight_cache"), OptionLevel::CompileSpec);
  EXPECT_FALSE(*r.get(kWeightCache));
  EXPECT_EQ(source_of("ratio"), OptionLevel::Global);
  EXPECT_DOUBLE_EQ(*r.get(kRatio), 0.75);
  EXPECT_EQ(source_of("num_threads"), OptionLevel::CompileSpec);
  EXPECT_EQ(source_of("cache_dir"), OptionLevel::Load);
  EXPECT_EQ(source_of("perf_mode"), OptionLevel::Delegate);
  EXPECT_EQ(r.get(kPerfMode)->index, 1);
  EXPECT_EQ(source_of("device_type"), OptionLevel::Default);

  std::string explained = explain_options(r);
  EXPECT_NE(explained.find("xnnpack#0  cache_dir = \"/cache\"  (load)"), std::string::npos)
      << explained;
  EXPECT_NE(explained.find("xnnpack#0  perf_mode = throughput  (delegate)"), std::string::npos);
  ASSERT_OK(reset_backend_options("xnnpack"));
}

// Values from the C++ API have no origin (reports say plain "load"), unless the caller labels
// them; compile specs and defaults have none.
TEST_F(Resolution, OriginsAreCarriedFromEachScope) {
  const CompileSpec specs[] = {{"weight_cache", "false"}};
  BackendOptions<2> global;
  ASSERT_OK(global.set(kRatio, 0.75));
  ASSERT_OK(global.set_origin("device profile"));
  ASSERT_OK(set_option("xnnpack", global.view()));
  LoadBackendOptionsMap load;
  ASSERT_OK(load.set("xnnpack", kCacheDir, "/cache"));
  BackendOption labelled;
  ASSERT_OK(labelled.set_key("num_threads"));
  labelled.set_int(3);
  ASSERT_OK(labelled.set_origin("settings.json:7"));
  DelegateOptionsMap delegates;
  ASSERT_OK(delegates.set_options("xnnpack#0", Span<const BackendOption>(&labelled, 1)));
  ResolvedOptions r;
  ASSERT_OK(resolve("xnnpack#0", specs, &load, &delegates, &r));
  auto origin_of = [&](const char* key) { return r.origin(static_cast<size_t>(r.find(key))); };
  EXPECT_EQ(origin_of("weight_cache"), "");
  EXPECT_EQ(origin_of("ratio"), "device profile");
  EXPECT_EQ(origin_of("cache_dir"), "");
  EXPECT_EQ(origin_of("num_threads"), "settings.json:7");
  EXPECT_EQ(origin_of("perf_mode"), "");
  std::string explained = explain_options(r);
  EXPECT_NE(explained.find("cache_dir = \"/cache\"  (load)\n"), std::string::npos) << explained;
  EXPECT_NE(explained.find("ratio = 0.75  (global (device profile))"), std::string::npos);
  EXPECT_NE(explained.find("num_threads = 3  (delegate (settings.json:7))"), std::string::npos);
  EXPECT_NE(explained.find("weight_cache = false  (compile_spec)"), std::string::npos);
  char buf[32];
  EXPECT_STREQ(format_option_source(OptionLevel::Execute, "options.toml:12", buf, sizeof buf),
               "execute (options.toml:12)");
  EXPECT_STREQ(format_option_source(OptionLevel::Load, "", buf, sizeof buf), "load");
  EXPECT_STREQ(format_option_source(OptionLevel::Load, "a-very-long-origin-label", buf, 12),
               "load (a-ver");
  ASSERT_OK(reset_backend_options("xnnpack"));
}

TEST_F(Resolution, TwoDelegatesOfOneBackendGetDifferentValues) {
  DelegateOptionsMap delegates;
  ASSERT_OK(delegates.set("xnnpack#0", kNumThreads, 1));
  ASSERT_OK(delegates.set("xnnpack#1", kNumThreads, 6));
  ResolvedOptions first, second, third;
  ASSERT_OK(resolve("xnnpack#0", {}, nullptr, &delegates, &first));
  ASSERT_OK(resolve("xnnpack#1", {}, nullptr, &delegates, &second));
  ASSERT_OK(resolve("xnnpack#2", {}, nullptr, &delegates, &third));
  EXPECT_EQ(*first.get(kNumThreads), 1);
  EXPECT_EQ(*second.get(kNumThreads), 6);
  EXPECT_EQ(*third.get(kNumThreads), 0);
  EXPECT_EQ(third.source(0), OptionLevel::Default);
}

// The RFC's case: one Method loaded twice, delegating to backends A and B, gets four different
// sets of arguments: 1-A, 1-B, 2-A, 2-B.
TEST(ResolutionRfc, FourSetsOfArgumentsForTwoInstancesTimesTwoBackends) {
  ScopedStub a("backend_a");
  ScopedStub b("backend_b");
  LoadBackendOptionsMap instance1, instance2;
  ASSERT_OK(instance1.set("backend_a", kNumThreads, 1));
  ASSERT_OK(instance1.set("backend_b", kNumThreads, 2));
  ASSERT_OK(instance1.set("backend_b", kCacheDir, "/instance1"));
  ASSERT_OK(instance2.set("backend_a", kNumThreads, 3));
  ASSERT_OK(instance2.set("backend_b", kNumThreads, 4));
  ASSERT_OK(instance2.set("backend_b", kCacheDir, "/instance2"));

  struct Case {
    const LoadBackendOptionsMap* load;
    ScopedStub* stub;
    int64_t threads;
  } cases[] = {{&instance1, &a, 1}, {&instance1, &b, 2}, {&instance2, &a, 3}, {&instance2, &b, 4}};
  for (const Case& c : cases) {
    std::string id = c.stub->name() + "#0";
    ResolvedOptions r;
    ASSERT_OK(resolve_options(c.stub->name(), c.stub->backend(), id, {}, c.load, nullptr,
                              Validation::Strict, &r));
    // The backend sees the values through its init context.
    BackendInitContext::Params params;
    params.options = &r;
    params.method_name = "forward";
    BackendInitContext ctx(params);
    Result<DelegateHandle*> handle = c.stub->backend().init(ctx, nullptr, {});
    ASSERT_TRUE(handle.ok());
    EXPECT_EQ(*c.stub->backend().last_init_options().get(kNumThreads), c.threads);
    EXPECT_EQ(*ctx.get_runtime_spec<int64_t>("num_threads"), c.threads);
    c.stub->backend().destroy(*handle);
  }
}

TEST_F(Resolution, CompileSpecErrorsSayTheyCameFromTheProgram) {
  ResolvedOptions r;
  CompileSpec unknown[] = {{"num_thread", "4"}};
  Status s = resolve("xnnpack#0", unknown, nullptr, nullptr, &r);
  EXPECT_EQ(s.code(), Error::OptionUnknownKey);
  EXPECT_STREQ(s.message(),
               "compile spec: xnnpack: unknown option 'num_thread' (did you mean 'num_threads'?)");
  CompileSpec bad_value[] = {{"num_threads", "many"}};
  Status v = resolve("xnnpack#0", bad_value, nullptr, nullptr, &r);
  EXPECT_EQ(v.code(), Error::OptionTypeMismatch);
  EXPECT_STREQ(v.message(), "compile spec: xnnpack: option 'num_threads' expects int, got 'many'");
  CompileSpec wrong_scope[] = {{"cache_dir", "/x"}};
  Status w = resolve("xnnpack#0", wrong_scope, nullptr, nullptr, &r);
  EXPECT_EQ(w.code(), Error::OptionWrongScope);
  EXPECT_STREQ(w.message(),
               "xnnpack: option 'cache_dir' cannot be set at compile_spec scope (allowed: "
               "global, load, delegate)");
}

TEST_F(Resolution, LoadAndDelegateValuesAreValidatedAtTheirScope) {
  ResolvedOptions r;
  LoadBackendOptionsMap load;
  ASSERT_OK(load.set("xnnpack", kNumThreads, 999));
  Status range = resolve("xnnpack#0", {}, &load, nullptr, &r);
  EXPECT_EQ(range.code(), Error::OptionOutOfRange);
  EXPECT_STREQ(range.message(), "xnnpack: option 'num_threads' = 999 is out of range [0, 256]");

  LoadBackendOptionsMap execute_only;
  ASSERT_OK(execute_only.set("xnnpack", kBatchHint, 2));
  EXPECT_EQ(resolve("xnnpack#0", {}, &execute_only, nullptr, &r).code(), Error::OptionWrongScope);

  DelegateOptionsMap delegates;
  ASSERT_OK(delegates.set("xnnpack#0", kPlatform, 1));  // platform: global and load only
  Status scope = resolve("xnnpack#0", {}, nullptr, &delegates, &r);
  EXPECT_EQ(scope.code(), Error::OptionWrongScope);
  EXPECT_STREQ(scope.message(),
               "xnnpack: option 'platform' cannot be set at delegate scope (allowed: global, "
               "load)");

  LoadBackendOptionsMap typo;
  ASSERT_OK(typo.set_options("xnnpack", Span<const BackendOption>()));
  BackendOption misspelt;
  ASSERT_OK(misspelt.set_key("weight_cach"));
  misspelt.set_bool(true);
  ASSERT_OK(typo.set_options("xnnpack", Span<const BackendOption>(&misspelt, 1)));
  Status unknown = resolve("xnnpack#0", {}, &typo, nullptr, &r);
  EXPECT_EQ(unknown.code(), Error::OptionUnknownKey);
  EXPECT_STREQ(unknown.message(),
               "xnnpack: unknown option 'weight_cach' (did you mean 'weight_cache'?)");
}

TEST_F(Resolution, OptionsForOtherBackendsAndDelegatesAreNotApplied) {
  LoadBackendOptionsMap load;
  ASSERT_OK(load.set("opencl", kNumThreads, 7));
  DelegateOptionsMap delegates;
  ASSERT_OK(delegates.set("xnnpack#1", kNumThreads, 8));
  ResolvedOptions r;
  ASSERT_OK(resolve("xnnpack#0", {}, &load, &delegates, &r));
  EXPECT_EQ(*r.get(kNumThreads), 0);
}

TEST_F(Resolution, InitOnlyOptionCannotMoveAfterTheBackendInitialised) {
  LoadBackendOptionsMap first_load;
  ASSERT_OK(first_load.set("xnnpack", kPlatform, 2));
  ResolvedOptions r;
  ASSERT_OK(resolve("xnnpack#0", {}, &first_load, nullptr, &r));
  BackendInitContext::Params params;
  params.options = &r;
  params.method_name = "forward";
  BackendInitContext ctx(params);
  ASSERT_OK(ctx.mark_backend_initialized());
  EXPECT_EQ(*backend_lifecycle("xnnpack"), BackendLifecycle::Initialized);

  // The same value again is fine; a different one is an error naming the option.
  ResolvedOptions again;
  EXPECT_OK(resolve("xnnpack#1", {}, &first_load, nullptr, &again));
  LoadBackendOptionsMap second_load;
  ASSERT_OK(second_load.set("xnnpack", kPlatform, 3));
  Status s = resolve("xnnpack#1", {}, &second_load, nullptr, &again);
  EXPECT_EQ(s.code(), Error::InvalidState);
  EXPECT_STREQ(s.message(),
               "xnnpack: option 'platform' is init-only and was locked when the backend "
               "initialised its shared state (first delegate load: method 'forward', delegate "
               "'xnnpack#0'); the load value 3 differs from the locked 2");
  // Leaving it out gives the locked value, reported with the scope that set it.
  ResolvedOptions defaults;
  ASSERT_OK(resolve("xnnpack#1", {}, nullptr, nullptr, &defaults));
  EXPECT_EQ(*defaults.get(kPlatform), 2);
  EXPECT_EQ(defaults.source(static_cast<size_t>(defaults.find("platform"))), OptionLevel::Load);
  ASSERT_OK(reset_backend_options("xnnpack"));
}

TEST(ResolutionChecks, CheckLoadOptionsCatchesUnknownBackendsAndKeys) {
  ScopedStub xnnpack("xnnpack");
  LoadBackendOptionsMap load;
  ASSERT_OK(load.set("xnnpak", kNumThreads, 2));
  Status s = check_load_options(load, Validation::Strict);
  EXPECT_EQ(s.code(), Error::OptionUnknownBackend);
  EXPECT_EQ(std::string(s.message()).rfind("unknown backend 'xnnpak' (did you mean 'xnnpack'?", 0),
            0u)
      << s.message();

  LoadBackendOptionsMap good;
  ASSERT_OK(good.set("xnnpack", kNumThreads, 2));
  EXPECT_OK(check_load_options(good, Validation::Strict));
}

TEST(ResolutionChecks, CheckDelegateOptionsCatchesUnknownIds) {
  ScopedStub xnnpack("xnnpack");
  DelegateOptionsMap map;
  ASSERT_OK(map.set("xnnpack#3", kNumThreads, 2));
  DelegateTarget targets[] = {{"xnnpack#0", "xnnpack"}, {"xnnpack#1", "xnnpack"}};
  Status s = check_delegate_options(map, targets, Validation::Strict);
  EXPECT_EQ(s.code(), Error::NotFound);
  EXPECT_STREQ(s.message(),
               "delegate options name unknown delegate 'xnnpack#3' (did you mean 'xnnpack#0'?; "
               "delegates: xnnpack#0, xnnpack#1)");
  DelegateOptionsMap ok;
  ASSERT_OK(ok.set("xnnpack#1", kNumThreads, 2));
  EXPECT_OK(check_delegate_options(ok, targets, Validation::Strict));
  DelegateOptionsMap bad;
  ASSERT_OK(bad.set("xnnpack#1", kBatchHint, 2));
  EXPECT_EQ(check_delegate_options(bad, targets, Validation::Strict).code(),
            Error::OptionWrongScope);
}

TEST(OptionMaps, MergeReplaceAndCapacity) {
  LoadBackendOptionsMap load;
  ASSERT_OK(load.set("a", kNumThreads, 1));
  ASSERT_OK(load.set("b", kNumThreads, 2));
  ASSERT_OK(load.set("a", kRatio, 0.5));
  ASSERT_OK(load.set("a", kNumThreads, 3));  // replaces
  ASSERT_EQ(load.size(), 2u);
  ASSERT_EQ(load.get_options("a").size(), 2u);
  EXPECT_EQ(load.get_options("a")[0].as_int(), 3);
  EXPECT_EQ(load.get_options("a")[1].as_double(), 0.5);
  EXPECT_EQ(load.get_options("b")[0].as_int(), 2);
  EXPECT_TRUE(load.get_options("c").empty());

  Status name = load.set(std::string(32, 'n'), kNumThreads, 1);
  EXPECT_EQ(name.code(), Error::OptionTooLong);
  EXPECT_EQ(load.set("", kNumThreads, 1).code(), Error::InvalidArgument);

  LoadBackendOptionsMap full;
  for (int i = 0; i < 16; ++i) ASSERT_OK(full.set(std::string(1, 'b') + std::to_string(i), kNumThreads, i));
  Status too_many = full.set("b16", kNumThreads, 1);
  EXPECT_EQ(too_many.code(), Error::MemoryAllocationFailed);
  EXPECT_STREQ(too_many.message(), "cannot add backend 'b16': capacity of 16 backends reached");

  // All or nothing: a batch that does not fit leaves the map as it was.
  DelegateOptionsMap d;
  BackendOptions<48> many;
  for (int i = 0; i < 48; ++i) ASSERT_OK(many.set_int(std::string(1, 'k') + std::to_string(i), i));
  ASSERT_OK(d.set_options("x#0", many.view()));
  ASSERT_OK(d.set_options("x#1", Span<const BackendOption>(many.view().data(), 10)));
  EXPECT_EQ(d.set_options("x#2", many.view()).code(), Error::MemoryAllocationFailed);
  EXPECT_EQ(d.size(), 2u);
  EXPECT_EQ(d.get_options("x#1").size(), 10u);
  EXPECT_EQ(d.get_options("x#0")[47].as_int(), 47);
}

TEST(OptionMaps, BackendOfDelegateId) {
  static_assert(backend_of_delegate_id("xnnpack#0") == "xnnpack");
  static_assert(backend_of_delegate_id("opencl") == "opencl");
}

// kMaxBackendNameLength for backend names and kMaxNameLength for delegate ids and keys, end to
// end: the longest backend name registers, its delegate ids are accepted as delegate targets, and
// ResolvedOptions keeps both names whole.
TEST(OptionMaps, NameLimitsFitTogether) {
  const std::string backend(kMaxBackendNameLength, 'b');
  ScopedStub stub(backend);
  EXPECT_EQ(register_backend(backend + "x", &stub.backend()).code(), Error::InvalidArgument);

  LoadBackendOptionsMap load;
  ASSERT_OK(load.set(backend, kNumThreads, 2));
  EXPECT_EQ(load.set(backend + "x", kNumThreads, 2).code(), Error::OptionTooLong);

  const std::string id = backend + "#4294967295";
  DelegateOptionsMap delegates;
  ASSERT_OK(delegates.set(id, kNumThreads, 3));
  ASSERT_OK(delegates.set(std::string(kMaxNameLength, 'd'), kNumThreads, 3));
  EXPECT_EQ(delegates.set(std::string(kMaxNameLength + 1, 'd'), kNumThreads, 3).code(),
            Error::OptionTooLong);

  BackendOption key;
  ASSERT_OK(key.set_key(std::string(kMaxNameLength, 'k')));
  EXPECT_EQ(key.set_key(std::string(kMaxNameLength + 1, 'k')).code(), Error::OptionTooLong);

  ResolvedOptions resolved;
  ASSERT_OK(resolved.reset(backend, id, kTestSchema));
  EXPECT_EQ(resolved.backend(), backend);
  EXPECT_EQ(resolved.delegate_id(), id);
}

}  // namespace
}  // namespace tessera::test
