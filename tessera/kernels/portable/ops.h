// Per-family prepare functions behind prepare_kernel(). Internal to the portable kernels.
// Each validates its node through the OpContext and returns the run function and its state.
#pragma once

#include "tessera/core/result.h"
#include "tessera/kernels/portable/kernel.h"
#include "tessera/kernels/portable/op_context.h"

namespace tessera::portable {

// shape_ops.cpp: data movement, every dtype.
Result<PreparedKernel> prepare_identity(OpContext& ctx);
Result<PreparedKernel> prepare_reshape_like(OpContext& ctx);  // Reshape Flatten Squeeze Unsqueeze
Result<PreparedKernel> prepare_transpose(OpContext& ctx);
Result<PreparedKernel> prepare_channel_shuffle(OpContext& ctx);
Result<PreparedKernel> prepare_concat(OpContext& ctx);
Result<PreparedKernel> prepare_split(OpContext& ctx);
Result<PreparedKernel> prepare_slice(OpContext& ctx);
Result<PreparedKernel> prepare_gather(OpContext& ctx);
Result<PreparedKernel> prepare_pad(OpContext& ctx);
Result<PreparedKernel> prepare_cast(OpContext& ctx);

// binary.cpp: broadcasting elementwise ops.
Result<PreparedKernel> prepare_arithmetic(OpContext& ctx);  // Add Sub Mul Div Pow Min Max
Result<PreparedKernel> prepare_compare(OpContext& ctx);     // Equal Less Greater
Result<PreparedKernel> prepare_where(OpContext& ctx);
Result<PreparedKernel> prepare_prelu(OpContext& ctx);

// unary.cpp: float32 elementwise functions and activations.
Result<PreparedKernel> prepare_unary(OpContext& ctx);

// norm.cpp
Result<PreparedKernel> prepare_softmax(OpContext& ctx);
Result<PreparedKernel> prepare_layer_norm(OpContext& ctx);
Result<PreparedKernel> prepare_batch_norm(OpContext& ctx);

// pool.cpp
Result<PreparedKernel> prepare_pool(OpContext& ctx);  // MaxPool AveragePool
Result<PreparedKernel> prepare_global_average_pool(OpContext& ctx);

// reduce.cpp
Result<PreparedKernel> prepare_reduce(OpContext& ctx);  // ReduceMean ReduceSum ReduceMax

// conv.cpp
Result<PreparedKernel> prepare_conv(OpContext& ctx);
Result<PreparedKernel> prepare_conv_transpose(OpContext& ctx);

// matmul.cpp
Result<PreparedKernel> prepare_gemm(OpContext& ctx);
Result<PreparedKernel> prepare_matmul(OpContext& ctx);

// resize.cpp
Result<PreparedKernel> prepare_resize(OpContext& ctx);

}  // namespace tessera::portable
