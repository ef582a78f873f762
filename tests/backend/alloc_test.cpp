// Zero heap allocations in option lookup, execute-option selection and the execute path of a
// backend context. This binary replaces the global operator new to count allocations.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "tessera/backend/context.h"
#include "tessera/backend/execute_options.h"
#include "tessera/backend/global_options.h"
#include "tessera/backend/options.h"
#include "tessera/backend/resolution.h"
#include "tests/backend/test_support.h"

namespace {
std::atomic<long> g_allocations{0};
}  // namespace

// The replacements below pair malloc with free by design; GCC 12, seeing new's body inlined into
// a caller at -O1 and above, takes the free in delete for a mismatch.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) {
  return operator new(size);
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept {
  return operator new(size, tag);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}

namespace tessera::test {
namespace {

// Counts allocations made by `fn` on this thread's watch.
template <typename F>
long allocations_in(F&& fn) {
  long before = g_allocations.load();
  fn();
  return g_allocations.load() - before;
}

TEST(CountingAllocator, CountsNew) {
  EXPECT_EQ(allocations_in([] {
              int* volatile p = new int(1);  // volatile: the pair must not be optimised away
              delete p;
            }),
            1);
  // Also inside libtessera: registered_backends() returns a heap-allocated vector.
  tessera::test::ScopedStub stub("counted");
  EXPECT_GT(allocations_in([] { (void)registered_backends(); }), 0);
}

class NoHeap : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(load_.set("xnnpack", kNumThreads, 4));
    ASSERT_OK(load_.set("xnnpack", kPerfMode, EnumValue{"throughput"}));
    ASSERT_OK(resolve_options("xnnpack", stub_.backend(), "xnnpack#0", {}, &load_, nullptr,
                              Validation::Strict, &resolved_));
    ASSERT_OK(execute_.set("xnnpack", kBatchHint, 8));
    ASSERT_OK(execute_.set("xnnpack", kNumThreads, 2));
  }
  ScopedStub stub_{"xnnpack"};
  LoadBackendOptionsMap load_;
  ResolvedOptions resolved_;
  ExecuteOptions execute_;
};

TEST_F(NoHeap, OptionLookup) {
  long n = allocations_in([&] {
    for (int i = 0; i < 100; ++i) {
      EXPECT_EQ(*resolved_.get(kNumThreads), 4);
      EXPECT_EQ(*resolved_.get_int("num_threads"), 4);
      EXPECT_EQ(resolved_.get(kPerfMode)->index, 1);
      EXPECT_TRUE(*resolved_.get_bool("weight_cache"));
      EXPECT_EQ(*resolved_.get_string("cache_dir"), "");
      EXPECT_FALSE(resolved_.get(OptionKey<int64_t>{"missing"}).ok());  // error path too
      EXPECT_FALSE(resolved_.get_string("num_threads").ok());
    }
  });
  EXPECT_EQ(n, 0);
}

TEST_F(NoHeap, InitContextLookup) {
  SymbolValue symbols[] = {{"batch", 2}};
  BackendInitContext::Params params;
  params.options = &resolved_;
  params.symbols = symbols;
  BackendInitContext ctx(params);
  long n = allocations_in([&] {
    EXPECT_EQ(*ctx.get(kNumThreads), 4);
    EXPECT_EQ(*ctx.get_runtime_spec<int>("num_threads"), 4);
    EXPECT_EQ(*ctx.symbol_value("batch"), 2);
  });
  EXPECT_EQ(n, 0);
}

TEST_F(NoHeap, ExecuteOptionSelectionAndExecutionContext) {
  ProfileEvent events[4];
  ProfileBuffer profile(events);
  long n = allocations_in([&] {
    for (int i = 0; i < 100; ++i) {
      ExecuteOptionView view;
      EXPECT_TRUE(select_execute_options(execute_, "xnnpack", kTestSchema, &view).is_ok());
      BackendExecutionContext ctx(&resolved_, view, &profile);
      EXPECT_EQ(*ctx.get(kNumThreads), 2);
      EXPECT_EQ(*ctx.get(kBatchHint), 8);
      EXPECT_EQ(ctx.get(kPerfMode)->name, "throughput");
      ctx.report_event("step", 0.1);
      EXPECT_TRUE(stub_->execute(ctx, nullptr, {}).is_ok());

      ExecuteOptionView none;
      EXPECT_TRUE(
          select_execute_options(ExecuteOptions::none(), "xnnpack", kTestSchema, &none).is_ok());
      BackendExecutionContext plain(&resolved_, none);
      EXPECT_EQ(*plain.get(kNumThreads), 4);
    }
  });
  EXPECT_EQ(n, 0);
}

TEST_F(NoHeap, ValidationResolutionAndGlobalOptions) {
  // Not required by the design (loading may allocate), but none of these need the heap.
  BackendOptions<2> opts;
  ASSERT_OK(opts.set(kNumThreads, 3));
  long n = allocations_in([&] {
    EXPECT_TRUE(validate_option("xnnpack", kTestSchema, opts.view()[0], OptionLevel::Load).is_ok());
    ResolvedOptions r;
    EXPECT_TRUE(resolve_options("xnnpack", stub_.backend(), "xnnpack#1", {}, &load_, nullptr,
                                Validation::Strict, &r)
                    .is_ok());
    EXPECT_TRUE(set_option("xnnpack", opts.view()).is_ok());
    BackendOptions<1> q;
    EXPECT_TRUE(q.set(kNumThreads, 0).is_ok());
    EXPECT_TRUE(get_option("xnnpack", q.mutable_view()).is_ok());
  });
  EXPECT_EQ(n, 0);
}

}  // namespace
}  // namespace tessera::test
