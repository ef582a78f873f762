// Tessera's SiLU kernels for the oneDNN backend (tessera/backends/onednn/silu.h) against x *
// sigmoid(x) in double precision: every kernel this CPU can run (the scalar one everywhere),
// values across the range and the special ones, every tail length, and the split over threads.
#include "tessera/backends/onednn/silu.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace tessera::onednn::testing {
namespace {

/// The kernels this CPU has (the backend picks by oneDNN's effective ISA, which the CPU bounds).
std::vector<SiluIsa> runnable_kernels() {
  std::vector<SiluIsa> isas = {SiluIsa::Scalar};
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    isas.push_back(SiluIsa::Avx2);
  }
  if (__builtin_cpu_supports("avx512f")) isas.push_back(SiluIsa::Avx512);
  return isas;
}

double reference(float x) {
  const double d = x;
  return d / (1.0 + std::exp(-d));
}

/// Whether `got` is x * sigmoid(x) within 2e-7 relative (about 2 ulp), or 3e-37 absolute where
/// the result is that small (it may be flushed to -0 there); infinities and NaN exactly.
::testing::AssertionResult near_reference(float x, float got) {
  if (std::isnan(x) || x == -std::numeric_limits<float>::infinity()) {
    if (std::isnan(got)) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "silu(" << x << ") = " << got << ", want NaN";
  }
  if (x == std::numeric_limits<float>::infinity()) {
    if (got == x) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "silu(inf) = " << got;
  }
  const double want = reference(x);
  const double err = std::fabs(static_cast<double>(got) - want);
  if (err <= 2e-7 * std::fabs(want) || err <= 3e-37) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << std::hexfloat << "silu(" << x << ") = " << got << ", want " << want << std::defaultfloat
         << " (error " << err / std::fabs(want) << " relative)";
}

std::vector<float> test_values() {
  std::vector<float> v;
  for (int i = -2000; i <= 2000; ++i) v.push_back(static_cast<float>(i) * 0.05f);  // -100..100
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> near0(-8.0f, 8.0f);
  for (int i = 0; i < 4000; ++i) v.push_back(near0(rng));
  const float inf = std::numeric_limits<float>::infinity();
  for (float x : {0.0f,
                  -0.0f,
                  1e-45f,
                  -1e-45f,
                  1e-38f,
                  -1e-38f,
                  1e-7f,
                  -1e-7f,
                  19.99f,
                  -19.99f,
                  20.0f,
                  -20.0f,
                  20.01f,
                  -20.01f,
                  87.0f,
                  -87.0f,
                  88.72f,
                  -88.72f,
                  88.73f,
                  -88.73f,
                  89.0f,
                  -89.0f,
                  100.0f,
                  -100.0f,
                  101.0f,
                  -101.0f,
                  1e30f,
                  -1e30f,
                  std::numeric_limits<float>::max(),
                  -std::numeric_limits<float>::max(),
                  inf,
                  -inf,
                  std::numeric_limits<float>::quiet_NaN()}) {
    v.push_back(x);
  }
  return v;
}

TEST(OnednnSiluKernel, EveryKernelIsWithinTwoUlpOfTheReference) {
  const std::vector<float> values = test_values();
  for (SiluIsa isa : runnable_kernels()) {
    std::vector<float> data = values;
    silu_in_place(data.data(), data.size(), isa, 1);
    for (size_t i = 0; i < values.size(); ++i) {
      EXPECT_TRUE(near_reference(values[i], data[i])) << silu_isa_name(isa);
    }
  }
}

// Every length from 0 to 40 at every offset within a vector: the vector body, the AVX-512 masked
// tail and the AVX2 scalar tail, and nothing written outside [begin, begin + length).
TEST(OnednnSiluKernel, TailsAndOffsetsTouchOnlyTheirElements) {
  for (SiluIsa isa : runnable_kernels()) {
    for (size_t offset = 0; offset < 16; ++offset) {
      for (size_t length = 0; length <= 40; ++length) {
        std::vector<float> data(offset + length + 16);
        for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i) * 0.37f - 5.0f;
        const std::vector<float> before = data;
        silu_in_place(data.data() + offset, length, isa, 1);
        for (size_t i = 0; i < data.size(); ++i) {
          if (i >= offset && i < offset + length) {
            ASSERT_TRUE(near_reference(before[i], data[i]))
                << silu_isa_name(isa) << " offset " << offset << " length " << length;
          } else {
            ASSERT_EQ(data[i], before[i]) << silu_isa_name(isa) << " wrote element " << i
                                          << " outside offset " << offset << " length " << length;
          }
        }
      }
    }
  }
}

// Split over two and three threads (lengths off the 16-element vectors, and one below the size
// worth splitting) the result is element for element that of one thread.
TEST(OnednnSiluKernel, ThreadsGiveTheSingleThreadResult) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-12.0f, 12.0f);
  for (SiluIsa isa : runnable_kernels()) {
    for (size_t count : {size_t{1000}, size_t{32768}, size_t{100003}, size_t{301056}}) {
      std::vector<float> values(count);
      for (float& x : values) x = dist(rng);
      std::vector<float> one = values;
      silu_in_place(one.data(), count, isa, 1);
      for (int threads : {2, 3}) {
        std::vector<float> many = values;
        silu_in_place(many.data(), count, isa, threads);
        ASSERT_EQ(many, one) << silu_isa_name(isa) << " count " << count << " threads " << threads;
      }
    }
  }
}

// The choice from oneDNN's ISA bit sets, fed here rather than read from this machine: AVX-512
// from avx512_core up, AVX2 from avx2 up, below that oneDNN's own post-op (Scalar).
TEST(OnednnSiluKernel, TheKernelFollowsOnednnsIsa) {
  EXPECT_EQ(silu_isa_for(dnnl_cpu_isa_avx512_core_amx), SiluIsa::Avx512);
  EXPECT_EQ(silu_isa_for(dnnl_cpu_isa_avx512_core_bf16), SiluIsa::Avx512);
  EXPECT_EQ(silu_isa_for(dnnl_cpu_isa_avx512_core), SiluIsa::Avx512);
  EXPECT_EQ(silu_isa_for(dnnl_cpu_isa_avx2_vnni), SiluIsa::Avx2);
  EXPECT_EQ(silu_isa_for(dnnl_cpu_isa_avx2), SiluIsa::Avx2);
  EXPECT_EQ(silu_isa_for(dnnl_cpu_isa_avx), SiluIsa::Scalar);
  EXPECT_EQ(silu_isa_for(dnnl_cpu_isa_sse41), SiluIsa::Scalar);
}

TEST(OnednnSiluKernel, NamesAndTheOnednnChoice) {
  EXPECT_STREQ(silu_isa_name(SiluIsa::Scalar), "scalar");
  EXPECT_STREQ(silu_isa_name(SiluIsa::Avx2), "avx2");
  EXPECT_STREQ(silu_isa_name(SiluIsa::Avx512), "avx512");
  // Never a kernel the CPU lacks (oneDNN's effective ISA is bounded by the CPU's).
  const SiluIsa chosen = silu_isa_for_onednn();
  bool runnable = false;
  for (SiluIsa isa : runnable_kernels()) runnable |= isa == chosen;
  EXPECT_TRUE(runnable) << silu_isa_name(chosen);
}

}  // namespace
}  // namespace tessera::onednn::testing
