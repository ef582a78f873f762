// Option machinery costs. Goals (issue #3): a typed lookup among 32 options < 20 ns; resolving
// and validating 32 options for one delegate at load < 5 us; execute-option selection cheap,
// and free for a call without execute options.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tessera/backend/context.h"
#include "tessera/backend/execute_options.h"
#include "tessera/backend/global_options.h"
#include "tessera/backend/registry.h"
#include "tessera/backend/resolution.h"
#include "tessera/backend/testing/stub_backend.h"

namespace tessera {
namespace {

constexpr size_t kOptions = 32;

// A registered backend with 32 int options "option_00" ... "option_31"; the last two may also be
// set per execute call.
struct Fixture {
  Fixture() {
    for (size_t i = 0; i < kOptions; ++i) {
      std::snprintf(names[i], sizeof names[i], "option_%02zu", i);
      Scopes scopes = i >= kOptions - 2 ? kAllScopes : kInitScopes;
      schema.push_back(OptionSpec::integer(OptionKey<int64_t>{names[i]}, 0, 0, 1000, scopes,
                                           "benchmark option"));
      keys.emplace_back(names[i]);
      specs_text[i] = std::to_string(i);
    }
    backend = std::make_unique<testing::StubBackend>(Span<const OptionSpec>(schema));
    Status s = register_backend("bench", backend.get());
    if (!s.is_ok()) std::fprintf(stderr, "%s\n", s.message());
    BackendOptions<kOptions> all;
    for (size_t i = 0; i < kOptions; ++i) (void)all.set(keys[i], static_cast<int64_t>(i));
    (void)load.set_options("bench", all.view());
    for (size_t i = 0; i < kOptions; ++i) {
      compile_specs.push_back(CompileSpec{names[i], specs_text[i].c_str()});
    }
    (void)resolve_options("bench", *backend, "bench#0", {}, &load, nullptr, Validation::Strict,
                          &resolved);
    (void)execute.set("bench", keys[kOptions - 1], 7);
    (void)execute.set("bench", keys[kOptions - 2], 8);
  }

  char names[kOptions][16];
  std::string specs_text[kOptions];
  std::vector<OptionSpec> schema;
  std::vector<OptionKey<int64_t>> keys;
  std::vector<CompileSpec> compile_specs;
  std::unique_ptr<testing::StubBackend> backend;
  LoadBackendOptionsMap load;
  ResolvedOptions resolved;
  ExecuteOptions execute;
};

Fixture& fixture() {
  static Fixture* f = new Fixture;
  return *f;
}

// One typed lookup of the last of 32 keys (the longest scan).
void BM_TypedLookupLastOf32(benchmark::State& state) {
  Fixture& f = fixture();
  const OptionKey<int64_t> key = f.keys[kOptions - 1];
  for (auto _ : state) {
    Result<int64_t> v = f.resolved.get(key);
    benchmark::DoNotOptimize(v.value());
  }
}
BENCHMARK(BM_TypedLookupLastOf32);

// The index probe alone (no Result): what a lookup costs before building its return value.
void BM_FindLastOf32(benchmark::State& state) {
  Fixture& f = fixture();
  const OptionKey<int64_t> key = f.keys[kOptions - 1];
  for (auto _ : state) {
    int i = f.resolved.find(key.view(), key.hash);
    benchmark::DoNotOptimize(f.resolved.option(static_cast<size_t>(i)).as_int());
  }
}
BENCHMARK(BM_FindLastOf32);

// Typed lookups cycling through all 32 keys (time per lookup).
void BM_TypedLookupAll32(benchmark::State& state) {
  Fixture& f = fixture();
  for (auto _ : state) {
    for (const OptionKey<int64_t>& key : f.keys) {
      Result<int64_t> v = f.resolved.get(key);
      benchmark::DoNotOptimize(v.value());
    }
  }
  state.SetItemsProcessed(state.iterations() * kOptions);
}
BENCHMARK(BM_TypedLookupAll32);

// Lookup by string key (ExecuTorch-style get_runtime_spec), hashing the key each time.
void BM_StringLookupLastOf32(benchmark::State& state) {
  Fixture& f = fixture();
  for (auto _ : state) {
    Result<int64_t> v = f.resolved.get_int("option_31");
    benchmark::DoNotOptimize(v.value());
  }
}
BENCHMARK(BM_StringLookupLastOf32);

// Load time: 32 load-scope options validated and resolved for one delegate (plus defaults and
// the global snapshot).
void BM_Resolve32LoadOptions(benchmark::State& state) {
  Fixture& f = fixture();
  ResolvedOptions out;
  for (auto _ : state) {
    Status s = resolve_options("bench", *f.backend, "bench#0", {}, &f.load, nullptr,
                               Validation::Strict, &out);
    benchmark::DoNotOptimize(s.is_ok());
  }
}
BENCHMARK(BM_Resolve32LoadOptions);

// Load time: 32 compile specs parsed from strings and validated.
void BM_Resolve32CompileSpecs(benchmark::State& state) {
  Fixture& f = fixture();
  ResolvedOptions out;
  for (auto _ : state) {
    Status s = resolve_options("bench", *f.backend, "bench#0", f.compile_specs, nullptr, nullptr,
                               Validation::Strict, &out);
    benchmark::DoNotOptimize(s.is_ok());
  }
}
BENCHMARK(BM_Resolve32CompileSpecs);

// Execute: selecting and validating two execute-scoped options, then reading one through the
// execution context.
void BM_SelectExecuteOptions(benchmark::State& state) {
  Fixture& f = fixture();
  for (auto _ : state) {
    ExecuteOptionView view;
    Status s = select_execute_options(f.execute, "bench", f.schema, &view);
    BackendExecutionContext ctx(&f.resolved, view);
    benchmark::DoNotOptimize(s.is_ok());
    benchmark::DoNotOptimize(ctx.get(f.keys[kOptions - 1]).value());
  }
}
BENCHMARK(BM_SelectExecuteOptions);

// Execute without execute options: the cost every call pays.
void BM_SelectExecuteOptionsEmpty(benchmark::State& state) {
  Fixture& f = fixture();
  const ExecuteOptions& none = ExecuteOptions::none();
  for (auto _ : state) {
    ExecuteOptionView view;
    Status s = select_execute_options(none, "bench", f.schema, &view);
    benchmark::DoNotOptimize(s.is_ok());
    benchmark::DoNotOptimize(view.options.data());
  }
}
BENCHMARK(BM_SelectExecuteOptionsEmpty);

// Global set_option of 4 options (validation, hook, commit under the backend's lock).
void BM_SetOptionGlobal4(benchmark::State& state) {
  Fixture& f = fixture();
  BackendOptions<4> opts;
  for (size_t i = 0; i < 4; ++i) (void)opts.set(f.keys[i], static_cast<int64_t>(i));
  for (auto _ : state) {
    Status s = set_option("bench", opts.view());
    benchmark::DoNotOptimize(s.is_ok());
  }
  (void)reset_backend_options("bench");
}
BENCHMARK(BM_SetOptionGlobal4);

}  // namespace
}  // namespace tessera
