#include "tessera/runtime/method.h"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>

#include "tessera/core/heap_allocator.h"
#include "tessera/ir/schema.h"
#include "tessera/ir/shape_expr.h"
#include "tessera/runtime/delegate_runner.h"
#include "tessera/runtime/dim_resolution.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method_selection.h"
#include "tessera/runtime/method_state.h"
#include "tessera/runtime/program.h"

namespace tessera {

using internal::MethodState;

namespace {

template <typename T>
uint32_t count(const flatbuffers::Vector<T>* v) {
  return v ? v->size() : 0;
}

Status no_memory(const char* what, size_t bytes) {
  return Status::error(Error::MemoryAllocationFailed,
                       "method allocator exhausted allocating %zu bytes for %s", bytes, what);
}

Status resolve_symbols(const fb::Method* m, const LoadOptions& options, MemoryAllocator& alloc,
                       MethodState* s) {
  const uint32_t n = count(m->symbols());
  s->num_symbols = n;
  s->symbol_values = alloc.allocate_array<int64_t>(n ? n : 1);
  if (!s->symbol_values) return no_memory("symbols", n * sizeof(int64_t));
  return internal::resolve_dims(m, options, Span<int64_t>(s->symbol_values, n));
}

// BackendInitContext::method_instance: one number per load, never reused in the process.
uint64_t next_method_instance() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

namespace internal {

Status make_value(const fb::Value* v, const Program& program, Span<const int64_t> symbols,
                  uint8_t* arena, EValue* out) {
  switch (v->kind()) {
    case fb::ValueKind::None: *out = EValue(); return Status::ok();
    case fb::ValueKind::Int: *out = EValue(static_cast<int64_t>(v->int_value())); return Status::ok();
    case fb::ValueKind::IntList:
      *out = v->ints() ? EValue(Span<const int64_t>(v->ints()->data(), v->ints()->size()))
                       : EValue(Span<const int64_t>());
      return Status::ok();
    case fb::ValueKind::Tensor: break;
  }
  int64_t sizes[kMaxDims];
  const uint32_t rank = count(v->dims());
  for (uint32_t d = 0; d < rank; ++d) {
    const fb::Dim* dim = v->dims()->Get(d);
    Result<int64_t> x = ir::eval_dim_within_bound(dim, symbols);
    if (!x.ok()) {
      return x.status().with_prefix(std::string("value '") +
                                    (v->name() ? v->name()->c_str() : "?") + "' dim " +
                                    std::to_string(d));
    }
    sizes[d] = *x;
  }
  void* data = nullptr;
  if (v->constant() >= 0) {
    data = const_cast<uint8_t*>(program.constant(v->constant()).data());
  } else if (v->arena_offset() >= 0 && arena != nullptr) {
    data = arena + v->arena_offset();
  }
  Tensor t(static_cast<ScalarType>(v->dtype()), {sizes, rank}, data);
  if (count(v->dim_order()) == rank && rank > 0) {
    TESSERA_RETURN_IF_ERROR(t.set_dim_order({v->dim_order()->data(), rank}));
  }
  *out = EValue(t);
  return Status::ok();
}

}  // namespace internal

Result<Method> Method::load(const Program& program, const fb::Method* m, MemoryManager* memory,
                            const LoadOptions& options) {
  Method method;
  MemoryAllocator* alloc = nullptr;
  MemoryAllocator* planned = nullptr;
  if (memory != nullptr) {
    alloc = memory->method_allocator();
    planned = memory->planned_memory();
    if (alloc == nullptr) {
      return Status(Error::InvalidArgument, "MemoryManager has no method allocator");
    }
  } else {
    method.owned_allocator_ = std::make_unique<HeapMemoryAllocator>();
    alloc = method.owned_allocator_.get();
  }
  MethodState* s = alloc->make<MethodState>();
  if (!s) return no_memory("method state", sizeof(MethodState));
  std::memset(s, 0, sizeof *s);
  s->method = m;
  s->allocator = alloc;
  s->instance = next_method_instance();
  method.state_ = s;

  TESSERA_RETURN_IF_ERROR(resolve_symbols(m, options, *alloc, s));
  TESSERA_RETURN_IF_ERROR(internal::check_method_options(m, options));

  // The policy, decided once for every delegate of this load. A method without delegates has
  // nothing to derive: it keeps the default decision without reading the machine's state.
  s->policy = alloc->make<PolicyDecision>();
  if (!s->policy) return no_memory("policy decision", sizeof(PolicyDecision));
  s->device = options.device_info;
  if (count(m->delegates()) > 0) {
    const Policy requested = options.has_policy ? options.policy : default_policy();
    *s->policy = options.device_info != nullptr ? decide_policy(requested, *options.device_info)
                                                : decide_policy_now(requested);
    limit_threads_for_small_methods(m->arena_size() + program.flatbuffer()->segment_size(),
                                    s->policy);
  }

  // The activation arena.
  s->arena_size = m->arena_size();
  if (s->arena_size > 0) {
    MemoryAllocator* arena_alloc = planned ? planned : alloc;
    s->arena = static_cast<uint8_t*>(arena_alloc->allocate(s->arena_size, 64));
    if (!s->arena) {
      return Status::error(Error::MemoryAllocationFailed,
                           "cannot allocate the %llu-byte activation arena of method '%s'",
                           static_cast<unsigned long long>(s->arena_size), m->name()->c_str());
    }
  }

  // Values.
  s->num_values = count(m->values());
  s->values = alloc->allocate_array<EValue>(s->num_values ? s->num_values : 1);
  if (!s->values) return no_memory("values", s->num_values * sizeof(EValue));
  for (uint32_t i = 0; i < s->num_values; ++i) {
    new (&s->values[i]) EValue();
    Status st = internal::make_value(m->values()->Get(i), program,
                                     {s->symbol_values, s->num_symbols}, s->arena, &s->values[i]);
    if (!st.is_ok()) return st.with_prefix(m->name()->c_str());
  }

  // Instructions.
  const uint32_t n = count(m->chain());
  uint32_t num_kernels = 0, num_delegates = 0;
  for (uint32_t i = 0; i < n; ++i) {  // the chain may be absent: an empty method
    (m->chain()->Get(i)->kind() == fb::InstructionKind::Kernel ? num_kernels : num_delegates)++;
  }
  s->steps = alloc->allocate_array<internal::Step>(n ? n : 1);
  s->kernels = alloc->allocate_array<internal::KernelStep>(num_kernels ? num_kernels : 1);
  s->delegates = alloc->allocate_array<internal::DelegateStep>(num_delegates ? num_delegates : 1);
  if (!s->steps || !s->kernels || !s->delegates) return no_memory("instructions", n * 64);
  // Backends with CPU thread pools are told which others share the CPUs in this method: those
  // of the other delegates, as planned, or as loaded for those before (a selection may move
  // them).
  internal::CpuPoolBackends pools = internal::cpu_pool_backends(m, options);

  for (uint32_t i = 0; i < n; ++i) {
    const fb::Instruction* ins = m->chain()->Get(i);
    if (ins->kind() == fb::InstructionKind::Kernel) {
      const fb::Node* node = ins->node();
      internal::KernelStep& k = s->kernels[s->num_kernels];
      k = internal::KernelStep{};
      k.node = node;
      k.num_inputs = count(node->inputs());
      k.num_outputs = count(node->outputs());
      auto** in = alloc->allocate_array<const Tensor*>(k.num_inputs ? k.num_inputs : 1);
      auto** out = alloc->allocate_array<Tensor*>(k.num_outputs);
      if (!in || !out) return no_memory("kernel arguments", 64);
      for (uint32_t j = 0; j < k.num_inputs; ++j) {
        int32_t v = node->inputs()->Get(j);
        in[j] = v < 0 ? nullptr : &s->values[v].to_tensor();
      }
      for (uint32_t j = 0; j < k.num_outputs; ++j) out[j] = &s->values[node->outputs()->Get(j)].to_tensor();
      k.inputs = in;
      k.outputs = out;
      portable::KernelNode kn{node, {in, k.num_inputs}, {out, k.num_outputs}};
      auto prepared = portable::prepare_kernel(kn, *alloc);
      if (!prepared.ok()) {
        // The kernel's message already names the op and the node.
        char prefix[96];
        std::snprintf(prefix, sizeof prefix, "method '%s' instruction %u", m->name()->c_str(), i);
        return prepared.status().with_prefix(prefix);
      }
      k.kernel = *prepared;
      s->steps[i] = {false, s->num_kernels++};
    } else {
      internal::DelegateStep& d = s->delegates[s->num_delegates];
      d = internal::DelegateStep{};
      // Counted before init so that a failure part-way destroys what was initialised.
      const std::string_view planned = options.retarget_of(
          m->delegates()->Get(static_cast<uint32_t>(ins->delegate()))->backend()->string_view());
      TESSERA_RETURN_IF_ERROR(
          internal::load_delegate(program, m, ins, options, pools.without(planned), s, &d));
      s->steps[i] = {true, s->num_delegates++};
      pools.move(planned, d.info->backend);
    }
  }
  s->num_steps = n;
  // Per-delegate choices on different backends: the whole method decides whether handing over
  // between them costs more than it gains.
  internal::check_whole_method(program, options, s);
  return method;
}

Method::Method(Method&& other) noexcept
    : owned_allocator_(std::move(other.owned_allocator_)), state_(other.state_) {
  other.state_ = nullptr;
}

Method& Method::operator=(Method&& other) noexcept {
  if (this != &other) {
    release();
    owned_allocator_ = std::move(other.owned_allocator_);
    state_ = other.state_;
    other.state_ = nullptr;
  }
  return *this;
}

Method::~Method() { release(); }

void Method::release() {
  if (state_ != nullptr) {
    internal::destroy_delegates(state_);
    state_ = nullptr;
  }
  owned_allocator_.reset();
}

std::string_view Method::name() const { return state_->method->name()->string_view(); }
size_t Method::inputs_size() const { return count(state_->method->inputs()); }
size_t Method::outputs_size() const { return count(state_->method->outputs()); }

std::string_view Method::input_name(size_t index) const {
  if (index >= inputs_size()) return {};
  const fb::Value* v = state_->method->values()->Get(state_->method->inputs()->Get(static_cast<uint32_t>(index)));
  return v->name() ? v->name()->string_view() : std::string_view();
}

std::string_view Method::output_name(size_t index) const {
  if (index >= outputs_size()) return {};
  const fb::Value* v = state_->method->values()->Get(state_->method->outputs()->Get(static_cast<uint32_t>(index)));
  return v->name() ? v->name()->string_view() : std::string_view();
}

Result<Tensor*> Method::input(size_t index) {
  if (index >= inputs_size()) {
    return Status::error(Error::NotFound, "input %zu out of range (method '%s' has %zu inputs)",
                         index, state_->method->name()->c_str(), inputs_size());
  }
  return &state_->values[state_->method->inputs()->Get(static_cast<uint32_t>(index))].to_tensor();
}

Status Method::set_input(size_t index, const Tensor& value) {
  TESSERA_ASSIGN_OR_RETURN(Tensor * dst, input(index));
  if (value.dtype() != dst->dtype()) {
    return Status::error(Error::InvalidType, "input %zu ('%.*s') is %s, got %s", index,
                         static_cast<int>(input_name(index).size()), input_name(index).data(),
                         scalar_type_name(dst->dtype()), scalar_type_name(value.dtype()));
  }
  bool same = value.dim() == dst->dim();
  for (int d = 0; same && d < dst->dim(); ++d) same = value.size(d) == dst->size(d);
  if (!same) {
    char want[96], got[96], symbols[128];
    const fb::Method* m = state_->method;
    internal::describe_symbols_of(
        m, m->values()->Get(m->inputs()->Get(static_cast<uint32_t>(index))),
        {state_->symbol_values, state_->num_symbols}, symbols, sizeof symbols);
    return Status::error(Error::ShapeMismatch, "input %zu ('%.*s') has shape %s, got %s%s%s%s",
                         index, static_cast<int>(input_name(index).size()),
                         input_name(index).data(), format_sizes(dst->sizes(), want, sizeof want),
                         format_sizes(value.sizes(), got, sizeof got),
                         symbols[0] ? " (the method was loaded with " : "", symbols,
                         symbols[0] ? "; load it with LoadOptions::set_input_shape or set_dim for "
                                      "another shape)"
                                    : "");
  }
  if (!value.is_default_dim_order()) {
    return Status::error(Error::NotSupported, "input %zu: only row-major tensors are accepted", index);
  }
  if (value.nbytes() != 0 && value.data() == nullptr) {
    return Status::error(Error::InvalidArgument, "input %zu has no data", index);
  }
  if (value.data() != dst->data() && value.nbytes() != 0) {
    std::memcpy(dst->data(), value.data(), value.nbytes());
  }
  return Status::ok();
}

Status Method::execute() { return internal::execute_steps(state_, nullptr, nullptr); }

Status Method::execute(const ExecuteOptions& options, ProfileBuffer* profile) {
  return internal::execute_steps(state_, &options, profile);
}

Result<const Tensor*> Method::get_output(size_t index) const {
  if (index >= outputs_size()) {
    return Status::error(Error::NotFound, "output %zu out of range (method '%s' has %zu outputs)",
                         index, state_->method->name()->c_str(), outputs_size());
  }
  return &state_->values[state_->method->outputs()->Get(static_cast<uint32_t>(index))].to_tensor();
}

Result<int64_t> Method::symbol_value(std::string_view name) const {
  for (uint32_t i = 0; i < state_->num_symbols; ++i) {
    if (state_->method->symbols()->Get(i)->name()->string_view() == name) {
      return state_->symbol_values[i];
    }
  }
  return Status::error(Error::NotFound, "method '%s' has no symbolic dim '%.*s'",
                       state_->method->name()->c_str(), static_cast<int>(name.size()), name.data());
}

bool Method::wait_for_startup(double timeout_ms) {
  return internal::apply_startup_switches(state_, true, timeout_ms);
}

size_t Method::num_delegates() const { return state_->num_delegates; }
const DelegateInfo& Method::delegate_info(size_t index) const { return *state_->delegates[index].info; }
size_t Method::arena_bytes() const { return state_->arena_size; }
const PolicyDecision& Method::policy() const {
  return *state_->policy;
}
size_t Method::num_instructions() const { return state_->num_steps; }

}  // namespace tessera
