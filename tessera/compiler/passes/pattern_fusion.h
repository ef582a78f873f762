// Pattern fusion: recognises ops that exporters spell out elementwise and gives them back their
// IR op, so backends (and the portable kernels) see one node:
//   - Gelu: x * 0.5 * (1 + erf(x / sqrt(2))) in the orders PyTorch emits -> Gelu(approximate=none)
//   - LayerNormalization before opset 17: ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div,
//     then an optional Mul by scale and Add of bias over the trailing axes -> LayerNormalization
//   - ChannelShuffle: Reshape [N, C, H, W] -> [N, g, C/g, H, W], Transpose perm 0 2 1 3 4, Reshape
//     back to [N, C, H, W] (ShuffleNet's channel shuffle; N may be symbolic, C must be known)
//     -> ChannelShuffle(group=g). Other ranks and other split axes are left as they are.
// Only single-use intermediates are fused, so no value another node reads disappears.
#pragma once

#include "tessera/compiler/model_graph.h"

namespace tessera::compiler {

/// Returns the number of Gelu patterns replaced.
int fuse_gelu(ModelGraph& graph);

/// Returns the number of LayerNormalization patterns replaced.
int fuse_layer_norm(ModelGraph& graph);

/// Returns the number of channel shuffles (Reshape, Transpose, Reshape) replaced.
int fuse_channel_shuffle(ModelGraph& graph);

}  // namespace tessera::compiler
