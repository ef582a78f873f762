// Global options set from several threads while others load (resolve) and execute: every load
// sees all of one set_option call or none of it. Run under -fsanitize=thread as well.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "tessera/backend/context.h"
#include "tessera/backend/execute_options.h"
#include "tessera/backend/global_options.h"
#include "tessera/backend/options.h"
#include "tessera/backend/registry.h"
#include "tessera/backend/resolution.h"
#include "tests/backend/test_support.h"

namespace tessera::test {
namespace {

constexpr int kIterations = 1500;

// Two complete configurations; a reader must never see a mix of them.
BackendOptions<4> configuration(int which) {
  BackendOptions<4> opts;
  EXPECT_OK(opts.set(kNumThreads, which == 0 ? 1 : 2));
  EXPECT_OK(opts.set(kRatio, which == 0 ? 0.1 : 0.2));
  EXPECT_OK(opts.set(kPerfMode, EnumValue{which == 0 ? "latency" : "throughput"}));
  EXPECT_OK(opts.set(kCacheDir, which == 0 ? "/config/a" : "/config/b"));
  return opts;
}

// -1: all defaults (nothing set yet), 0 or 1: that configuration, 99: a torn mix.
int classify(int64_t threads, double ratio, std::string_view mode, std::string_view dir) {
  if (threads == 0 && ratio == 0.5 && mode == "latency" && dir.empty()) return -1;
  if (threads == 1 && ratio == 0.1 && mode == "latency" && dir == "/config/a") return 0;
  if (threads == 2 && ratio == 0.2 && mode == "throughput" && dir == "/config/b") return 1;
  return 99;
}

TEST(Concurrency, LoadsSeeWholeUpdatesWhileOthersSetAndExecute) {
  ScopedStub stub("conc");
  const BackendOptions<4> configs[2] = {configuration(0), configuration(1)};
  std::atomic<bool> failed{false};
  std::atomic<int> torn{0};
  std::vector<std::thread> threads;

  for (int w = 0; w < 2; ++w) {  // setters
    threads.emplace_back([&, w] {
      for (int i = 0; i < kIterations && !failed; ++i) {
        if (!set_option("conc", configs[(i + w) % 2].view()).is_ok()) failed = true;
      }
    });
  }
  for (int r = 0; r < 2; ++r) {  // loaders
    threads.emplace_back([&, r] {
      LoadBackendOptionsMap load;  // a load scope that does not touch the keys under test
      if (!load.set("conc", kWeightCache, false).is_ok()) failed = true;
      std::string id = "conc#" + std::to_string(r);
      for (int i = 0; i < kIterations && !failed; ++i) {
        ResolvedOptions resolved;
        if (!resolve_options("conc", stub.backend(), id, {}, &load, nullptr, Validation::Strict,
                             &resolved)
                 .is_ok()) {
          failed = true;
          break;
        }
        if (classify(*resolved.get(kNumThreads), *resolved.get(kRatio),
                     resolved.get(kPerfMode)->name, *resolved.get(kCacheDir)) == 99) {
          ++torn;
        }
      }
    });
  }
  threads.emplace_back([&] {  // get_option readers see whole updates too
    for (int i = 0; i < kIterations && !failed; ++i) {
      BackendOptions<4> q = configuration(0);
      if (!get_option("conc", q.mutable_view()).is_ok()) {
        failed = true;
        break;
      }
      if (classify(*q.get(kNumThreads), *q.get(kRatio), q.get(kPerfMode)->name,
                   *q.get(kCacheDir)) == 99) {
        ++torn;
      }
    }
  });
  threads.emplace_back([&] {  // an executing delegate: per-call options, load-resolved values
    ResolvedOptions resolved;
    if (!resolve_options("conc", stub.backend(), "conc#9", {}, nullptr, nullptr, Validation::Strict,
                         &resolved)
             .is_ok()) {
      failed = true;
      return;
    }
    ExecuteOptions execute;
    if (!execute.set("conc", kBatchHint, 4).is_ok()) failed = true;
    for (int i = 0; i < kIterations && !failed; ++i) {
      ExecuteOptionView view;
      if (!select_execute_options(execute, "conc", kTestSchema, &view).is_ok()) failed = true;
      BackendExecutionContext ctx(&resolved, view);
      if (*ctx.get(kBatchHint) != 4) failed = true;
      if (!stub->execute(ctx, nullptr, {}).is_ok()) failed = true;
    }
  });
  threads.emplace_back([&] {  // the registry changes meanwhile
    testing::StubBackend other(kTestSchema);
    for (int i = 0; i < kIterations / 10 && !failed; ++i) {
      if (!register_backend("conc_other", &other).is_ok()) failed = true;
      if (!get_backend("conc").ok()) failed = true;
      (void)registered_backends();
      if (!unregister_backend("conc_other").is_ok()) failed = true;
    }
  });
  for (std::thread& t : threads) t.join();
  EXPECT_FALSE(failed.load());
  EXPECT_EQ(torn.load(), 0);
}

TEST(Concurrency, InitOnlyLockRacesWithSetters) {
  ScopedStub stub("conc_lock");
  std::atomic<bool> locked{false};
  std::atomic<int> rejected_after_lock{0};
  std::atomic<int> unexpected{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < kIterations; ++i) {
        BackendOption o = opt(kPlatform, 1 + (i + w) % 2);
        Status s = set_option("conc_lock", Span<const BackendOption>(&o, 1));
        if (s.code() == Error::InvalidState) {
          ++rejected_after_lock;
        } else if (!s.is_ok()) {
          ++unexpected;
        }
      }
    });
  }
  threads.emplace_back([&] {
    std::this_thread::yield();
    ResolvedOptions resolved;
    if (!resolve_options("conc_lock", stub.backend(), "conc_lock#0", {}, nullptr, nullptr,
                         Validation::Strict, &resolved)
             .is_ok()) {
      ++unexpected;
      return;
    }
    if (!mark_backend_initialized("conc_lock", "test", &resolved).is_ok()) ++unexpected;
    locked = true;
  });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(unexpected.load(), 0);
  EXPECT_EQ(*backend_lifecycle("conc_lock"), BackendLifecycle::Initialized);
  // After the lock, only the locked value is accepted: the store never moved away from it.
  ResolvedOptions after;
  Status s = resolve_options("conc_lock", stub.backend(), "conc_lock#1", {}, nullptr, nullptr,
                             Validation::Strict, &after);
  if (s.is_ok()) {
    BackendOptions<1> q;
    ASSERT_OK(q.set(kPlatform, 0));
    ASSERT_OK(get_option("conc_lock", q.mutable_view()));
    EXPECT_EQ(*after.get(kPlatform), *q.get(kPlatform));
  } else {
    // The lock captured a snapshot taken before a later set: that set was made before the lock
    // (allowed), and the mismatch is reported loudly instead of running with a wrong value.
    EXPECT_EQ(s.code(), Error::InvalidState);
  }
}

}  // namespace
}  // namespace tessera::test
