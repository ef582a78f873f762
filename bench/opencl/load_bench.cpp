// Load-time and tuning figures of the OpenCL backend on a MobileNetV2-shaped network (stem
// conv, inverted residual blocks of 1x1 expand / 3x3 depthwise / 1x1 project with residual
// adds, global pooling, classifier), built in memory with random weights.
//
//   POCL_KERNEL_CACHE=0 build/bench/opencl/opencl_load_bench [resolution]
//
// Prints: cold load (empty cache_dir) vs warm load (same cache_dir), and execute latency with
// tuning_level=none vs normal, plus the load time of a second instance reading the tuning file.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "tessera/backend/context.h"
#include "tessera/backend/options_map.h"
#include "tessera/backend/registry.h"
#include "tessera/backend/resolution.h"
#include "tessera/backends/opencl/opencl_backend.h"
#include "tessera/backends/opencl/options.h"
#include "tessera/core/heap_allocator.h"
#include "tessera/ir/graph.h"

namespace {

using namespace tessera;

struct Net {
  ir::Graph graph;
  std::vector<std::vector<float>> constants;
  std::mt19937 rng{42};

  int value(std::vector<int64_t> dims, int constant = -1) {
    ir::Value v;
    v.name = 'v';
    v.name += std::to_string(graph.values.size());
    for (int64_t d : dims) v.dims.push_back(d);
    v.constant = constant;
    graph.values.push_back(std::move(v));
    return static_cast<int>(graph.values.size()) - 1;
  }
  int weights(std::vector<int64_t> dims, float scale) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::uniform_real_distribution<float> dist(-scale, scale);
    std::vector<float> w(static_cast<size_t>(n));
    for (float& f : w) f = dist(rng);
    constants.push_back(std::move(w));
    return value(dims, static_cast<int>(constants.size()) - 1);
  }
  int conv(int x, int64_t cin, int64_t h, int64_t cout, int64_t k, int64_t stride, int64_t group,
           bool relu6, int64_t* out_h) {
    const int64_t pad = k / 2;
    const int64_t oh = (h + 2 * pad - k) / stride + 1;
    int w = weights({cout, cin / group, k, k}, 1.0f / static_cast<float>(k * k * cin / group));
    int b = weights({cout}, 0.1f);
    int y = value({1, cout, oh, oh});
    ir::Node n;
    n.op = fb::OpType::Conv;
    n.name = "conv" + std::to_string(graph.nodes.size());
    n.inputs = {x, w, b};
    n.outputs = {y};
    n.attrs.push_back(ir::Attr::make_ints("kernel_shape", {k, k}));
    n.attrs.push_back(ir::Attr::make_ints("strides", {stride, stride}));
    n.attrs.push_back(ir::Attr::make_ints("pads", {pad, pad, pad, pad}));
    n.attrs.push_back(ir::Attr::make_int("group", group));
    if (relu6) {
      n.activation = fb::Activation::Clip;
      n.activation_min = 0.0f;
      n.activation_max = 6.0f;
    }
    graph.nodes.push_back(std::move(n));
    *out_h = oh;
    return y;
  }
  int node(fb::OpType op, std::vector<int> ins, std::vector<int64_t> out_dims) {
    int y = value(out_dims);
    ir::Node n;
    n.op = op;
    n.name = 'n';
    n.name += std::to_string(graph.nodes.size());
    n.inputs = std::move(ins);
    n.outputs = {y};
    graph.nodes.push_back(std::move(n));
    return y;
  }
};

// MobileNetV2's block table (expansion, channels, repeats, stride).
Net mobilenet_like(int64_t resolution) {
  Net net;
  int x = net.value({1, 3, resolution, resolution});
  net.graph.inputs.push_back(x);
  int64_t h = resolution, c = 32;
  x = net.conv(x, 3, h, c, 3, 2, 1, true, &h);
  const int64_t table[][4] = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2},
                              {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  for (const auto& row : table) {
    for (int64_t r = 0; r < row[2]; ++r) {
      const int64_t stride = r == 0 ? row[3] : 1;
      const int64_t hidden = c * row[0];
      int64_t h1 = h, h2 = h, h3 = h;
      int y = x;
      if (row[0] != 1) y = net.conv(y, c, h, hidden, 1, 1, 1, true, &h1);
      y = net.conv(y, hidden, h1, hidden, 3, stride, hidden, true, &h2);
      y = net.conv(y, hidden, h2, row[1], 1, 1, 1, false, &h3);
      if (stride == 1 && c == row[1]) y = net.node(fb::OpType::Add, {x, y}, {1, c, h3, h3});
      x = y;
      c = row[1];
      h = h3;
    }
  }
  x = net.conv(x, c, h, 1280, 1, 1, 1, true, &h);
  x = net.node(fb::OpType::GlobalAveragePool, {x}, {1, 1280, 1, 1});
  x = net.node(fb::OpType::Flatten, {x}, {1, 1280});
  int w = net.weights({1280, 1000}, 0.03f);
  int b = net.weights({1000}, 0.1f);
  x = net.node(fb::OpType::Gemm, {x, w, b}, {1, 1000});
  net.graph.outputs.push_back(x);
  return net;
}

Result<Span<const uint8_t>> constant_bytes(void* context, uint32_t index) {
  const auto* net = static_cast<const Net*>(context);
  const auto& c = net->constants[index];
  return Span<const uint8_t>(reinterpret_cast<const uint8_t*>(c.data()), c.size() * sizeof(float));
}

struct Loaded {
  BackendInterface* backend = nullptr;
  DelegateHandle* handle = nullptr;
  ResolvedOptions resolved;
  double ms = 0.0;
  ~Loaded() {
    if (handle) backend->destroy(handle);
  }
};

bool load(const Net& net, const LoadBackendOptionsMap& options, Loaded* out) {
  out->backend = *get_backend("opencl");
  Status st = resolve_options("opencl", *out->backend, "opencl#0", {}, &options, nullptr,
                              Validation::Strict, &out->resolved);
  if (!st.is_ok()) {
    std::fprintf(stderr, "options: %s\n", st.message());
    return false;
  }
  std::vector<uint8_t> payload = ir::encode_graph(net.graph);
  HeapMemoryAllocator allocator;
  BackendInitContext::Params params;
  params.method_allocator = &allocator;
  params.options = &out->resolved;
  params.method_name = "forward";
  params.constants = ConstantSource{constant_bytes, const_cast<Net*>(&net)};
  BackendInitContext context(params);
  FreeableBuffer buffer(payload.data(), payload.size());
  const auto start = std::chrono::steady_clock::now();
  Result<DelegateHandle*> h = out->backend->init(context, &buffer, {});
  out->ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!h.ok()) {
    std::fprintf(stderr, "init: %s\n", h.status().message());
    return false;
  }
  out->handle = *h;
  return true;
}

double latency_ms(const Net& net, Loaded& l, int runs) {
  const int64_t res = net.graph.values[static_cast<size_t>(net.graph.inputs[0])].dims[2].value;
  std::vector<float> in(static_cast<size_t>(3 * res * res), 0.5f), out(1000);
  Tensor ti(ScalarType::Float32, std::vector<int64_t>{1, 3, res, res}, in.data());
  Tensor to(ScalarType::Float32, std::vector<int64_t>{1, 1000}, out.data());
  EValue vi(ti), vo(to);
  EValue* args[] = {&vi, &vo};
  BackendExecutionContext ctx(&l.resolved);
  // Warm-up (PoCL builds work-group functions).
  if (Status st = l.backend->execute(ctx, l.handle, args); !st.is_ok()) {
    std::fprintf(stderr, "execute failed: %s\n", st.message());
    return -1.0;
  }
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    if (Status st = l.backend->execute(ctx, l.handle, args); !st.is_ok()) {
      std::fprintf(stderr, "execute failed: %s\n", st.message());
      return -1.0;
    }
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  setenv("POCL_KERNEL_CACHE", "0", 0);
  const int64_t resolution = argc > 1 ? std::atoll(argv[1]) : 224;
  if (!(*get_backend("opencl"))->is_available()) {
    std::printf("no OpenCL device: nothing to measure\n");
    return 0;
  }
  Net net = mobilenet_like(resolution);
  std::printf("MobileNetV2-shaped network at %lldx%lld: %zu nodes (POCL_KERNEL_CACHE=%s)\n",
              static_cast<long long>(resolution), static_cast<long long>(resolution),
              net.graph.nodes.size(), std::getenv("POCL_KERNEL_CACHE"));
  const std::string dir = (std::filesystem::temp_directory_path() / "tessera-opencl-bench").string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);

  LoadBackendOptionsMap cache;
  if (Status st = cache.set("opencl", opencl::kCacheDir, dir + "/cache"); !st.is_ok()) {
    std::fprintf(stderr, "cache_dir: %s\n", st.message());
    return 1;
  }
  double cold = 0, warm = 0;
  {
    Loaded l;
    if (!load(net, cache, &l)) return 1;
    cold = l.ms;
    std::printf("cold load: %8.1f ms (program %.1f ms, from cache: %d)\n", l.ms,
                opencl::summarize_delegate(l.handle).program.ms,
                opencl::summarize_delegate(l.handle).program.from_cache);
  }
  {
    Loaded l;
    if (!load(net, cache, &l)) return 1;
    warm = l.ms;
    std::printf("warm load: %8.1f ms (program %.1f ms, from cache: %d)\n", l.ms,
                opencl::summarize_delegate(l.handle).program.ms,
                opencl::summarize_delegate(l.handle).program.from_cache);
  }
  std::printf("cold / warm: %.1fx\n", cold / warm);

  const int runs = 20;
  {
    Loaded l;
    if (!load(net, cache, &l)) return 1;
    std::printf("tuning none:   latency %8.2f ms (median of %d)\n", latency_ms(net, l, runs), runs);
  }
  LoadBackendOptionsMap tuned = cache;
  if (Status st = tuned.set("opencl", opencl::kTuningLevel, EnumValue{"normal"}); !st.is_ok()) {
    std::fprintf(stderr, "tuning_level: %s\n", st.message());
    return 1;
  }
  if (Status st = tuned.set("opencl", opencl::kTuningFile, dir + "/tuning.bin"); !st.is_ok()) {
    std::fprintf(stderr, "tuning_file: %s\n", st.message());
    return 1;
  }
  {
    Loaded l;
    if (!load(net, tuned, &l)) return 1;
    const auto& s = opencl::summarize_delegate(l.handle);
    std::printf("tuning normal: latency %8.2f ms; search at load %.1f ms (%zu kernels tuned)\n",
                latency_ms(net, l, runs), l.ms, s.tuned);
  }
  {
    Loaded l;
    if (!load(net, tuned, &l)) return 1;
    const auto& s = opencl::summarize_delegate(l.handle);
    std::printf("tuning file:   load %.1f ms, %zu kernels from the file, %zu searched; latency %.2f ms\n",
                l.ms, s.tuning_loaded, s.tuned, latency_ms(net, l, runs));
  }
  std::filesystem::remove_all(dir);
  return 0;
}
