#include "tessera/kernels/portable/kernel.h"

#include "tessera/ir/op.h"
#include "tessera/kernels/portable/gemm.h"
#include "tessera/kernels/portable/ops.h"

namespace tessera::portable {
namespace {

using Op = fb::OpType;

Result<PreparedKernel> dispatch(OpContext& ctx) {
  switch (ctx.op()) {
    case Op::Identity: return prepare_identity(ctx);
    case Op::Conv: return prepare_conv(ctx);
    case Op::ConvTranspose: return prepare_conv_transpose(ctx);
    case Op::Gemm: return prepare_gemm(ctx);
    case Op::MatMul: return prepare_matmul(ctx);
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Div:
    case Op::Pow:
    case Op::Min:
    case Op::Max: return prepare_arithmetic(ctx);
    case Op::Equal:
    case Op::Less:
    case Op::Greater: return prepare_compare(ctx);
    case Op::Where: return prepare_where(ctx);
    case Op::PRelu: return prepare_prelu(ctx);
    case Op::Relu:
    case Op::Clip:
    case Op::LeakyRelu:
    case Op::Sigmoid:
    case Op::Tanh:
    case Op::HardSigmoid:
    case Op::HardSwish:
    case Op::Erf:
    case Op::Gelu:
    case Op::Sqrt:
    case Op::Exp:
    case Op::Neg:
    case Op::Reciprocal:
    case Op::Abs: return prepare_unary(ctx);
    case Op::Softmax: return prepare_softmax(ctx);
    case Op::LayerNormalization: return prepare_layer_norm(ctx);
    case Op::BatchNormalization: return prepare_batch_norm(ctx);
    case Op::MaxPool:
    case Op::AveragePool: return prepare_pool(ctx);
    case Op::GlobalAveragePool: return prepare_global_average_pool(ctx);
    case Op::ReduceMean:
    case Op::ReduceSum:
    case Op::ReduceMax: return prepare_reduce(ctx);
    case Op::Reshape:
    case Op::Flatten:
    case Op::Squeeze:
    case Op::Unsqueeze: return prepare_reshape_like(ctx);
    case Op::Transpose: return prepare_transpose(ctx);
    case Op::Concat: return prepare_concat(ctx);
    case Op::Split: return prepare_split(ctx);
    case Op::Slice: return prepare_slice(ctx);
    case Op::Gather: return prepare_gather(ctx);
    case Op::Pad: return prepare_pad(ctx);
    case Op::Resize: return prepare_resize(ctx);
    case Op::Cast: return prepare_cast(ctx);
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
