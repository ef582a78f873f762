// Lenient mode: unknown keys (and unknown backends in load maps) warn and are skipped; every
// other error stays an error.
#include <gtest/gtest.h>

#include "tessera/backend/global_options.h"
#include "tessera/backend/options.h"
#include "tessera/backend/resolution.h"
#include "tests/backend/test_support.h"

namespace tessera::test {
namespace {

BackendOption unknown_key() {
  BackendOption o;
  EXPECT_OK(o.set_key("from_a_newer_version"));
  o.set_int(1);
  return o;
}

TEST(Lenient, SetOptionSkipsUnknownKeysWithAWarning) {
  ScopedStub xnnpack("xnnpack");
  LogCapture log;
  BackendOption opts[] = {unknown_key(), opt(kNumThreads, 3)};
  EXPECT_EQ(set_option("xnnpack", opts).code(), Error::OptionUnknownKey);
  ASSERT_OK(set_option("xnnpack", opts, Validation::Lenient));
  EXPECT_TRUE(
      log.contains("xnnpack: unknown option 'from_a_newer_version' (known options: num_threads"))
      << (log.messages().empty() ? "" : log.messages().back());
  EXPECT_TRUE(log.contains("(skipped: lenient mode)"));
  BackendOptions<1> q;
  ASSERT_OK(q.set(kNumThreads, 0));
  ASSERT_OK(get_option("xnnpack", q.mutable_view()));
  EXPECT_EQ(*q.get(kNumThreads), 3);
}

TEST(Lenient, OtherErrorsStayErrors) {
  ScopedStub xnnpack("xnnpack");
  BackendOption bad_type[] = {unknown_key(), opt(OptionKey<bool>{"num_threads"}, true)};
  EXPECT_EQ(set_option("xnnpack", bad_type, Validation::Lenient).code(), Error::OptionTypeMismatch);
  BackendOption bad_range[] = {opt(kNumThreads, 1000)};
  EXPECT_EQ(set_option("xnnpack", bad_range, Validation::Lenient).code(), Error::OptionOutOfRange);
  BackendOption bad_scope[] = {opt(kBatchHint, 2)};
  EXPECT_EQ(set_option("xnnpack", bad_scope, Validation::Lenient).code(), Error::OptionWrongScope);
}

TEST(Lenient, ResolutionSkipsUnknownKeysAtEveryScope) {
  ScopedStub xnnpack("xnnpack");
  LogCapture log;
  CompileSpec specs[] = {{"future_spec", "1"}, {"num_threads", "2"}};
  LoadBackendOptionsMap load;
  BackendOption load_opts[] = {unknown_key(), opt(kCacheDir, "/c")};
  ASSERT_OK(load.set_options("xnnpack", load_opts));
  DelegateOptionsMap delegates;
  BackendOption delegate_opts[] = {unknown_key(), opt(kRatio, 0.25)};
  ASSERT_OK(delegates.set_options("xnnpack#0", delegate_opts));

  ResolvedOptions r;
  EXPECT_EQ(resolve_options("xnnpack", xnnpack.backend(), "xnnpack#0", specs, &load, &delegates,
                            Validation::Strict, &r)
                .code(),
            Error::OptionUnknownKey);
  ASSERT_OK(resolve_options("xnnpack", xnnpack.backend(), "xnnpack#0", specs, &load, &delegates,
                            Validation::Lenient, &r));
  EXPECT_EQ(*r.get(kNumThreads), 2);
  EXPECT_EQ(*r.get(kCacheDir), "/c");
  EXPECT_DOUBLE_EQ(*r.get(kRatio), 0.25);
  EXPECT_TRUE(log.contains("unknown option 'future_spec'"));
  EXPECT_EQ(log.messages().size(), 3u);

  // Bad values are still rejected in lenient mode.
  CompileSpec bad[] = {{"num_threads", "lots"}};
  EXPECT_EQ(resolve_options("xnnpack", xnnpack.backend(), "xnnpack#0", bad, nullptr, nullptr,
                            Validation::Lenient, &r)
                .code(),
            Error::OptionTypeMismatch);
}

TEST(Lenient, CheckLoadOptionsSkipsUnknownBackends) {
  ScopedStub xnnpack("xnnpack");
  LogCapture log;
  LoadBackendOptionsMap load;
  ASSERT_OK(load.set("coreml", kNumThreads, 2));  // not in this build
  ASSERT_OK(load.set("xnnpack", kNumThreads, 2));
  EXPECT_EQ(check_load_options(load, Validation::Strict).code(), Error::OptionUnknownBackend);
  EXPECT_OK(check_load_options(load, Validation::Lenient));
  EXPECT_TRUE(log.contains("unknown backend 'coreml'"));
}

}  // namespace
}  // namespace tessera::test
