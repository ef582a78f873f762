// classify: a small application embedding Tessera. It shows what this machine reports at run
// time (DeviceInfo: usable CPUs, performance cores, caches, battery, thermal state, load, OpenCL
// devices), loads an image classifier program under the `auto` policy (on battery below 30 %,
// one thread with sleeping workers; on mains every performance core), and prints what the
// runtime did: the policy and why, the backend that ran each delegate, its effective options,
// the values derived for options left at auto with the reason, the top-5 classes and latency.
//
//   classify MODEL.tsr [--iterations N] [--cache-dir DIR] [--backend-library PATH]...
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "tessera/backend/backend_library.h"
#include "tessera/backend/derived_values.h"
#include "tessera/backend/device_info.h"
#include "tessera/backend/global_options.h"
#include "tessera/backend/options.h"
#include "tessera/backend/options_map.h"
#include "tessera/backend/policy.h"
#include "tessera/backend/registry.h"
#include "tessera/backend/resolution.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program.h"

namespace {

using namespace tessera;

constexpr OptionKey<std::string_view> kCacheDir{"cache_dir"};

int fail(const Status& st, const char* what) {
  std::fprintf(stderr, "classify: %s: %s (%s)\n", what, st.message(), error_name(st.code()));
  return 1;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

struct RunResult {
  double load_ms = 0, median_ms = 0;
  std::vector<float> output;
};

Status load_and_run(const Program& program, const LoadOptions& load, int iterations, bool report,
                    RunResult* out) {
  auto t0 = std::chrono::steady_clock::now();
  TESSERA_ASSIGN_OR_RETURN(Method method, program.load_method("forward", nullptr, load));
  out->load_ms = ms_since(t0);
  TESSERA_ASSIGN_OR_RETURN(Tensor * input, method.input(0));
  // A deterministic "image": the same for every run and backend.
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < input->numel(); ++i) input->data_as<float>()[i] = dist(rng);
  TESSERA_RETURN_IF_ERROR(method.execute());  // warm-up
  std::vector<double> times;
  for (int i = 0; i < iterations; ++i) {
    auto t = std::chrono::steady_clock::now();
    TESSERA_RETURN_IF_ERROR(method.execute());
    times.push_back(ms_since(t));
  }
  std::sort(times.begin(), times.end());
  out->median_ms = times[times.size() / 2];
  TESSERA_ASSIGN_OR_RETURN(const Tensor* logits, method.get_output(0));
  out->output.assign(logits->data_as<float>(), logits->data_as<float>() + logits->numel());
  if (report) {
    const PolicyDecision& policy = method.policy();
    std::printf("  policy %s (%s): %u thread(s) (%s)\n", policy_name(policy.effective),
                policy.reason, policy.threads, policy.threads_reason);
    for (size_t i = 0; i < method.num_delegates(); ++i) {
      const DelegateInfo& d = method.delegate_info(i);
      std::printf("  delegate %-12s %3zu nodes  ran on '%s'%s%s\n", d.id, d.num_nodes, d.backend,
                  d.reason[0] ? "  because: " : "", d.reason);
      if (d.options != nullptr) {
        std::string lines = explain_options(*d.options);
        size_t pos = 0;
        while (pos < lines.size()) {
          size_t nl = lines.find('\n', pos);
          std::printf("      %s\n", lines.substr(pos, nl - pos).c_str());
          if (nl == std::string::npos) break;
          pos = nl + 1;
        }
      }
      for (size_t k = 0; d.derived != nullptr && k < d.derived->size(); ++k) {
        const DerivedValue& v = (*d.derived)[k];
        std::printf("      %s resolved to %s (%s)\n", v.key, v.value, v.reason);
      }
    }
  }
  return Status::ok();
}

void print_top5(const std::vector<float>& logits) {
  std::vector<size_t> idx(logits.size());
  std::iota(idx.begin(), idx.end(), 0);
  size_t k = std::min<size_t>(5, idx.size());
  std::partial_sort(idx.begin(), idx.begin() + static_cast<long>(k), idx.end(),
                    [&](size_t a, size_t b) { return logits[a] > logits[b]; });
  std::printf("  top-5:");
  for (size_t i = 0; i < k; ++i) std::printf("  #%zu (%.3f)", idx[i], logits[idx[i]]);
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: classify MODEL.tsr [--iterations N] [--cache-dir DIR] "
                 "[--backend-library PATH]...\n");
    return 2;
  }
  const char* path = argv[1];
  int iterations = 20;
  std::string cache_dir;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--iterations") == 0) iterations = std::max(1, std::atoi(argv[i + 1]));
    else if (std::strcmp(argv[i], "--cache-dir") == 0) cache_dir = argv[i + 1];
    else if (std::strcmp(argv[i], "--backend-library") == 0) {
      const char* library = argv[i + 1];
      // [load-backend-library]
      Result<std::vector<std::string>> loaded = load_backend_library(library);
      if (!loaded.ok()) return fail(loaded.status(), library);
      for (const std::string& name : *loaded) std::printf("loaded backend '%s'\n", name.c_str());
      // [load-backend-library]
    }
  }

  // 1. What the machine says, at run time.
  const DeviceInfo& device = DeviceInfo::get();
  std::printf("== this machine (DeviceInfo)\n%s", device.describe(/*with_opencl=*/true).c_str());
  // 2. Nothing to derive by hand: the options stay at auto, and the load's policy (auto: the
  // battery, the thermal state and the load of the machine decide it at load time) gives each
  // backend its values. An application that knows better calls load.set_policy(...).

  auto loader = MmapDataLoader::from(path);
  if (!loader.ok()) return fail(loader.status(), path);
  auto program = Program::load(&*loader);
  if (!program.ok()) return fail(program.status(), path);

  // 3. Load with an explicit fallback chain: what runs where is reported, never hidden.
  LoadOptions load;
  if (Status st = load.set_dim("batch", 1); !st.is_ok()) return fail(st, "dim");
  if (Status st = load.set_fallback("xnnpack,portable"); !st.is_ok()) return fail(st, "fallback");
  std::printf("\n== CPU run (batch=1, fallback chain xnnpack,portable)\n");
  RunResult cpu;
  if (Status st = load_and_run(*program, load, iterations, true, &cpu); !st.is_ok()) return fail(st, "run");
  print_top5(cpu.output);
  std::printf("  load %.1f ms, latency median %.3f ms over %d runs\n", cpu.load_ms, cpu.median_ms, iterations);

  // 4. The same program on the OpenCL device, when there is one: the device is picked now.
  auto opencl = get_backend("opencl");
  if (opencl.ok() && (*opencl)->is_available()) {
    LoadBackendOptionsMap ocl_options;
    if (!cache_dir.empty()) {
      if (Status st = ocl_options.set("opencl", kCacheDir, std::string_view(cache_dir)); !st.is_ok()) {
        return fail(st, "opencl options");
      }
    }
    LoadOptions gpu = load;
    gpu.backend_options = &ocl_options;
    for (const std::string& from : registered_backends()) {
      if (from != "opencl") (void)gpu.add_retarget(from, "opencl");
    }
    for (int run = 0; run < 2; ++run) {
      std::printf("\n== OpenCL run %d (delegates retargeted to 'opencl'%s)\n", run + 1,
                  cache_dir.empty() ? "" : ", compiled kernels cached");
      RunResult r;
      // A CPU-emulated OpenCL device (PoCL) is slow: a few runs show the point.
      if (Status st = load_and_run(*program, gpu, std::min(iterations, 3), run == 0, &r); !st.is_ok()) {
        std::printf("  not run: %s\n", st.message());
        break;
      }
      print_top5(r.output);
      double max_diff = 0;
      for (size_t i = 0; i < r.output.size() && i < cpu.output.size(); ++i) {
        max_diff = std::max(max_diff, static_cast<double>(std::abs(r.output[i] - cpu.output[i])));
      }
      std::printf("  load %.1f ms, latency median %.3f ms; max |diff| vs CPU %.2e\n", r.load_ms,
                  r.median_ms, max_diff);
    }
  } else {
    std::printf("\n(no OpenCL backend or device here: skipping the OpenCL run)\n");
  }
  return 0;
}
