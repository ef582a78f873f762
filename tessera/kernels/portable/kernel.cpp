#include "tessera/kernels/portable/kernel.h"

#include "tessera/ir/op.h"
#include "tessera/kernels/portable/gemm.h"
#include "tessera/kernels/portable/ops.h"

namespace tessera::portable {
namespace {

using Op = fb::OpType;

Result<PreparedKernel> dispatch(OpContext& ctx) {
  // One case per row of the op table, so every op has a kernel family.
  switch (ctx.op()) {
#define TESSERA_OP(name, attrs, in_min, in_max, out_min, out_max, act, kernel, import, shape) \
  case Op::name:                                                                              \
    return prepare_##kernel(ctx);
#include "tessera/ir/ops.def"
#undef TESSERA_OP
  }
  return ctx.error(Error::OperatorMissing, "no portable kernel");
}

// The generic fused activation: runs the op, then clamps its float32 output.
struct ActivationState {
  KernelRunFn inner;
  const void* inner_state;
  float lo, hi;
};

Status run_with_activation(const void* state, Span<const Tensor* const> inputs,
                           Span<Tensor* const> outputs) {
  const auto* s = static_cast<const ActivationState*>(state);
  TESSERA_RETURN_IF_ERROR(s->inner(s->inner_state, inputs, outputs));
  Tensor* out = outputs[0];
  clamp_inplace(out->data_as<float>(), out->numel(), s->lo, s->hi);
  return Status::ok();
}

}  // namespace

Result<PreparedKernel> prepare_kernel(const KernelNode& node, MemoryAllocator& allocator) {
  if (node.node == nullptr) {
    return Status(Error::InvalidArgument, "prepare_kernel: node is null");
  }
  if (!ir::is_valid_op(static_cast<int>(node.node->op()))) {
    const char* name = node.node->name() ? node.node->name()->c_str() : "";
    return Status::error(Error::OperatorMissing, "op %d node '%s': no portable kernel for op %d",
                         static_cast<int>(node.node->op()), name,
                         static_cast<int>(node.node->op()));
  }
  OpContext ctx(node, allocator);
  TESSERA_RETURN_IF_ERROR(ctx.validate_common());
  TESSERA_ASSIGN_OR_RETURN(PreparedKernel kernel, dispatch(ctx));
  const Activation& act = ctx.activation();
  if (act.enabled && !ctx.activation_fused()) {
    const Tensor* out = ctx.output(0);
    if (out == nullptr || out->dtype() != ScalarType::Float32) {
      return ctx.error(Error::NotSupported, "a fused activation needs a float32 output, got %s",
                       out ? dtype_name(out->dtype()) : "none");
    }
    TESSERA_ASSIGN_OR_RETURN(ActivationState * s, ctx.make_state<ActivationState>());
    *s = ActivationState{kernel.run, kernel.state, act.min, act.max};
    kernel = PreparedKernel{run_with_activation, s};
  }
  return kernel;
}

bool has_kernel(fb::OpType op) { return ir::is_valid_op(static_cast<int>(op)); }

}  // namespace tessera::portable
