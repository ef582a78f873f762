// Activation fusion: marks a Relu or Clip that follows Conv, ConvTranspose, Gemm, MatMul, Add,
// Sub, Mul or Div on the producing node (fb::Node::activation) and removes it, when the
// intermediate value has no other consumer and is not a graph output. Backends may use the
// marker; the portable kernels apply it after the op.
#pragma once

#include "tessera/compiler/model_graph.h"

namespace tessera::compiler {

/// Returns the number of activations fused.
int fuse_activations(ModelGraph& graph);

}  // namespace tessera::compiler
