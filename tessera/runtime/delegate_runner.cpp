#include "tessera/runtime/delegate_runner.h"

#include <cstdio>

#include "tessera/ir/op.h"

namespace tessera::internal {

Status load_delegate(const Program&, const fb::Method* method, const fb::Instruction* ins,
                     const LoadOptions&, MethodState*, DelegateStep*) {
  const fb::Delegate* d = method->delegates()->Get(static_cast<uint32_t>(ins->delegate()));
  return Status::error(Error::NotImplemented, "delegate '%s': backends are not wired yet",
                       d->id()->c_str());
}

void destroy_delegate(DelegateStep*) {}

Status execute_steps(MethodState* s, const ExecuteOptions*) {
  for (uint32_t i = 0; i < s->num_steps; ++i) {
    const Step& step = s->steps[i];
    if (!step.is_delegate) {
      const KernelStep& k = s->kernels[step.index];
      Status st = portable::run_kernel(k.kernel, {k.inputs, k.num_inputs}, {k.outputs, k.num_outputs});
      if (!st.is_ok()) {
        char prefix[128];
        std::snprintf(prefix, sizeof prefix, "instruction %u (%s node '%s')", i,
                      ir::op_name(k.node->op()), k.node->name() ? k.node->name()->c_str() : "");
        return st.with_prefix(prefix);
      }
    } else {
      return Status(Error::NotImplemented, "delegates are not wired yet");
    }
  }
  return Status::ok();
}

}  // namespace tessera::internal
