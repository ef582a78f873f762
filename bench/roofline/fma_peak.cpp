// Peak single-core float32 FLOP/s: a loop of independent fused multiply-adds.
//
// Each accumulator is one SIMD register; kAcc independent chains hide the FMA latency (4 cycles on
// recent x86 cores, 2 FMA ports: at least 8 chains are needed, 16 leave slack). One FMA on a vector
// of W floats counts as 2*W FLOPs. The best of many short repetitions is the peak: noise on a
// shared machine only ever makes a repetition slower. The same figure by thread CPU time is printed
// beside it as a cross-check (it ignores time the thread spent descheduled).
//
// Usage: tessera_roofline [--seconds S] [--json]
//   Prints the peak GFLOP/s for 128-, 256- and 512-bit vectors (the widths the compiler target
//   allows) and the best of them, and the bf16 dot-product peak where the CPU has AVX512_BF16.

#include <chrono>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int kAcc = 16;

template <int Bytes>
struct Vec {
  typedef float type __attribute__((vector_size(Bytes)));
  static constexpr int kLanes = Bytes / 4;
};

double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Timing {
  double wall;  // seconds of wall-clock time
  double cpu;   // seconds this thread was on a CPU (excludes time-slicing on a loaded machine)
};

// Runs `iters` iterations of kAcc independent FMAs on vectors of `Bytes` bytes. The accumulators
// are separate variables so that they stay in registers (an array of them spills to the stack and
// the loop measures store forwarding instead).
template <int Bytes>
__attribute__((noinline)) Timing run(long iters, float seed, float* sink) {
  using V = typename Vec<Bytes>::type;
  V a, b;
  for (int l = 0; l < Vec<Bytes>::kLanes; ++l) {
    a[l] = 1.0f - seed * 1e-7f;
    b[l] = 1e-7f * seed;
  }
#define TESSERA_ACC(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
#define TESSERA_INIT(i) V c##i = b * static_cast<float>(i + 1);
#define TESSERA_FMA(i) c##i = c##i * a + b;
#define TESSERA_SUM(i) total += c##i;
  static_assert(kAcc == 16, "TESSERA_ACC lists 16 accumulators");
  TESSERA_ACC(TESSERA_INIT)
  auto t0 = std::chrono::steady_clock::now();
  double cpu0 = thread_cpu_seconds();
  for (long it = 0; it < iters; ++it) {
    TESSERA_ACC(TESSERA_FMA)
  }
  double cpu1 = thread_cpu_seconds();
  auto t1 = std::chrono::steady_clock::now();
  V total = b;
  TESSERA_ACC(TESSERA_SUM)
#undef TESSERA_ACC
#undef TESSERA_INIT
#undef TESSERA_FMA
#undef TESSERA_SUM
  float s = 0;
  for (int l = 0; l < Vec<Bytes>::kLanes; ++l) s += total[l];
  *sink += s;
  return {std::chrono::duration<double>(t1 - t0).count(), cpu1 - cpu0};
}

struct Peak {
  int bits;
  double wall_gflops;  // best repetition by wall-clock time
  double cpu_gflops;   // best repetition by thread CPU time
};

// The best repetition of `run(iters, seed, sink)` (a Timing for `iters` iterations of
// `flops_per_iter` FLOPs). Short repetitions (about 2 ms) so that on a loaded machine some of them
// run without being descheduled; the best one is the peak.
template <typename Run>
Peak best_of(Run run, double flops_per_iter, int bits, double seconds, float* sink) {
  long iters = 1 << 10;
  for (;;) {
    Timing t = run(iters, 1.0f, sink);
    if (t.wall > 0.002 || iters > (1L << 40)) break;
    iters *= 2;
  }
  Peak p{bits, 0, 0};
  auto start = std::chrono::steady_clock::now();
  int reps = 0;
  while (reps < 20 ||
         std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
    Timing t = run(iters, static_cast<float>(reps % 7 + 2), sink);
    const double flops = flops_per_iter * static_cast<double>(iters);
    if (t.wall > 0 && flops / t.wall * 1e-9 > p.wall_gflops) p.wall_gflops = flops / t.wall * 1e-9;
    if (t.cpu > 0 && flops / t.cpu * 1e-9 > p.cpu_gflops) p.cpu_gflops = flops / t.cpu * 1e-9;
    ++reps;
  }
  return p;
}

template <int Bytes>
Peak peak_gflops(double seconds, float* sink) {
  return best_of(run<Bytes>, 2.0 * kAcc * Vec<Bytes>::kLanes, Bytes * 8, seconds, sink);
}

// bf16 dot products (AVX512_BF16 vdpbf16ps: 16 lanes, each adds two bf16 products to a float32
// accumulator, 64 FLOPs an instruction) where the CPU has them: the ceiling of oneDNN's
// precision=bf16 on a CPU without AMX. Same scheme as the float32 loop: 16 independent chains,
// the best of many short repetitions.
#if defined(__x86_64__)
__attribute__((target("avx512f,avx512bf16"), noinline)) Timing run_bf16(long iters, float seed,
                                                                         float* sink) {
  using V16 = __m512;
  const V16 init = _mm512_set1_ps(seed * 1e-7f);
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80);  // 1.0 in bf16
  const __m512bh b = (__m512bh)_mm512_set1_epi16(0x3380);  // about 6e-8
#define TESSERA_ACC(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
#define TESSERA_INIT(i) V16 c##i = _mm512_mul_ps(init, _mm512_set1_ps(static_cast<float>(i + 1)));
#define TESSERA_DOT(i) c##i = _mm512_dpbf16_ps(c##i, a, b);
#define TESSERA_SUM(i) total = _mm512_add_ps(total, c##i);
  TESSERA_ACC(TESSERA_INIT)
  auto t0 = std::chrono::steady_clock::now();
  double cpu0 = thread_cpu_seconds();
  for (long it = 0; it < iters; ++it) {
    TESSERA_ACC(TESSERA_DOT)
  }
  double cpu1 = thread_cpu_seconds();
  auto t1 = std::chrono::steady_clock::now();
  V16 total = init;
  TESSERA_ACC(TESSERA_SUM)
#undef TESSERA_ACC
#undef TESSERA_INIT
#undef TESSERA_DOT
#undef TESSERA_SUM
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, total);
  for (float l : lanes) *sink += l;
  return {std::chrono::duration<double>(t1 - t0).count(), cpu1 - cpu0};
}

bool have_bf16_dot() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512bf16");
}

Peak peak_bf16_gflops(double seconds, float* sink) {
  return best_of(run_bf16, 64.0 * kAcc, 512, seconds, sink);
}
#else
bool have_bf16_dot() { return false; }
Peak peak_bf16_gflops(double, float*) { return {0, 0, 0}; }
#endif

}  // namespace

int main(int argc, char** argv) {
  double seconds = 1.0;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (!std::strcmp(argv[i], "--json")) {
      json = true;
    } else {
      std::fprintf(stderr, "usage: %s [--seconds S] [--json]\n", argv[0]);
      return 2;
    }
  }
  float sink = 0;
  std::vector<Peak> results;
  results.push_back(peak_gflops<16>(seconds, &sink));
#if defined(__AVX__)
  results.push_back(peak_gflops<32>(seconds, &sink));
#endif
#if defined(__AVX512F__)
  results.push_back(peak_gflops<64>(seconds, &sink));
#endif
  const bool bf16 = have_bf16_dot();
  const Peak bf16_peak = bf16 ? peak_bf16_gflops(seconds, &sink) : Peak{0, 0, 0};
  Peak best = results[0];
  for (const auto& r : results)
    if (r.wall_gflops > best.wall_gflops) best = r;
  if (json) {
    std::printf("{\"accumulators\": %d, \"widths\": [", kAcc);
    for (size_t i = 0; i < results.size(); ++i)
      std::printf("%s{\"bits\": %d, \"gflops\": %.2f, \"cpu_time_gflops\": %.2f}", i ? ", " : "",
                  results[i].bits, results[i].wall_gflops, results[i].cpu_gflops);
    std::printf("], \"peak_gflops\": %.2f, \"peak_cpu_time_gflops\": %.2f, \"peak_bits\": %d, ",
                best.wall_gflops, best.cpu_gflops, best.bits);
    if (bf16) {
      std::printf("\"bf16_dot_gflops\": %.2f, \"bf16_dot_cpu_time_gflops\": %.2f, ", bf16_peak.wall_gflops,
                  bf16_peak.cpu_gflops);
    } else {
      std::printf("\"bf16_dot_gflops\": null, ");
    }
    std::printf("\"nonzero\": %d}\n", sink != 0 ? 1 : 0);
  } else {
    for (const auto& r : results)
      std::printf("%4d-bit FMA: %8.2f GFLOP/s (by thread CPU time: %.2f)\n", r.bits, r.wall_gflops,
                  r.cpu_gflops);
    std::printf("peak (one core, float32): %.2f GFLOP/s with %d-bit vectors\n", best.wall_gflops, best.bits);
    if (bf16) {
      std::printf("bf16 dot products (vdpbf16ps, 512-bit): %8.2f GFLOP/s (by thread CPU time: %.2f), %.2fx the float32 peak\n",
                  bf16_peak.wall_gflops, bf16_peak.cpu_gflops, bf16_peak.wall_gflops / best.wall_gflops);
    } else {
      std::printf("bf16 dot products: not available on this CPU (no AVX512_BF16)\n");
    }
  }
  return sink == 12345.0f ? 1 : 0;  // keeps the results observable
}
