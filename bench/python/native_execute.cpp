// The C++ baseline of bench/python/overhead.py: per call, what tessera.Method.__call__ does in
// C++ (set every input from a caller's buffer, execute, copy every output into a caller's
// buffer), timed over a loop.
//
//   python_overhead_native PROGRAM.tsr ITERATIONS ROUNDS
//
// Prints one line per round: the mean nanoseconds per call of that round.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tessera/runtime/data_loader.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program.h"

int main(int argc, char** argv) {
  using namespace tessera;
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s PROGRAM.tsr ITERATIONS ROUNDS\n", argv[0]);
    return 2;
  }
  const int iterations = std::atoi(argv[2]), rounds = std::atoi(argv[3]);
  auto loader = MmapDataLoader::from(argv[1]);
  if (!loader.ok()) return std::fprintf(stderr, "%s\n", loader.status().message()), 1;
  auto program = Program::load(&*loader);
  if (!program.ok()) return std::fprintf(stderr, "%s\n", program.status().message()), 1;
  auto method = program->load_method("forward");
  if (!method.ok()) return std::fprintf(stderr, "%s\n", method.status().message()), 1;

  std::vector<std::vector<uint8_t>> in_data, out_data;
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < method->inputs_size(); ++i) {
    const Tensor* t = *method->input(i);
    in_data.emplace_back(t->nbytes(), uint8_t{0});
    inputs.emplace_back(t->dtype(), t->sizes(), in_data.back().data());
  }
  for (size_t i = 0; i < method->outputs_size(); ++i)
    out_data.emplace_back((*method->get_output(i))->nbytes());

  auto call = [&] {
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!method->set_input(i, inputs[i]).is_ok()) std::abort();
    }
    if (!method->execute().is_ok()) std::abort();
    for (size_t i = 0; i < out_data.size(); ++i) {
      const Tensor* t = *method->get_output(i);
      std::memcpy(out_data[i].data(), t->data(), t->nbytes());
    }
  };
  for (int i = 0; i < iterations / 10 + 1; ++i) call();  // warm-up
  for (int r = 0; r < rounds; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) call();
    auto t1 = std::chrono::steady_clock::now();
    std::printf("%.1f\n", std::chrono::duration<double, std::nano>(t1 - t0).count() / iterations);
  }
  return 0;
}
