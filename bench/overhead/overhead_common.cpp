#include "bench/overhead/overhead_common.h"

#include <cstdlib>
#include <random>
#include <string>

#include "tessera/backend/context.h"
#include "tessera/backend/option_parser.h"
#include "tessera/backend/options_map.h"
#include "tessera/backend/registry.h"
#include "tessera/backend/resolution.h"
#include "tessera/core/heap_allocator.h"
#include "tessera/ir/program_builder.h"
#include "tessera/runtime/data_loader.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program.h"

namespace tessera::bench {
namespace {

Result<Span<const uint8_t>> spec_constant(void* context, uint32_t index) {
  const auto* s = static_cast<const OpSpec*>(context);
  const Floats& f = index == 0 ? s->weights : s->bias;
  return Span<const uint8_t>(reinterpret_cast<const uint8_t*>(f.data()), f.size() * 4);
}

// ---- Method::execute ---------------------------------------------------------------------------

struct AlignedBytes {
  explicit AlignedBytes(const std::vector<uint8_t>& bytes)
      : size(bytes.size()),
        data(static_cast<uint8_t*>(std::aligned_alloc(64, (size + 63) / 64 * 64))) {
    std::copy(bytes.begin(), bytes.end(), data);
  }
  ~AlignedBytes() { std::free(data); }
  size_t size;
  uint8_t* data;
};

Status one_thread_options(const char* backend, LoadBackendOptionsMap* load) {
  ParsedOptions parsed;
  TESSERA_RETURN_IF_ERROR(parse_option_assignment(std::string(backend) + ".num_threads=1",
                                                  OptionLevel::Load, Validation::Strict, "bench",
                                                  &parsed));
  return parsed.to_load_map(load);
}

}  // namespace

OpSpec make_spec(bool conv) {
  OpSpec s;
  s.conv = conv;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> d(-1, 1);
  if (conv) {
    s.in_dims = {1, 16, 8, 8};
    s.out_dims = {1, 16, 8, 8};
    s.weights.resize(16 * 16);
    s.bias.resize(16);
    for (float& f : s.weights) f = d(rng);
    for (float& f : s.bias) f = d(rng);
  } else {
    s.in_dims = {1, 256};
    s.out_dims = {1, 256};
  }
  return s;
}

int64_t numel(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t v : dims) n *= v;
  return n;
}

// The payload graph; constants are program constants 0 (weights) and 1 (bias).
ir::Graph make_graph(const OpSpec& s) {
  ir::Graph g;
  auto tensor = [&](std::vector<int64_t> dims, int constant = -1) {
    ir::Value v;
    for (int64_t x : dims) v.dims.push_back(x);
    v.constant = constant;
    g.values.push_back(v);
    return static_cast<int>(g.values.size()) - 1;
  };
  ir::Node n;
  n.name = "op";
  if (s.conv) {
    int x = tensor(s.in_dims);
    int w = tensor({16, 16, 1, 1}, 0);
    int b = tensor({16}, 1);
    int y = tensor(s.out_dims);
    n.op = fb::OpType::Conv;
    n.inputs = {x, w, b};
    n.outputs = {y};
    n.attrs = {ir::Attr::make_ints("kernel_shape", {1, 1})};
    g.inputs = {x};
    g.outputs = {y};
  } else {
    int a = tensor(s.in_dims), b = tensor(s.in_dims), y = tensor(s.out_dims);
    n.op = fb::OpType::Add;
    n.inputs = {a, b};
    n.outputs = {y};
    g.inputs = {a, b};
    g.outputs = {y};
  }
  g.nodes.push_back(n);
  return g;
}

// ---- The backend's execute ---------------------------------------------------------------------

void run_backend(benchmark::State& state, const char* backend_name) {
  const OpSpec s = make_spec(state.range(0) == 1);
  Result<BackendInterface*> backend = get_backend(backend_name);
  if (!backend.ok()) {
    state.SkipWithError(backend.status().message());
    return;
  }
  ResolvedOptions resolved;
  // One thread, at load scope (where every backend takes num_threads).
  LoadBackendOptionsMap load;
  const Status one_thread = one_thread_options(backend_name, &load);
  if (!one_thread.is_ok()) {
    state.SkipWithError(one_thread.message());
    return;
  }
  Span<const CompileSpec> specs;
  const std::string id = std::string(backend_name) + "#0";
  Status st = resolve_options(backend_name, **backend, id, specs, &load, nullptr,
                              Validation::Strict, &resolved);
  std::vector<uint8_t> payload_bytes = ir::encode_graph(make_graph(s));
  HeapMemoryAllocator allocator;
  BackendInitContext::Params params;
  params.method_allocator = &allocator;
  params.options = &resolved;
  params.constants = {spec_constant, const_cast<OpSpec*>(&s)};
  BackendInitContext ctx(params);
  FreeableBuffer payload(payload_bytes.data(), payload_bytes.size());
  Result<DelegateHandle*> handle = (*backend)->init(ctx, &payload, specs);
  if (!st.is_ok() || !handle.ok()) {
    state.SkipWithError(st.is_ok() ? handle.status().message() : st.message());
    return;
  }
  Floats a(static_cast<size_t>(numel(s.in_dims)), 0.5f), b(a.size(), 0.25f);
  Floats y(static_cast<size_t>(numel(s.out_dims)));
  Tensor ta(ScalarType::Float32, s.in_dims, a.data()), tb(ScalarType::Float32, s.in_dims, b.data());
  Tensor ty(ScalarType::Float32, s.out_dims, y.data());
  EValue ea(ta), eb(tb), ey(ty);
  std::vector<EValue*> args =
      s.conv ? std::vector<EValue*>{&ea, &ey} : std::vector<EValue*>{&ea, &eb, &ey};
  BackendExecutionContext exec(&resolved);
  for (auto _ : state) {
    Status r = (*backend)->execute(exec, *handle, args);
    benchmark::DoNotOptimize(r);
    benchmark::ClobberMemory();
  }
  (*backend)->destroy(*handle);
}

void run_method(benchmark::State& state, const char* backend_name) {
  const OpSpec s = make_spec(state.range(0) == 1);
  ir::ProgramBuilder pb;
  if (s.conv) {
    pb.add_constant(s.weights.data(), s.weights.size() * 4);
    pb.add_constant(s.bias.data(), s.bias.size() * 4);
  }
  ir::MethodBuilder& m = pb.add_method("forward");
  std::vector<ir::Dim> in(s.in_dims.begin(), s.in_dims.end()),
      out(s.out_dims.begin(), s.out_dims.end());
  ir::DelegateDesc d;
  d.id = std::string(backend_name) + "#0";
  d.backend = backend_name;
  d.payload = ir::encode_graph(make_graph(s));
  d.inputs.push_back(m.add_input("a", ScalarType::Float32, in));
  if (!s.conv) d.inputs.push_back(m.add_input("b", ScalarType::Float32, in));
  const int y = m.add_tensor("y", ScalarType::Float32, out);
  d.outputs = {y};
  m.add_output(y);
  m.add_delegate(d);
  if (!m.plan_memory().is_ok()) {
    state.SkipWithError("plan_memory failed");
    return;
  }
  Result<std::vector<uint8_t>> bytes = pb.build();
  if (!bytes.ok()) {
    state.SkipWithError(bytes.status().message());
    return;
  }
  AlignedBytes file(*bytes);
  BufferDataLoader loader(file.data, file.size);
  Result<Program> program = Program::load(&loader);
  if (!program.ok()) {
    state.SkipWithError(program.status().message());
    return;
  }
  LoadBackendOptionsMap load;
  const Status one_thread = one_thread_options(backend_name, &load);
  if (!one_thread.is_ok()) {
    state.SkipWithError(one_thread.message());
    return;
  }
  LoadOptions options;
  options.backend_options = &load;
  Result<Method> method = program->load_method("forward", nullptr, options);
  if (!method.ok()) {
    state.SkipWithError(method.status().message());
    return;
  }
  for (size_t i = 0; i < method->inputs_size(); ++i) {
    Result<Tensor*> t = method->input(i);
    if (!t.ok()) return;
    float* p = (*t)->data_as<float>();
    for (int64_t k = 0; k < (*t)->numel(); ++k) p[k] = 0.5f;
  }
  for (auto _ : state) {
    Status r = method->execute();
    benchmark::DoNotOptimize(r);
    benchmark::ClobberMemory();
  }
}

int register_overhead_benchmarks(const char* backend, void (*direct)(benchmark::State&)) {
  auto both_ops = [](benchmark::internal::Benchmark* b) { b->Arg(0)->Arg(1)->ArgName("conv"); };
  both_ops(benchmark::RegisterBenchmark("BM_Direct", direct));
  both_ops(benchmark::RegisterBenchmark(
      "BM_Backend", [backend](benchmark::State& state) { run_backend(state, backend); }));
  both_ops(benchmark::RegisterBenchmark(
      "BM_Method", [backend](benchmark::State& state) { run_method(state, backend); }));
  return 0;
}

}  // namespace tessera::bench
