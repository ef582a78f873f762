#include "tessera/backends/portable/portable_backend.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "tessera/backend/context.h"
#include "tessera/backend/payload_graph.h"
#include "tessera/backend/registry.h"
#include "tessera/ir/memory_plan.h"
#include "tessera/ir/op.h"
#include "tessera/ir/schema.h"
#include "tessera/kernels/portable/kernel.h"

namespace tessera {
namespace {

constexpr OptionSpec kSchema[] = {
    OptionSpec::boolean(kPortableProfile, false, OptionLevel::Execute,
                        "Time every node of the delegate for this call and report the timings"),
};

struct NodeStep {
  portable::PreparedKernel kernel;
  const Tensor** inputs;
  Tensor** outputs;
  uint32_t num_inputs;
  uint32_t num_outputs;
  const char* name;  // "Conv conv1", for profiles
};

// Lives in the method allocator; nothing to free but the arena, which is there too.
struct PortableDelegate {
  const fb::Graph* graph;
  Tensor* tensors;  // one per graph value
  uint32_t num_values;
  Tensor** inputs;  // graph inputs, bound to args per call
  uint32_t num_inputs;
  Tensor** outputs;
  uint32_t num_outputs;
  NodeStep* steps;
  uint32_t num_steps;
};

Status no_memory(std::string_view id) {
  return Status::error(Error::MemoryAllocationFailed,
                       "portable: method allocator exhausted initialising delegate '%.*s'",
                       static_cast<int>(id.size()), id.data());
}

}  // namespace

Span<const OptionSpec> PortableBackend::option_schema() const { return kSchema; }

bool PortableBackend::supports_op(const OpView& op) const {
  return ir::is_valid_op(op.op) && portable::has_kernel(static_cast<fb::OpType>(op.op));
}

std::string PortableBackend::unsupported_reason(const OpView& op) const {
  if (supports_op(op)) return std::string();
  if (!ir::is_valid_op(op.op)) return "portable: op " + std::to_string(op.op) + " is not an OpType";
  return std::string("portable: no kernel for ") + ir::op_name(static_cast<fb::OpType>(op.op));
}

Result<DelegateHandle*> PortableBackend::init(BackendInitContext& ctx, FreeableBuffer* payload,
                                              Span<const CompileSpec>) const {
  MemoryAllocator* alloc = ctx.method_allocator();
  if (alloc == nullptr) return Status(Error::InvalidArgument, "portable: no method allocator");
  TESSERA_ASSIGN_OR_RETURN(const PayloadGraph view, PayloadGraph::make(ctx, payload));
  const fb::Graph* graph = &view.graph();
  const std::string_view id = ctx.delegate_id();

  auto* d = alloc->make<PortableDelegate>();
  if (!d) return no_memory(id);
  *d = PortableDelegate{};
  d->graph = graph;
  d->num_values = static_cast<uint32_t>(view.num_values());
  d->tensors = alloc->allocate_array<Tensor>(d->num_values ? d->num_values : 1);
  if (!d->tensors) return no_memory(id);

  // Shapes and constants; graph inputs and outputs are bound per call.
  for (uint32_t v = 0; v < d->num_values; ++v) {
    const PayloadValue& val = view.value(static_cast<int32_t>(v));
    new (&d->tensors[v]) Tensor();
    if (!val.is_tensor()) continue;
    void* data = val.is_constant() ? const_cast<uint8_t*>(val.data.data()) : nullptr;
    d->tensors[v] = Tensor(val.dtype, view.dims(static_cast<int32_t>(v)).span(), data);
  }

  // Intermediate values share one arena planned over their lifetimes.
  const uint32_t nnodes = static_cast<uint32_t>(view.num_nodes());
  std::vector<ir::PlanItem> items;
  std::vector<uint32_t> which;
  for (uint32_t v = 0; v < d->num_values; ++v) {
    const PayloadValue& val = view.value(static_cast<int32_t>(v));
    if (val.graph_input >= 0 || val.graph_output || val.producer < 0) continue;
    const Span<const int32_t> readers = view.consumers(static_cast<int32_t>(v));
    const int last = readers.empty() ? val.producer : std::max<int>(val.producer, readers.back());
    items.push_back({d->tensors[v].nbytes(), val.producer, last});
    which.push_back(v);
  }
  ir::MemoryPlan plan = ir::plan_memory(items);
  uint8_t* arena = nullptr;
  if (plan.arena_size > 0) {
    arena = static_cast<uint8_t*>(alloc->allocate(plan.arena_size, 64));
    if (!arena) return no_memory(id);
  }
  for (size_t i = 0; i < which.size(); ++i) d->tensors[which[i]].set_data(arena + plan.offsets[i]);

  d->num_inputs = static_cast<uint32_t>(view.inputs().size());
  d->num_outputs = static_cast<uint32_t>(view.outputs().size());
  d->inputs = alloc->allocate_array<Tensor*>(d->num_inputs ? d->num_inputs : 1);
  d->outputs = alloc->allocate_array<Tensor*>(d->num_outputs ? d->num_outputs : 1);
  d->steps = alloc->allocate_array<NodeStep>(nnodes ? nnodes : 1);
  if (!d->inputs || !d->outputs || !d->steps) return no_memory(id);
  for (uint32_t i = 0; i < d->num_inputs; ++i) d->inputs[i] = &d->tensors[view.inputs()[i]];
  for (uint32_t i = 0; i < d->num_outputs; ++i) d->outputs[i] = &d->tensors[view.outputs()[i]];

  for (uint32_t n = 0; n < nnodes; ++n) {
    const fb::Node* node = &view.node(n);
    const Span<const int32_t> node_inputs = view.node_inputs(n);
    const Span<const int32_t> node_outputs = view.node_outputs(n);
    NodeStep& step = d->steps[n];
    step = NodeStep{};
    step.num_inputs = static_cast<uint32_t>(node_inputs.size());
    step.num_outputs = static_cast<uint32_t>(node_outputs.size());
    step.inputs = alloc->allocate_array<const Tensor*>(step.num_inputs ? step.num_inputs : 1);
    step.outputs = alloc->allocate_array<Tensor*>(step.num_outputs ? step.num_outputs : 1);
    char* name = static_cast<char*>(alloc->allocate(48, 1));
    if (!step.inputs || !step.outputs || !name) return no_memory(id);
    std::snprintf(name, 48, "%s %s", ir::op_name(node->op()), node->name() ? node->name()->c_str() : "");
    step.name = name;
    for (uint32_t k = 0; k < step.num_inputs; ++k) {
      const int32_t v = node_inputs[k];
      step.inputs[k] = v < 0 ? nullptr : &d->tensors[v];
    }
    for (uint32_t k = 0; k < step.num_outputs; ++k) step.outputs[k] = &d->tensors[node_outputs[k]];
    portable::KernelNode kn{node, {step.inputs, step.num_inputs}, {step.outputs, step.num_outputs}};
    auto prepared = portable::prepare_kernel(kn, *alloc);
    if (!prepared.ok()) {
      char prefix[96];
      std::snprintf(prefix, sizeof prefix, "portable: delegate '%.*s' node %u",
                    static_cast<int>(id.size()), id.data(), n);
      return prepared.status().with_prefix(prefix);
    }
    step.kernel = *prepared;
    d->num_steps = n + 1;
  }
  return to_handle(d);
}

Status PortableBackend::execute(BackendExecutionContext& ctx, DelegateHandle* handle,
                                Span<EValue*> args) const {
  auto* d = from_handle<PortableDelegate>(handle);
  if (d == nullptr) return Status(Error::DelegateInvalidHandle, "portable: null handle");
  if (args.size() != d->num_inputs + d->num_outputs) {
    return Status::error(Error::InvalidArgument, "portable: %zu args for %u inputs and %u outputs",
                         args.size(), d->num_inputs, d->num_outputs);
  }
  for (uint32_t i = 0; i < d->num_inputs + d->num_outputs; ++i) {
    Tensor* t = i < d->num_inputs ? d->inputs[i] : d->outputs[i - d->num_inputs];
    const Tensor& arg = args[i]->to_tensor();
    if (arg.numel() != t->numel() || arg.dtype() != t->dtype()) {
      return Status::error(Error::ShapeMismatch, "portable: arg %u does not match the delegate", i);
    }
    t->set_data(arg.data());
  }
  bool profile = false;
  if (!ctx.execute_options().empty()) {
    auto p = ctx.get(kPortableProfile);
    profile = p.ok() && *p;
  }
  for (uint32_t n = 0; n < d->num_steps; ++n) {
    const NodeStep& s = d->steps[n];
    auto t0 = profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    TESSERA_RETURN_IF_ERROR(portable::run_kernel(s.kernel, {s.inputs, s.num_inputs}, {s.outputs, s.num_outputs}));
    if (profile) {
      ctx.report_event(s.name, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  return Status::ok();
}

void PortableBackend::destroy(DelegateHandle*) const {
  // Everything lives in the method allocator, released with the Method.
}

TESSERA_REGISTER_BACKEND("portable", PortableBackend);

namespace detail {

void portable_backend_linked() {}

}  // namespace detail

}  // namespace tessera
