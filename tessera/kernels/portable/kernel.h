// The portable kernel interface: every op of the IR, prepared once at load, run per execute.
//
// prepare_kernel() validates the node's attributes and the (fully resolved) input and output
// shapes, computes what the op needs (broadcast strides, im2col geometry, index tables, ...) and
// returns a PreparedKernel whose state lives in `allocator` memory. run_kernel() does the
// arithmetic and never allocates on the heap; it may use the scratch reserved at prepare.
// Op semantics and the IR conventions (attributes, dtypes, fused activations) are documented in
// tessera/kernels/portable/ops.md.
#pragma once

#include <cstddef>

#include "tessera/core/memory_allocator.h"
#include "tessera/core/result.h"
#include "tessera/core/span.h"
#include "tessera/core/tensor.h"
#include "tessera/ir/schema.h"

namespace tessera::portable {

/// What prepare sees of one node. Tensors carry dtype and resolved sizes (contiguous, default
/// dim order); prepare reads only their dtypes and sizes, never their data, and keeps no pointer
/// to the node, the tensors or the spans after it returns.
struct KernelNode {
  const fb::Node* node;                 // op, name, attributes, fused activation; borrowed
  Span<const Tensor* const> inputs;     // positional; nullptr entries for absent optional inputs
  Span<const Tensor* const> outputs;    // their sizes are the shapes the op must produce
};

using KernelRunFn = Status (*)(const void* state, Span<const Tensor* const> inputs,
                               Span<Tensor* const> outputs);

/// A prepared kernel: a run function and its state. The state (and any scratch) lives in the
/// allocator given to prepare_kernel, which must outlive every run; nothing needs freeing. A
/// prepared kernel holds scratch, so it must not run on two threads at once.
struct PreparedKernel {
  KernelRunFn run = nullptr;
  const void* state = nullptr;   // in the allocator passed to prepare_kernel
};

/// Validates `node` and prepares its kernel. Errors: InvalidProgram (bad attribute, attribute
/// type or arity; dtypes breaking the op's type constraints), ShapeMismatch (output shapes
/// disagree with what the op computes; both shapes are in the message), NotSupported (a dtype,
/// layout or attribute value the kernel does not handle), OperatorMissing (op not in the IR),
/// MemoryAllocationFailed (allocator exhausted; what was allocated is not returned).
/// Messages (but for a null node) start with "<Op> node '<name>': ".
Result<PreparedKernel> prepare_kernel(const KernelNode& node, MemoryAllocator& allocator);

/// Runs a prepared kernel on tensors with the dtypes and sizes given at prepare, in the same
/// positions (nullptr for the same absent inputs). Data pointers may differ from one run to the
/// next; outputs must not overlap inputs. Allocates nothing. Fails only on data-dependent errors
/// (Gather's out-of-range index: InvalidArgument).
inline Status run_kernel(const PreparedKernel& k, Span<const Tensor* const> inputs,
                         Span<Tensor* const> outputs) {
  return k.run(k.state, inputs, outputs);
}

/// True if prepare_kernel knows `op` at all (it may still reject a dtype or attribute).
bool has_kernel(fb::OpType op);

}  // namespace tessera::portable
