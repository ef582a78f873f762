// Shape and dtype inference for portable IR nodes over symbolic dims.
#pragma once

#include <string>
#include <vector>

#include "tessera/compiler/model_graph.h"
#include "tessera/core/result.h"

namespace tessera::compiler {

/// Sets the dtype and dims of `node`'s outputs from its inputs and attributes. Reshape, Flatten,
/// Squeeze, Unsqueeze, Split and Resize take their result shape from the output values, which
/// must be set already; for them only the element count (where it must agree) is checked.
/// Errors name the node: `node 'conv1' (Conv): ...`.
Status infer_shapes(ModelGraph& graph, size_t node_index);
/// The same for a node not (yet) in graph.nodes.
Status infer_shapes(ModelGraph& graph, const ir::Node& node);

/// Numpy-style broadcast of two shapes; an error when a pair of dims is neither equal nor 1.
Result<std::vector<SymExpr>> broadcast_shapes(const ModelGraph& graph, const std::vector<SymExpr>& a,
                                              const std::vector<SymExpr>& b);

/// Integer attribute helpers (absent: the fallback / an empty list).
int64_t attr_int(const ir::Node& node, const char* name, int64_t fallback);
std::vector<int64_t> attr_ints(const ir::Node& node, const char* name);

/// Output size of a convolution/pooling window along one axis.
SymExpr window_output_dim(const SymExpr& in, int64_t kernel, int64_t stride, int64_t dilation,
                          int64_t pad_begin, int64_t pad_end, bool ceil_mode);

}  // namespace tessera::compiler
