// classify: a small application embedding Tessera. It derives backend options from what this
// machine reports at run time (DeviceInfo: performance cores, caches, OpenCL devices; the
// battery state from sysfs), loads an image classifier program with them, and prints what the
// runtime did: the backend that ran each delegate, its effective options and where each value
// came from, the top-5 classes and the latency.
//
//   classify MODEL.tsr [--iterations N] [--cache-dir DIR]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "tessera/backend/device_info.h"
#include "tessera/backend/global_options.h"
#include "tessera/backend/options.h"
#include "tessera/backend/options_map.h"
#include "tessera/backend/registry.h"
#include "tessera/backend/resolution.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program.h"

namespace {

using namespace tessera;

constexpr OptionKey<int64_t> kNumThreads{"num_threads"};
constexpr OptionKey<bool> kYieldWorkers{"yield_workers"};
constexpr OptionKey<std::string_view> kCacheDir{"cache_dir"};

struct Battery {
  bool present = false;
  bool discharging = false;
  int percent = 100;
};

// Reads the first battery under /sys/class/power_supply, if any.
Battery read_battery() {
  Battery b;
  for (int i = 0; i < 4; ++i) {
    std::string base = "/sys/class/power_supply/BAT" + std::to_string(i) + "/";
    std::ifstream status(base + "status"), capacity(base + "capacity");
    if (!status) continue;
    std::string s;
    status >> s;
    b.present = true;
    b.discharging = s == "Discharging";
    if (capacity) capacity >> b.percent;
    break;
  }
  return b;
}

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
    std::fprintf(stderr, "usage: classify MODEL.tsr [--iterations N] [--cache-dir DIR]\n");
    return 2;
  }
  const char* path = argv[1];
  int iterations = 20;
  std::string cache_dir;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--iterations") == 0) iterations = std::max(1, std::atoi(argv[i + 1]));
    else if (std::strcmp(argv[i], "--cache-dir") == 0) cache_dir = argv[i + 1];
  }

  // 1. What the machine says, at run time.
  const DeviceInfo& device = DeviceInfo::get();
  std::printf("== this machine (DeviceInfo)\n%s", device.describe(/*with_opencl=*/true).c_str());
  Battery battery = read_battery();
  std::printf("battery: %s\n", battery.present ? (std::to_string(battery.percent) + "%" +
                                                  (battery.discharging ? ", discharging" : ", charging")).c_str()
                                                : "none (mains power)");

  // 2. Options derived from it. On battery below 30%: one thread, workers yield instead of spin.
  const bool save_power = battery.present && battery.discharging && battery.percent < 30;
  const int64_t threads = save_power ? 1 : static_cast<int64_t>(device.recommended_threads());
  std::printf("\n== derived options\n  xnnpack.num_threads = %lld (%s)\n  xnnpack.yield_workers = %s\n",
              static_cast<long long>(threads), save_power ? "battery saver" : "performance cores",
              save_power ? "true" : "false");
  BackendOptions<4> global;
  if (Status st = global.set(kNumThreads, threads); !st.is_ok()) return fail(st, "options");
  if (Status st = global.set(kYieldWorkers, save_power); !st.is_ok()) return fail(st, "options");
  if (get_backend("xnnpack").ok()) {
    if (Status st = set_option("xnnpack", global.view()); !st.is_ok()) return fail(st, "set_option");
  }

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
