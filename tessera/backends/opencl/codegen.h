// Kernel generation: each node of a payload graph becomes one OpenCL C kernel (or an alias of its
// input, for the ops that only reinterpret a shape). plan_node() validates the node and decides
// the kernel's body and its integer parameters; kernel_source() writes the kernel, with the
// parameters as kernel arguments or, specialised, as #defines baked into the code.
//
// Every kernel is one-dimensional: work item `gid` computes output element (or row, or tile)
// `gid` and items past P_total return at once, so any local work size is valid (the tuner relies
// on it). A node may run as several kernels (Conv: im2col into the delegate's scratch buffer,
// then a register-tiled GEMM); they run in order on one in-order queue.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tessera/backend/dims.h"
#include "tessera/core/span.h"
#include "tessera/core/status.h"
#include "tessera/ir/schema.h"

namespace tessera::opencl {

/// Value index that stands for the delegate's scratch buffer (shared by every node: the kernels
/// run in order, and a node's scratch is dead once its last kernel has run).
inline constexpr int kScratchValue = -2;

/// A row-major GEMM run by a library (CLBlast) instead of a generated kernel, over `batch`
/// matrices: C[b] (m x n, ldc) = alpha * op(A[b]) * op(B[b]), A = inputs[0], B = inputs[1],
/// C = output; element offsets of matrix b are b * <x>_stride (a_stride 0: one A for all).
struct LibraryGemm {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  bool trans_a = false, trans_b = false;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t a_stride = 0, b_stride = 0, c_stride = 0;
  float alpha = 1.0f;
};

/// How a node's matrix products run: generated register-tiled kernels, or CLBlast's GEMM (with
/// generated kernels around it: im2col before, bias, residual and activation after).
enum class GemmImpl { Generated, Clblast };

/// One generated kernel (or, with `library`, one library GEMM call). The body reads `in0`,
/// `in1`, ... and writes `out0`; P_<name> are its integer parameters.
struct KernelPlan {
  std::string name;    // unique in the program: "k<node index>"
  std::string label;   // for profiling events: "<Op> <node name>"
  std::string body;
  std::vector<std::pair<std::string, int64_t>> params;
  int output = -1;          // value index written (kScratchValue: the scratch buffer)
  std::vector<int> inputs;  // value indices read, as in0, in1, ... (or kScratchValue)
  int64_t work_items = 0;
  size_t preferred_local = 0;  // local size used when not tuned (0 = the driver's choice)
  bool library = false;        // a LibraryGemm call: no body, no text
  LibraryGemm gemm;
};

/// A residual Add folded into the Conv that produces one of its operands: the Conv's GEMM adds
/// `residual` (a value of the Conv output's shape, computed before the Conv runs) to each output
/// before the Add's fused activation, and the Add itself becomes an alias of the Conv's output.
struct ResidualFusion {
  int residual = -1;  // value index added to the Conv's output
  fb::Activation activation = fb::Activation::None;
  float activation_min = 0.0f, activation_max = 0.0f;
};

/// How one node runs: a kernel, or (shape-only ops) its output aliases its input's buffer.
struct NodePlan {
  bool alias = false;
  int alias_of = -1;  // input value whose buffer the output shares
  std::vector<KernelPlan> before;  // kernels run before `kernel` (e.g. im2col)
  KernelPlan kernel;
  int64_t scratch_floats = 0;  // scratch buffer size the kernels need
};

/// Plans node `node_index` of `graph` with every value's shape in `shapes`. Errors: NotSupported
/// (op, dtype, rank or attribute value this backend does not run), InvalidProgram (malformed
/// attributes), ShapeMismatch (output shape disagrees with the op). Messages name op and node.
/// `fusion` (a Conv with group 1 and no activation of its own only; see can_fuse_residual) adds
/// a residual operand to the Conv's output.
/// `gemm` chooses how Conv (group 1) and Gemm multiply.
Status plan_node(const fb::Graph& graph, int node_index, Span<const Dims> shapes, NodePlan* plan,
                 const ResidualFusion* fusion = nullptr, GemmImpl gemm = GemmImpl::Generated);

/// Whether node `conv_index` is a Conv whose output the GEMM lowering can add a residual to: group
/// 1, no fused activation of its own, float32 output of `shape`.
bool can_fuse_residual(const fb::Graph& graph, int conv_index, Span<const Dims> shapes);

/// The value shapes of `graph` as stored (symbolic dims at their upper bound).
std::vector<Dims> stored_shapes(const fb::Graph& graph);

/// The OpenCL C text of one kernel. Arguments: out0, in0..., then (unless `specialize`) one int
/// per parameter in order.
std::string kernel_source(const KernelPlan& plan, bool specialize);

}  // namespace tessera::opencl
