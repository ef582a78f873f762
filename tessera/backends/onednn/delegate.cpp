#include "tessera/backends/onednn/delegate.h"

#include <omp.h>

#include <chrono>
#include <unordered_map>

#include "tessera/backends/onednn/options.h"

namespace tessera::onednn {

OmpThreadsScope::OmpThreadsScope(int threads) : saved_(omp_get_max_threads()) {
  if (threads != saved_) omp_set_num_threads(threads);
}

OmpThreadsScope::~OmpThreadsScope() {
  if (omp_get_max_threads() != saved_) omp_set_num_threads(saved_);
}

void reorder_at_init(const dnnl::engine& engine, dnnl::stream& stream, const dnnl::memory& from,
                     const dnnl::memory& to, LargeBuffer* scratch, size_t* largest) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const dnnl::reorder::primitive_desc pd(from, to, attr);
  const dnnl::memory::desc scratch_desc = pd.scratchpad_desc();
  const size_t bytes = scratch_desc.get_size();
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
  if (bytes > 0) {
    if (scratch->size() < bytes) {
      scratch->release();  // before the larger one: the two are never needed at once
      *scratch = LargeBuffer::allocate(bytes, 64);
      if (scratch->data() == nullptr) {
        throw dnnl::error(dnnl_out_of_memory, "cannot allocate a reorder's scratchpad");
      }
    }
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(scratch_desc, engine, scratch->data()));
    if (bytes > *largest) *largest = bytes;
  }
  dnnl::reorder(pd).execute(stream, args);
  stream.wait();
}

namespace {

using Clock = std::chrono::steady_clock;

Status failed(const char* id, const char* what, dnnl_status_t st) {
  return Status::error(Error::DelegateExecutionFailed, "onednn: delegate '%s': %s failed (status %d)",
                       id, what, static_cast<int>(st));
}

}  // namespace

Status Delegate::execute(BackendExecutionContext& context, Span<EValue*> args) {
  if (args.size() != num_inputs + num_outputs) {
    return Status::error(Error::InvalidArgument,
                         "onednn: delegate '%s' takes %zu inputs and %zu outputs, got %zu "
                         "arguments", id, num_inputs, num_outputs, args.size());
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const EValue* a = args[i];
    if (a == nullptr || !a->is_tensor() || a->to_tensor().dtype() != ScalarType::Float32 ||
        a->to_tensor().numel() != arg_numel[i] || a->to_tensor().data() == nullptr) {
      return Status::error(Error::InvalidArgument,
                           "onednn: delegate '%s': argument %zu is not a float32 tensor of %lld "
                           "elements with data", id, i, static_cast<long long>(arg_numel[i]));
    }
  }
  bool profile = false;
  if (!context.execute_options().empty()) {
    Result<bool> p = context.get(kProfile);
    profile = p.ok() && *p;
  }
  for (const ArgBinding& b : bindings) {
    void* data = args[static_cast<size_t>(b.arg)]->to_tensor().data();
    const dnnl_status_t st = dnnl_memory_set_data_handle_v2(b.memory, data, stream.get());
    if (st != dnnl_success) return failed(id, "binding an argument", st);
  }
  OmpThreadsScope team(threads);
  int team_now = threads;
  for (const Step& step : steps) {
    // A step too small to split was created for one thread and runs without a parallel region.
    const int team_wanted = step.threads > 0 ? step.threads : threads;
    if (team_wanted != team_now) {
      omp_set_num_threads(team_wanted);
      team_now = team_wanted;
    }
    const Clock::time_point start = profile ? Clock::now() : Clock::time_point();
    dnnl_status_t st = dnnl_success;
    if (step.grouped != nullptr || step.narrow != nullptr || step.dw_pointwise != nullptr ||
        step.stem != nullptr) {
      // A kernel of Tessera's, on its arguments' data (source, destination, a narrow Conv's
      // residual when not in place), after the steps before it (the CPU engine's stream is in
      // order and blocking; the wait is for other engines).
      std::array<void*, 3> data = {};
      st = dnnl_stream_wait(stream.get());
      for (size_t a = 0; a < step.args.size() && a < data.size() && st == dnnl_success; ++a) {
        st = dnnl_memory_get_data_handle(step.args[a].memory, &data[a]);
      }
      if (st != dnnl_success) return failed(id, step.name.data(), st);
      const auto* src = static_cast<const float*>(data[0]);
      auto* dst = static_cast<float*>(data[1]);
      if (step.grouped != nullptr) {
        run_grouped_conv(*step.grouped, src, dst, team_now);
      } else if (step.dw_pointwise != nullptr) {
        run_dw_pointwise(*step.dw_pointwise, src, dst, team_now);
      } else if (step.stem != nullptr) {
        run_stem_conv(*step.stem, src, dst, team_now);
      } else {
        run_narrow_conv(*step.narrow, src, data[2] != nullptr ? static_cast<float*>(data[2]) : dst,
                        dst, team_now);
      }
    } else {
      st = dnnl_primitive_execute(step.primitive.get(), stream.get(),
                                  static_cast<int>(step.args.size()), step.args.data());
    }
    if (st != dnnl_success) return failed(id, step.name.data(), st);
    if (profile || step.silu != nullptr) {
      // The CPU engine's stream is in order and blocking here; the wait is for other engines.
      st = dnnl_stream_wait(stream.get());
      if (st != dnnl_success) return failed(id, "dnnl_stream_wait", st);
    }
    if (profile) {
      context.report_event(step.name.data(),
                           std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    }
    if (step.silu != nullptr) {
      const Clock::time_point silu_start = profile ? Clock::now() : Clock::time_point();
      void* data = nullptr;
      st = dnnl_memory_get_data_handle(step.silu, &data);
      if (st != dnnl_success) return failed(id, step.silu_name.data(), st);
      silu_in_place(static_cast<float*>(data), step.silu_elements, silu_isa, team_now);
      if (profile) {
        context.report_event(
            step.silu_name.data(),
            std::chrono::duration<double, std::milli>(Clock::now() - silu_start).count());
      }
    }
  }
  const dnnl_status_t st = dnnl_stream_wait(stream.get());
  if (st != dnnl_success) return failed(id, "dnnl_stream_wait", st);
  return Status::ok();
}

}  // namespace tessera::onednn
