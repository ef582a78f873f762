// The portable kernel interface: every op of the IR, prepared once at load, run per execute.
//
// prepare_kernel() validates the node's attributes and the (fully resolved) input and output
// shapes, computes what the op needs (broadcast strides, im2col sizes, ...) and returns a
// PreparedKernel whose state lives in `allocator` memory. run_kernel() does the arithmetic and
// never allocates on the heap; it may use the scratch buffer reserved at prepare.
#pragma once

#include <cstddef>

#include "tessera/core/memory_allocator.h"
#include "tessera/core/result.h"
#include "tessera/core/span.h"
#include "tessera/core/tensor.h"
#include "tessera/ir/schema.h"

namespace tessera::portable {

/// What prepare sees of one node. Tensors carry dtype and resolved sizes; data pointers of
/// inputs are set for constants (weights) and may be null for activations.
struct KernelNode {
  const fb::Node* node;                 // op, name, attributes, fused activation; borrowed
  Span<const Tensor* const> inputs;     // nullptr entries for absent optional inputs
  Span<const Tensor* const> outputs;
};

using KernelRunFn = Status (*)(const void* state, Span<const Tensor* const> inputs,
                               Span<Tensor* const> outputs);

struct PreparedKernel {
  KernelRunFn run = nullptr;
  const void* state = nullptr;   // in the allocator passed to prepare_kernel
};

/// Validates `node` and prepares its kernel. Errors: InvalidProgram (bad attribute or arity),
/// ShapeMismatch (output shapes disagree with what the op computes), NotSupported (a dtype or
/// attribute value the kernel does not handle), MemoryAllocationFailed (allocator exhausted).
/// The error message names the op and the node.
Result<PreparedKernel> prepare_kernel(const KernelNode& node, MemoryAllocator& allocator);

/// Runs a prepared kernel. Inputs/outputs must have the shapes given at prepare.
inline Status run_kernel(const PreparedKernel& k, Span<const Tensor* const> inputs,
                         Span<Tensor* const> outputs) {
  return k.run(k.state, inputs, outputs);
}

/// True if prepare_kernel knows `op` at all (it may still reject a dtype or attribute).
bool has_kernel(fb::OpType op);

}  // namespace tessera::portable
