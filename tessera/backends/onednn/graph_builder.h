// Lowers a delegate payload (the portable graph IR, an fb::Graph) to oneDNN primitives.
//
// Layouts: convolutions and pooling take `format_tag::any`, so oneDNN picks its blocked or NHWC
// layouts; other consumers take what their producer gave or ask for a plain (row-major) copy; a
// reorder step is inserted only where a consumer needs another layout. Constants (weights,
// biases) are reordered once at init into the layout the primitive chose.
//
// Fusions: a node's fused activation becomes an eltwise post-op (Conv, Gemm/MatMul, binary ops);
// Conv followed by Add with another tensor of the same shape becomes a `sum` post-op. When the
// residual operand is not read afterwards the convolution writes into the residual's own buffer
// (in place), otherwise the residual is first copied into the convolution's destination. A
// separate `binary add` of two large activations falls back to slow kernels on oneDNN 2.6; the
// sum post-op keeps the convolution on its fast (brgemm/jit) path.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <memory>
#include <string>

#include "tessera/backend/context.h"
#include "tessera/backend/payload_graph.h"
#include "tessera/backends/onednn/delegate.h"
#include "tessera/core/result.h"
#include "tessera/ir/schema.h"

namespace tessera::onednn {

/// How fp32 3x3 stride-1 convolutions are computed (the `conv_algorithm` option).
enum class ConvAlgorithm {
  Auto,      // Winograd where oneDNN has a kernel and it measured faster (channels, size)
  Direct,    // always direct (brgemm / jit)
  Winograd,  // Winograd wherever oneDNN has a kernel; an init error on a CPU without them
};

struct BuildOptions {
  dnnl::engine engine;
  ConvAlgorithm conv_algorithm = ConvAlgorithm::Auto;
  bool winograd_kernels = false;  // oneDNN's effective ISA has Winograd kernels (avx512_core)
  std::string cache_dir;          // Winograd weights cache ("" = none)
  bool cache_read = false;        // entries are used when valid
  bool cache_write = false;       // missing or bad entries are (re)written
  uint64_t cache_max_bytes = 0;   // bound on the entries' total size after a write (0 = none)
  bool bf16 = false;  // activations and weights in bf16 (fp32 accumulation); boundaries stay fp32
  int threads = 1;    // OpenMP team size the primitives are created and run with
};

/// Builds a delegate for the payload graph `view`. Errors: InvalidProgram (a constant shorter
/// than its value), NotSupported (a node check_node rejects), DelegateInvalidCompatibility
/// (oneDNN refused a primitive; its message is included).
Result<std::unique_ptr<Delegate>> build_delegate(const PayloadGraph& view,
                                                 const BackendInitContext& context,
                                                 const BuildOptions& options);

}  // namespace tessera::onednn
