// SiLU (x * sigmoid(x)) computed by Tessera in place, for the oneDNN backend's convolutions whose
// output feeds a SiLU (EfficientNet-B0 has 49).
//
// oneDNN 2.6's swish post-op (and its eltwise primitive) costs about 0.5 ns per element on an
// AVX-512 Zen 4 core; a 16-to-96-channel 1x1 convolution at 112x112 took 0.40-0.47 ms plain and
// 1.06-1.16 ms with the swish post-op. The kernels here take x / (1 + exp(-x)) with a degree-6
// polynomial for exp over a reduced argument (Cephes' coefficients) and run as a pass over the
// convolution's output right after it (docs/performance.md, "SiLU after the convolution").
#pragma once

#include <oneapi/dnnl/dnnl_types.h>

#include <cstddef>

namespace tessera::onednn {

/// The widest kernel to run; never above what the CPU and oneDNN's max_cpu_isa allow.
enum class SiluIsa { Scalar, Avx2, Avx512 };

/// Its name ("scalar", "avx2", "avx512") for reports.
const char* silu_isa_name(SiluIsa isa);

/// The kernel for oneDNN ISA bit set `isa`: Avx512 where it includes avx512_core, Avx2 where
/// avx2, else Scalar.
SiluIsa silu_isa_for(dnnl_cpu_isa_t isa);
/// silu_isa_for(oneDNN's effective ISA: the CPU capped by max_cpu_isa).
SiluIsa silu_isa_for_onednn();

/// data[i] = data[i] / (1 + exp(-data[i])) for i < count with `isa`'s kernel (the caller makes
/// sure the CPU has it), split over `threads` OpenMP threads when count is large enough to gain.
/// Maximum error about 2 ulp of the result, or 3e-37 absolute (results below that in magnitude
/// may be flushed to -0); -inf gives NaN as x * sigmoid(x) does, +inf gives +inf, NaN stays NaN.
void silu_in_place(float* data, size_t count, SiluIsa isa, int threads);

}  // namespace tessera::onednn
