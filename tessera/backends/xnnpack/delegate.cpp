#include "tessera/backends/xnnpack/delegate.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "tessera/backends/xnnpack/options.h"
#include "tessera/backends/xnnpack/subgraph_builder.h"

namespace tessera::xnnpack {

OwnedFloats allocate_floats(size_t count) {
  const size_t bytes = (count * sizeof(float) + XNN_EXTRA_BYTES + 63) / 64 * 64;
  OwnedFloats f{LargeBuffer::allocate(bytes, 64)};
  // A buffer mapped on its own reads as zeros already, and stays out of the process's memory
  // until written: zeroed here, the activation arena's pages were all in memory from init on,
  // while the program's weights and XNNPACK's packed copies of them were (ResNeXt-50: 9 MiB
  // more peak RSS).
  if (f && !f.buffer.mapped()) std::memset(f.get(), 0, bytes);
  return f;
}

void Conversion::run(const float* in, float* out, pthreadpool_t pool, uint32_t pool_flags) const {
  switch (kind) {
    case Kind::Copy:
      if (in != out && numel != 0) std::memcpy(out, in, numel * sizeof(float));
      return;
    case Kind::ToChannelsLast:
      nchw_to_nhwc(in, out, n, c, s, pool, pool_flags);
      return;
    case Kind::ToIdentity:
      nhwc_to_nchw(in, out, n, c, s, pool, pool_flags);
      return;
  }
}

Delegate::~Delegate() {
  for (Runtime& r : runtimes) {
    if (r.runtime != nullptr) xnn_delete_runtime(r.runtime);
  }
}

size_t Delegate::num_conversions() const {
  size_t n = 0;
  for (const Step& s : steps) n += s.kind == Step::Kind::Convert;
  return n;
}

size_t Delegate::num_concats() const {
  size_t n = 0;
  for (const Step& s : steps) n += s.kind == Step::Kind::Concat;
  return n;
}

namespace {

struct ConcatTask {
  const Delegate* d;
  const Step* step;
  size_t row_floats;  // destination floats per outer index
};

void concat_rows(void* context, size_t begin, size_t count) {
  const auto* t = static_cast<const ConcatTask*>(context);
  float* dst = t->d->buffers[static_cast<size_t>(t->step->dst)].data;
  for (size_t o = begin; o < begin + count; ++o) {
    float* out = dst + o * t->row_floats;
    for (size_t k = 0; k < t->step->num_parts; ++k) {
      const ConcatPart& part = t->d->concat_parts[t->step->first_part + k];
      const float* src = t->d->buffers[static_cast<size_t>(part.src)].data + o * part.inner;
      std::memcpy(out, src, part.inner * sizeof(float));
      out += part.inner;
    }
  }
}

}  // namespace

void Delegate::concat(const Step& step, pthreadpool_t threads, uint32_t pool_flags) {
  ConcatTask task{this, &step, 0};
  for (size_t k = 0; k < step.num_parts; ++k)
    task.row_floats += concat_parts[step.first_part + k].inner;
  if (threads != nullptr && step.outer > 1 && step.outer * task.row_floats >= (size_t{1} << 16)) {
    const size_t tile =
        std::max<size_t>(1, (size_t{1} << 12) / std::max<size_t>(1, task.row_floats));
    pthreadpool_parallelize_1d_tile_1d(threads, concat_rows, &task, step.outer, tile, pool_flags);
  } else {
    concat_rows(&task, 0, step.outer);
  }
}

Status Delegate::invoke(Runtime& r) {
  bool dirty = false;
  for (const ExternalBinding& b : r.bound) {
    void* data = buffers[static_cast<size_t>(b.buffer)].data;
    if (r.externals[b.index].data != data) {
      r.externals[b.index].data = data;
      dirty = true;
    }
  }
  if (dirty) {
    const xnn_status st = xnn_setup_runtime(r.runtime, r.externals.size(), r.externals.data());
    if (st != xnn_status_success) {
      return Status::error(Error::DelegateExecutionFailed,
                           "xnnpack: delegate '%s': "
                           "xnn_setup_runtime failed (status %d)",
                           id, static_cast<int>(st));
    }
  }
  const xnn_status st = xnn_invoke_runtime(r.runtime);
  if (st != xnn_status_success) {
    return Status::error(Error::DelegateExecutionFailed,
                         "xnnpack: delegate '%s': xnn_invoke_runtime failed (status %d)", id,
                         static_cast<int>(st));
  }
  return Status::ok();
}

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace

Status Delegate::execute(BackendExecutionContext& context, Span<EValue*> args) {
  if (args.size() != num_inputs + num_outputs) {
    return Status::error(Error::InvalidArgument,
                         "xnnpack: delegate '%s' takes %zu inputs and %zu outputs, got %zu "
                         "arguments",
                         id, num_inputs, num_outputs, args.size());
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const EValue* a = args[i];
    if (a == nullptr || !a->is_tensor() || a->to_tensor().dtype() != ScalarType::Float32 ||
        a->to_tensor().numel() != arg_numel[i] || a->to_tensor().data() == nullptr) {
      return Status::error(Error::InvalidArgument,
                           "xnnpack: delegate '%s': argument %zu is not a float32 tensor of %lld "
                           "elements with data",
                           id, i, static_cast<long long>(arg_numel[i]));
    }
  }
  // Profiling is execute-scoped only: without execute options it is off.
  bool profile = false;
  if (!context.execute_options().empty()) {
    Result<bool> p = context.get(kProfile);
    profile = p.ok() && *p;
  }
  if (profile && recipe != nullptr) {
    if (per_node == nullptr) {
      Result<std::unique_ptr<Delegate>> built = build_per_node(*recipe);
      if (!built.ok()) {
        char prefix[160];  // fits the longest id (63)
        std::snprintf(prefix, sizeof prefix,
                      "xnnpack: delegate '%s': building its per-node twin for profiling", id);
        return built.status().with_prefix(prefix);
      }
      per_node = std::move(built).value();
    }
    return per_node->execute(context, args);
  }
  pthreadpool_t threads = pool.get();
  // yield_workers: the workers sleep after the conversions and concats this code runs on the
  // pool too, not only after each runtime's last operator (which XNNPACK flags itself).
  const uint32_t pool_flags =
      (runtime_flags & XNN_FLAG_YIELD_WORKERS) != 0 ? PTHREADPOOL_FLAG_YIELD_WORKERS : 0;

  for (Buffer& b : buffers) {
    if (b.arg >= 0) b.data = args[static_cast<size_t>(b.arg)]->to_tensor().data_as<float>();
  }
  size_t event = 0;
  Clock::time_point start = profile ? Clock::now() : Clock::time_point();
  for (const InputStage& in : inputs) {
    in.conversion.run(args[static_cast<size_t>(in.arg)]->to_tensor().data_as<const float>(),
                      buffers[static_cast<size_t>(in.buffer)].data, threads, pool_flags);
  }
  if (profile) context.report_event(event_names[event].data(), ms_since(start));
  ++event;
  for (const Step& step : steps) {
    if (profile) start = Clock::now();
    if (step.kind == Step::Kind::Invoke) {
      TESSERA_RETURN_IF_ERROR(invoke(runtimes[static_cast<size_t>(step.runtime)]));
    } else if (step.kind == Step::Kind::Concat) {
      concat(step, threads, pool_flags);
    } else {
      step.conversion.run(buffers[static_cast<size_t>(step.src)].data,
                          buffers[static_cast<size_t>(step.dst)].data, threads, pool_flags);
    }
    if (profile) context.report_event(event_names[event].data(), ms_since(start));
    ++event;
  }
  if (profile) start = Clock::now();
  for (const OutputStage& out : outputs) {
    const float* src =
        out.buffer >= 0 ? buffers[static_cast<size_t>(out.buffer)].data : out.constant;
    out.conversion.run(src, args[static_cast<size_t>(out.arg)]->to_tensor().data_as<float>(),
                       threads, pool_flags);
  }
  if (profile) context.report_event(event_names[event].data(), ms_since(start));
  // Another pool of the Method runs next (or soon): its workers, not these, need the CPUs.
  if (method_pools != nullptr && method_pools->several()) park_workers(threads);
  return Status::ok();
}

}  // namespace tessera::xnnpack
