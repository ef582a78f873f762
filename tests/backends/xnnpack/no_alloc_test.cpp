// Delegate execute allocates nothing on the heap: malloc and friends are interposed for this
// test executable and counted while execute runs (XNNPACK and pthreadpool included).
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>

#include "harness.h"
#include "tessera/backend/options_map.h"
#include "tessera/backends/xnnpack/options.h"
#include "tessera/core/sanitizers.h"

#if !TESSERA_ASAN && !TESSERA_TSAN && defined(__GLIBC__)
#define TESSERA_COUNT_ALLOCATIONS 1

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};
inline void note() {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1);
}
}  // namespace

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void __libc_free(void*);

void* malloc(size_t n) {
  note();
  return __libc_malloc(n);
}
void* calloc(size_t a, size_t b) {
  note();
  return __libc_calloc(a, b);
}
void* realloc(void* p, size_t n) {
  note();
  return __libc_realloc(p, n);
}
void* memalign(size_t a, size_t n) {
  note();
  return __libc_memalign(a, n);
}
void* aligned_alloc(size_t a, size_t n) {
  note();
  return __libc_memalign(a, n);
}
int posix_memalign(void** out, size_t a, size_t n) {
  note();
  void* p = __libc_memalign(a, n);
  if (p == nullptr) return 12;  // ENOMEM
  *out = p;
  return 0;
}
void free(void* p) {
  __libc_free(p);
}
}
#endif

namespace tessera::xnnpack::testing {
namespace {

using Op = fb::OpType;

long allocations_during_runs(Session& s, const std::vector<Floats>& in, int runs) {
#ifdef TESSERA_COUNT_ALLOCATIONS
  g_allocations = 0;
  g_counting = true;
  for (int i = 0; i < runs; ++i) {
    if (!s.run(in, nullptr).is_ok()) break;
  }
  g_counting = false;
  return g_allocations.load();
#else
  (void)s;
  (void)in;
  (void)runs;
  return 0;
#endif
}

GraphCase conv_flatten_gemm() {
  GraphCase c;
  int x = c.input({1, 3, 10, 10});
  int w = c.constant({6, 3, 3, 3});
  int a = c.tensor({1, 6, 8, 8});
  c.node(Op::Conv, {x, w}, a).activation = fb::Activation::Relu;
  int f = c.tensor({1, 384});
  c.node(Op::Flatten, {a}, f);
  int m = c.constant({384, 10});
  int y = c.tensor({1, 10});
  c.node(Op::MatMul, {f, m}, y);
  c.output(y);
  c.output(a);
  return c;
}

TEST(XnnpackNoAlloc, ExecuteDoesNotAllocate) {
#ifndef TESSERA_COUNT_ALLOCATIONS
  GTEST_SKIP() << "allocation counting needs glibc without sanitizers";
#endif
  for (int threads : {1, 2}) {
    LoadBackendOptionsMap load;
    ASSERT_TRUE(load.set("xnnpack", kNumThreads, threads).is_ok());
    RunOptions o;
    o.load = &load;
    const GraphCase c = conv_flatten_gemm();
    Session s;
    ASSERT_TRUE(s.init(c, o).is_ok());
    ASSERT_EQ(s.summary().runtimes, 2u);  // includes a layout conversion step
    std::vector<Floats> in = random_inputs(c, 1);
    EXPECT_EQ(allocations_during_runs(s, in, 50), 0) << threads << " threads";
  }
}

}  // namespace
}  // namespace tessera::xnnpack::testing
