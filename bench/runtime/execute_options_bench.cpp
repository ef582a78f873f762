// The added cost of ExecuteOptions on a one-op Method: a one-node delegate (Relu over [2, 4])
// on the portable backend, which declares an execute-scoped key ("profile").
//   build/bench/runtime/bench_execute_options
#include <benchmark/benchmark.h>

#include <cstdlib>

#include "tessera/backend/execute_options.h"
#include "tessera/backend/option_key.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program.h"
#include "tests/testing/test_programs.h"

namespace tessera {
namespace {

constexpr OptionKey<bool> kProfile{"profile"};

struct OneOp {
  OneOp() : bytes(*testing::delegate_chain_program({"other"}).build()), buf(bytes), loader(buf.data(), buf.size()) {
    auto p = Program::load(&loader);
    if (!p.ok()) std::abort();
    program = std::make_unique<Program>(std::move(*p));
    LoadOptions opts;
    if (!opts.add_retarget("other", "portable").is_ok()) std::abort();
    auto m = program->load_method("forward", nullptr, opts);
    if (!m.ok()) std::abort();
    method = std::make_unique<Method>(std::move(*m));
  }
  std::vector<uint8_t> bytes;
  testing::AlignedBuffer buf;
  BufferDataLoader loader;
  std::unique_ptr<Program> program;
  std::unique_ptr<Method> method;
};

void BM_ExecuteNoOptions(benchmark::State& state) {
  OneOp op;
  for (auto _ : state) benchmark::DoNotOptimize(op.method->execute());
}
BENCHMARK(BM_ExecuteNoOptions);

void BM_ExecuteEmptyOptions(benchmark::State& state) {
  OneOp op;
  ExecuteOptions none;
  for (auto _ : state) benchmark::DoNotOptimize(op.method->execute(none));
}
BENCHMARK(BM_ExecuteEmptyOptions);

void BM_ExecuteOneOption(benchmark::State& state) {
  OneOp op;
  ExecuteOptions exec;
  if (!exec.set("portable", kProfile, false).is_ok()) std::abort();
  for (auto _ : state) benchmark::DoNotOptimize(op.method->execute(exec));
}
BENCHMARK(BM_ExecuteOneOption);

}  // namespace
}  // namespace tessera
