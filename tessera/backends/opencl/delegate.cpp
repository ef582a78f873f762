#include "tessera/backends/opencl/delegate.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "tessera/backend/integrity_file.h"
#include "tessera/backends/opencl/codegen.h"
#include "tessera/backends/opencl/options.h"
#include "tessera/core/log.h"
#include "tessera/ir/memory_plan.h"

#if defined(TESSERA_OPENCL_HAVE_CLBLAST)
#include <clblast_c.h>
#endif

namespace tessera::opencl {
namespace {

Status cl_failure(const char* id, const char* what, cl_int err) {
  return Status::error(Error::DelegateExecutionFailed, "opencl: delegate '%s': %s failed: %s", id,
                       what, cl_error_name(err));
}

Status init_failure(const char* what, cl_int err) {
  return Status::error(Error::DelegateUnavailable, "opencl: %s failed: %s", what,
                       cl_error_name(err));
}

uint64_t tuning_key(const Device& device, const std::string& kernel_text, const KernelPlan& plan,
                    const std::string& build_options) {
  uint64_t h = fnv1a64(kernel_text, device.fingerprint_hash);
  for (const auto& p : plan.params) h = fnv1a64(&p.second, sizeof p.second, h);
  return fnv1a64(build_options, h);
}

// One library GEMM on `queue`. Errors: DelegateExecutionFailed naming CLBlast's status code.
Status enqueue_library_gemm(const Delegate::Launch& l, cl_command_queue* queue, cl_event* event,
                            const char* id) {
#if defined(TESSERA_OPENCL_HAVE_CLBLAST)
  const LibraryGemm& g = l.gemm;
  const CLBlastTranspose ta = g.trans_a ? CLBlastTransposeYes : CLBlastTransposeNo;
  const CLBlastTranspose tb = g.trans_b ? CLBlastTransposeYes : CLBlastTransposeNo;
  // One matrix: the plain call (the strided-batched one rejects zero strides at batch 1).
  const CLBlastStatusCode code =
      g.batch == 1
          ? CLBlastSgemm(CLBlastLayoutRowMajor, ta, tb, static_cast<size_t>(g.m),
                         static_cast<size_t>(g.n), static_cast<size_t>(g.k), g.alpha, l.a, 0,
                         static_cast<size_t>(g.lda), l.b, 0, static_cast<size_t>(g.ldb), 0.0f, l.c,
                         0, static_cast<size_t>(g.ldc), queue, event)
          : CLBlastSgemmStridedBatched(
                CLBlastLayoutRowMajor, ta, tb, static_cast<size_t>(g.m), static_cast<size_t>(g.n),
                static_cast<size_t>(g.k), g.alpha, l.a, 0, static_cast<size_t>(g.lda),
                static_cast<size_t>(g.a_stride), l.b, 0, static_cast<size_t>(g.ldb),
                static_cast<size_t>(g.b_stride), 0.0f, l.c, 0, static_cast<size_t>(g.ldc),
                static_cast<size_t>(g.c_stride), static_cast<size_t>(g.batch), queue, event);
  if (code != CLBlastSuccess) {
    return Status::error(Error::DelegateExecutionFailed,
                         "opencl: delegate '%s': CLBlast GEMM '%s' (%lld x %lld x %lld, batch "
                         "%lld) failed with status %d",
                         id, l.label.data(), static_cast<long long>(g.m),
                         static_cast<long long>(g.n), static_cast<long long>(g.k),
                         static_cast<long long>(g.batch), static_cast<int>(code));
  }
  return Status::ok();
#else
  (void)l;
  (void)queue;
  (void)event;
  return Status::error(Error::NotSupported, "opencl: delegate '%s': this build has no CLBlast", id);
#endif
}

}  // namespace

ArenaPlan plan_arena(const PayloadGraph& view, const DelegatePlan& plan, size_t alignment) {
  const size_t nvalues = plan.shapes.size();
  const int steps = static_cast<int>(plan.kernels.size());
  std::vector<int> first(nvalues, -1), last(nvalues, -1);
  auto touch = [&](int value, int step) {
    if (value < 0) return;  // kScratchValue
    const size_t b = static_cast<size_t>(plan.buffer_of[static_cast<size_t>(value)]);
    if (first[b] < 0 || step < first[b]) first[b] = step;
    if (step > last[b]) last[b] = step;
  };
  for (int s = 0; s < steps; ++s) {
    const KernelPlan& k = *plan.kernels[static_cast<size_t>(s)];
    for (int in : k.inputs) touch(in, s);
    touch(k.output, s);
  }
  // Inputs are written before the first kernel, outputs read after the last (an output no
  // kernel writes keeps the zeros of init: it lives throughout).
  for (int v : view.inputs()) {
    if (v >= 0 && static_cast<size_t>(v) < nvalues) touch(v, 0);
  }
  for (int v : view.outputs()) {
    if (v < 0 || static_cast<size_t>(v) >= nvalues) continue;
    touch(v, steps);
    if (view.value(v).producer < 0) touch(v, 0);
  }
  ArenaPlan a;
  a.offset_of.assign(nvalues, -1);
  a.bytes_of.assign(nvalues, 0);
  std::vector<ir::PlanItem> items;
  std::vector<size_t> which;
  for (size_t v = 0; v < nvalues; ++v) {
    if (plan.buffer_of[v] != static_cast<int>(v) || first[v] < 0) continue;
    const PayloadValue& value = view.value(static_cast<int32_t>(v));
    if (!value.is_tensor() || value.dtype != ScalarType::Float32 || value.is_constant()) continue;
    const size_t bytes = static_cast<size_t>(plan.shapes[v].numel()) * sizeof(float);
    a.bytes_of[v] = bytes == 0 ? sizeof(float) : bytes;
    items.push_back({a.bytes_of[v], first[v], last[v]});
    which.push_back(v);
  }
  if (items.empty()) return a;
  const ir::MemoryPlan mp = ir::plan_memory(items, alignment);
  for (size_t i = 0; i < which.size(); ++i) a.offset_of[which[i]] = mp.offsets[i];
  a.arena_bytes = mp.arena_size;
  a.activation_bytes = mp.total_size;
  return a;
}

Delegate::~Delegate() {
  if (queue) clFinish(queue.get());
}

bool clblast_built_in() {
#if defined(TESSERA_OPENCL_HAVE_CLBLAST)
  return true;
#else
  return false;
#endif
}

Result<DelegatePlan> plan_delegate(const PayloadGraph& view, bool specialize_shapes,
                                   GemmImpl gemm) {
  DelegatePlan p;
  const fb::Graph& graph = view.graph();
  const size_t nvalues = view.num_values();
  const size_t nnodes = view.num_nodes();
  p.shapes.assign(view.dims().begin(), view.dims().end());

  // Residual Adds: an Add of two same-shaped float32 tensors, one written by a Conv with group 1
  // and read by nothing else, the other ready before that Conv runs, becomes part of the Conv's
  // GEMM (it adds the residual, then the Add's activation) and an alias of the Conv's output.
  std::vector<ResidualFusion> fusion(nnodes);
  std::vector<int> add_alias_of(nnodes, -1);
  for (size_t a = 0; a < nnodes; ++a) {
    const fb::Node& add = view.node(a);
    const Span<const int32_t> ins = view.node_inputs(a), outs = view.node_outputs(a);
    if (add.op() != fb::OpType::Add || ins.size() != 2 || outs.size() != 1 || ins[0] < 0 ||
        ins[1] < 0 || outs[0] < 0 || ins[0] == ins[1]) {
      continue;
    }
    const Dims& y = p.shapes[static_cast<size_t>(outs[0])];
    bool plain =
        view.value(outs[0]).is_tensor() && view.value(outs[0]).dtype == ScalarType::Float32;
    for (int32_t v : ins) {
      plain = plain && view.value(v).is_tensor() && view.value(v).dtype == ScalarType::Float32 &&
              p.shapes[static_cast<size_t>(v)] == y;
    }
    if (!plain) continue;
    for (int side = 0; side < 2; ++side) {
      const int32_t u = ins[static_cast<size_t>(side)], r = ins[static_cast<size_t>(1 - side)];
      const PayloadValue& uv = view.value(u);
      if (uv.producer < 0 || uv.graph_output || view.consumers(u).size() != 1) continue;
      const size_t c = static_cast<size_t>(uv.producer);
      if (fusion[c].residual >= 0 || !view.defined_before(r, c) ||
          !can_fuse_residual(graph, static_cast<int>(c), p.shapes)) {
        continue;
      }
      fusion[c] = {r, add.activation(), add.activation_min(), add.activation_max()};
      add_alias_of[a] = u;
      ++p.fused_adds;
      break;
    }
  }

  // Plans, and which buffer holds each value (aliases share their input's).
  p.plans.resize(nnodes);
  p.buffer_of.assign(nvalues, -1);
  for (size_t v = 0; v < nvalues; ++v) p.buffer_of[v] = static_cast<int>(v);
  for (size_t n = 0; n < nnodes; ++n) {
    if (add_alias_of[n] >= 0) {
      p.plans[n] = NodePlan();
      p.plans[n].alias = true;
      p.plans[n].alias_of = add_alias_of[n];
      p.plans[n].kernel.output = view.node_outputs(n)[0];
    } else {
      TESSERA_RETURN_IF_ERROR(plan_node(graph, static_cast<int>(n), p.shapes, &p.plans[n],
                                        fusion[n].residual >= 0 ? &fusion[n] : nullptr, gemm));
    }
    if (p.plans[n].alias) {
      p.buffer_of[static_cast<size_t>(p.plans[n].kernel.output)] =
          p.buffer_of[static_cast<size_t>(p.plans[n].alias_of)];
      if (add_alias_of[n] < 0) ++p.aliases;
    }
  }

  // The program: every kernel in one source, in launch order.
  for (size_t n = 0; n < nnodes; ++n) {
    if (p.plans[n].alias) continue;
    for (const KernelPlan& k : p.plans[n].before) p.kernels.push_back(&k);
    p.kernels.push_back(&p.plans[n].kernel);
    if (p.plans[n].scratch_floats > p.scratch_floats) p.scratch_floats = p.plans[n].scratch_floats;
  }
  // Kernels whose text differs only in their name (same op and variant; shapes are arguments
  // unless specialize_shapes) share one function: the program, and its build, stay small.
  std::unordered_map<std::string, std::string> function_of;
  for (const KernelPlan* k : p.kernels) {
    if (k->library) {  // a library call: no text, no function
      p.texts.emplace_back();
      p.functions.emplace_back();
      continue;
    }
    KernelPlan unnamed = *k;
    unnamed.name = "tessera_kernel_";
    p.texts.push_back(kernel_source(unnamed, specialize_shapes));
    auto [it, added] =
        function_of.emplace(p.texts.back(), "f" + std::to_string(function_of.size()));
    p.functions.push_back(it->second);
    if (!added) continue;
    std::string text = p.texts.back();
    const std::string head = "__kernel void " + unnamed.name + "(";
    text.replace(text.find(head), head.size(), "__kernel void " + it->second + "(");
    p.source += text;
  }
  p.num_functions = function_of.size();
  if (p.source.empty()) p.source = "__kernel void tessera_empty(void) {}\n";
  return p;
}

Result<std::unique_ptr<Delegate>> build_delegate(const PayloadGraph& view,
                                                 const BackendInitContext& context,
                                                 std::shared_ptr<DeviceContext> device,
                                                 const DelegateSettings& settings) {
  const auto start = std::chrono::steady_clock::now();
  auto d = std::make_unique<Delegate>();
  std::snprintf(d->id, sizeof d->id, "%.*s", static_cast<int>(context.delegate_id().size()),
                context.delegate_id().data());
  d->device = device;
  const Device& dev = device->device;
  d->summary.device = dev.name;
  d->summary.device_type = dev.type;
  d->summary.context = device.get();

  TESSERA_ASSIGN_OR_RETURN(DelegatePlan plan,
                           plan_delegate(view, settings.specialize_shapes, settings.gemm));
  const std::vector<Dims>& shapes = plan.shapes;
  const std::vector<int>& buffer_of = plan.buffer_of;
  const std::vector<const KernelPlan*>& kernels = plan.kernels;
  const std::vector<std::string>& texts = plan.texts;
  const std::vector<std::string>& functions = plan.functions;
  const std::string& source = plan.source;
  const int64_t scratch_floats = plan.scratch_floats;
  const size_t nvalues = shapes.size();
  d->summary.aliases = plan.aliases;
  d->summary.fused_adds = plan.fused_adds;
  d->summary.functions = plan.num_functions;
  TESSERA_ASSIGN_OR_RETURN(d->program, build_program(*device, source, settings.build_options,
                                                     settings.cache, &d->summary.program));

  cl_int err = CL_SUCCESS;
  d->queue = QueueHandle(clCreateCommandQueue(device->context.get(), dev.id,
                                              CL_QUEUE_PROFILING_ENABLE, &err));
  if (!d->queue || err != CL_SUCCESS) return init_failure("clCreateCommandQueue", err);

  // Activations: one zeroed arena, each value a sub-buffer at its planned offset (aligned as the
  // device requires of a sub-buffer's origin).
  cl_uint align_bits = 0;
  err = clGetDeviceInfo(dev.id, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits,
                        nullptr);
  if (err != CL_SUCCESS) return init_failure("clGetDeviceInfo(CL_DEVICE_MEM_BASE_ADDR_ALIGN)", err);
  const size_t alignment = align_bits / 8 > 64 ? align_bits / 8 : 64;
  const ArenaPlan arena = plan_arena(view, plan, alignment);
  d->summary.arena_bytes = arena.arena_bytes;
  d->summary.activation_bytes = arena.activation_bytes;
  d->buffers.resize(nvalues);
  if (arena.arena_bytes > 0) {
    cl_mem mem =
        clCreateBuffer(device->context.get(), CL_MEM_READ_WRITE, arena.arena_bytes, nullptr, &err);
    if (mem == nullptr || err != CL_SUCCESS) {
      if (mem != nullptr) clReleaseMemObject(mem);
      return Status::error(Error::DelegateMemoryAllocationFailed,
                           "opencl: activation arena of %zu bytes failed: %s", arena.arena_bytes,
                           cl_error_name(err));
    }
    d->arena = MemHandle(mem);
    const float zero = 0.0f;
    err = clEnqueueFillBuffer(d->queue.get(), mem, &zero, sizeof zero, 0, arena.arena_bytes, 0,
                              nullptr, nullptr);
    if (err != CL_SUCCESS) return init_failure("clEnqueueFillBuffer", err);
  }
  for (size_t v = 0; v < nvalues; ++v) {
    if (arena.offset_of[v] < 0) continue;
    const cl_buffer_region region{static_cast<size_t>(arena.offset_of[v]), arena.bytes_of[v]};
    cl_mem mem = clCreateSubBuffer(d->arena.get(), CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION,
                                   &region, &err);
    if (mem == nullptr || err != CL_SUCCESS) {
      if (mem != nullptr) clReleaseMemObject(mem);
      return Status::error(Error::DelegateMemoryAllocationFailed,
                           "opencl: arena region of %zu bytes at %zu for value %zu failed: %s",
                           region.size, region.origin, v, cl_error_name(err));
    }
    d->buffers[v] = MemHandle(mem);
  }
  // Constants: uploaded now, one read-only buffer each.
  for (size_t v = 0; v < nvalues; ++v) {
    if (buffer_of[v] != static_cast<int>(v)) continue;
    const PayloadValue& value = view.value(static_cast<int32_t>(v));
    if (!value.is_tensor() || value.dtype != ScalarType::Float32 || !value.is_constant()) continue;
    const size_t bytes = static_cast<size_t>(shapes[v].numel()) * sizeof(float);
    const size_t alloc = bytes == 0 ? sizeof(float) : bytes;
    const Span<const uint8_t> data = value.data;
    if (data.size() != bytes) {
      return Status::error(Error::InvalidProgram,
                           "opencl: constant %d has %zu bytes, value %zu needs %zu", value.constant,
                           data.size(), v, bytes);
    }
    cl_mem mem =
        clCreateBuffer(device->context.get(), CL_MEM_READ_ONLY | (bytes ? CL_MEM_COPY_HOST_PTR : 0),
                       alloc, bytes ? const_cast<uint8_t*>(data.data()) : nullptr, &err);
    if (mem == nullptr || err != CL_SUCCESS) {
      if (mem != nullptr) clReleaseMemObject(mem);
      return Status::error(Error::DelegateMemoryAllocationFailed,
                           "opencl: buffer of %zu bytes for value %zu failed: %s", alloc, v,
                           cl_error_name(err));
    }
    d->buffers[v] = MemHandle(mem);
    // CL_MEM_COPY_HOST_PTR copied it: the program's bytes are not read again.
    if (bytes != 0) context.release_constant(static_cast<uint32_t>(value.constant));
  }
  if (scratch_floats > 0) {
    const size_t bytes = static_cast<size_t>(scratch_floats) * sizeof(float);
    cl_mem mem = clCreateBuffer(device->context.get(), CL_MEM_READ_WRITE, bytes, nullptr, &err);
    if (mem == nullptr || err != CL_SUCCESS) {
      if (mem != nullptr) clReleaseMemObject(mem);
      return Status::error(Error::DelegateMemoryAllocationFailed,
                           "opencl: scratch buffer of %zu bytes failed: %s", bytes,
                           cl_error_name(err));
    }
    d->scratch = MemHandle(mem);
    // Zeroed once: padding columns are read (their results never stored) but never written.
    const float zero = 0.0f;
    err =
        clEnqueueFillBuffer(d->queue.get(), mem, &zero, sizeof zero, 0, bytes, 0, nullptr, nullptr);
    if (err != CL_SUCCESS) return init_failure("clEnqueueFillBuffer", err);
  }
  auto mem_of = [&](int value) -> cl_mem {
    if (value == kScratchValue) return d->scratch.get();
    return d->buffers[static_cast<size_t>(buffer_of[static_cast<size_t>(value)])].get();
  };

  // Kernels with their arguments, local sizes from the tuning file or the search.
  TuningTable table;
  if (!settings.tuning_file.empty()) load_tuning_file(settings.tuning_file, dev, &table);
  const std::vector<size_t> candidates = tuning_candidates(settings.tuning, dev.max_work_group_size);
  bool tuned_any = false;
  for (size_t n = 0; n < kernels.size(); ++n) {
    const KernelPlan& k = *kernels[n];
    Delegate::Launch launch;
    if (k.library) {
      launch.library = true;
      launch.gemm = k.gemm;
      launch.a = mem_of(k.inputs[0]);
      launch.b = mem_of(k.inputs[1]);
      launch.c = mem_of(k.output);
      std::snprintf(launch.label.data(), launch.label.size(), "%s", k.label.c_str());
      d->launches.push_back(std::move(launch));
      ++d->summary.kernels;
      ++d->summary.library_gemms;
      continue;
    }
    launch.kernel = KernelHandle(clCreateKernel(d->program.get(), functions[n].c_str(), &err));
    if (!launch.kernel || err != CL_SUCCESS) return init_failure("clCreateKernel", err);
    cl_uint arg = 0;
    cl_mem out = mem_of(k.output);
    err = clSetKernelArg(launch.kernel.get(), arg++, sizeof(cl_mem), &out);
    for (int in : k.inputs) {
      cl_mem m = mem_of(in);
      if (err == CL_SUCCESS) err = clSetKernelArg(launch.kernel.get(), arg++, sizeof(cl_mem), &m);
    }
    if (!settings.specialize_shapes) {
      for (const auto& p : k.params) {
        const cl_int value = static_cast<cl_int>(p.second);
        if (err == CL_SUCCESS) err = clSetKernelArg(launch.kernel.get(), arg++, sizeof value, &value);
      }
    }
    if (err != CL_SUCCESS) return init_failure("clSetKernelArg", err);
    std::snprintf(launch.label.data(), launch.label.size(), "%s", k.label.c_str());
    launch.global = static_cast<size_t>(k.work_items);
    if (launch.global > 0) {
      const uint64_t key = tuning_key(dev, texts[n], k, settings.build_options);
      auto found = table.find(key);
      if (found != table.end()) {
        launch.local = found->second;
        ++d->summary.tuning_loaded;
      } else if (settings.tuning != TuningLevel::None) {
        launch.local = tune_kernel(d->queue.get(), launch.kernel.get(), dev.id, launch.global,
                                   candidates, settings.tuning == TuningLevel::Exhaustive ? 5 : 3);
        table[key] = static_cast<uint32_t>(launch.local);
        ++d->summary.tuned;
        tuned_any = true;
      } else {
        launch.local = k.preferred_local;
      }
      launch.global = round_global(launch.global, launch.local);
      d->launches.push_back(std::move(launch));
    }
    ++d->summary.kernels;
  }
  if (tuned_any && !settings.tuning_file.empty()) {
    Status saved = save_tuning_file(settings.tuning_file, dev, table);
    if (!saved.is_ok()) TESSERA_LOG_WARNING("opencl: tuning file not written: %s", saved.message());
  }
  d->events.assign(d->launches.size(), nullptr);
  // Library GEMMs compile their kernels at their first call: make that call now, on the zeroed
  // buffers, so that the load pays for it and the first execute does not.
  if (d->summary.library_gemms > 0) {
    cl_command_queue q = d->queue.get();
    for (const Delegate::Launch& l : d->launches) {
      if (!l.library) continue;
      Status st = enqueue_library_gemm(l, &q, nullptr, d->id);
      if (!st.is_ok()) {
        return Status::error(Error::DelegateUnavailable, "%s (at init)", st.message());
      }
    }
  }

  // Delegate inputs and outputs.
  auto io = [&](int value, std::vector<Delegate::Io>* list) -> Status {
    if (value < 0 || static_cast<size_t>(value) >= nvalues || !d->buffers[static_cast<size_t>(buffer_of[static_cast<size_t>(value)])]) {
      return Status::error(Error::NotSupported, "opencl: delegate input/output %d is not a float32 tensor", value);
    }
    list->push_back({buffer_of[static_cast<size_t>(value)],
                     static_cast<size_t>(shapes[static_cast<size_t>(value)].numel()) * sizeof(float)});
    return Status::ok();
  };
  for (int v : view.inputs()) TESSERA_RETURN_IF_ERROR(io(v, &d->inputs));
  for (int v : view.outputs()) TESSERA_RETURN_IF_ERROR(io(v, &d->outputs));
  err = clFinish(d->queue.get());
  if (err != CL_SUCCESS) return init_failure("clFinish", err);
  d->summary.init_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return d;
}

Status Delegate::execute(BackendExecutionContext& context, Span<EValue*> args) {
  if (args.size() != inputs.size() + outputs.size()) {
    return Status::error(Error::InvalidArgument,
                         "opencl: delegate '%s' takes %zu inputs and %zu outputs, got %zu arguments",
                         id, inputs.size(), outputs.size(), args.size());
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const size_t bytes = i < inputs.size() ? inputs[i].bytes : outputs[i - inputs.size()].bytes;
    const EValue* a = args[i];
    if (a == nullptr || !a->is_tensor() || a->to_tensor().dtype() != ScalarType::Float32 ||
        static_cast<size_t>(a->to_tensor().numel()) * sizeof(float) != bytes ||
        (bytes != 0 && a->to_tensor().data() == nullptr)) {
      return Status::error(Error::InvalidArgument,
                           "opencl: delegate '%s': argument %zu is not a float32 tensor of %zu "
                           "elements with data", id, i, bytes / sizeof(float));
    }
  }
  Result<bool> profiling = context.get(kKernelProfiling);
  const bool profile = profiling.ok() && *profiling;
  cl_command_queue q = queue.get();
  cl_int err = CL_SUCCESS;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].bytes == 0) continue;
    err = clEnqueueWriteBuffer(q, buffers[static_cast<size_t>(inputs[i].buffer)].get(), CL_FALSE, 0,
                               inputs[i].bytes, args[i]->to_tensor().data(), 0, nullptr, nullptr);
    if (err != CL_SUCCESS) {
      clFinish(q);
      return cl_failure(id, "clEnqueueWriteBuffer", err);
    }
  }
  size_t launched = 0;
  Status library_failure;  // a CLBlast GEMM that failed (its own status code in the message)
  for (size_t i = 0; i < launches.size(); ++i) {
    const Launch& l = launches[i];
    err = take_enqueue_fault();  // CL_SUCCESS unless a test injects a failure (cl_util.h)
    if (err != CL_SUCCESS) break;
    if (l.library) {
      library_failure = enqueue_library_gemm(l, &q, profile ? &events[i] : nullptr, id);
      if (!library_failure.is_ok()) break;
    } else {
      err = clEnqueueNDRangeKernel(q, l.kernel.get(), 1, nullptr, &l.global,
                                   l.local == 0 ? nullptr : &l.local, 0, nullptr,
                                   profile ? &events[i] : nullptr);
      if (err != CL_SUCCESS) break;
    }
    ++launched;
  }
  if (err == CL_SUCCESS && library_failure.is_ok()) {
    for (size_t o = 0; o < outputs.size(); ++o) {
      if (outputs[o].bytes == 0) continue;
      err = clEnqueueReadBuffer(q, buffers[static_cast<size_t>(outputs[o].buffer)].get(), CL_FALSE, 0,
                                outputs[o].bytes, args[inputs.size() + o]->to_tensor().data(), 0,
                                nullptr, nullptr);
      if (err != CL_SUCCESS) break;
    }
  }
  const cl_int finish = clFinish(q);
  if (profile) {
    for (size_t i = 0; i < launched; ++i) {
      cl_ulong begin = 0, end = 0;
      if (clGetEventProfilingInfo(events[i], CL_PROFILING_COMMAND_START, sizeof begin, &begin, nullptr) == CL_SUCCESS &&
          clGetEventProfilingInfo(events[i], CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr) == CL_SUCCESS) {
        context.report_event(launches[i].label.data(), static_cast<double>(end - begin) * 1e-6);
      }
      clReleaseEvent(events[i]);
      events[i] = nullptr;
    }
  }
  if (!library_failure.is_ok()) return library_failure;
  if (err != CL_SUCCESS) return cl_failure(id, "enqueue", err);
  if (finish != CL_SUCCESS) return cl_failure(id, "clFinish", finish);
  return Status::ok();
}

}  // namespace tessera::opencl
