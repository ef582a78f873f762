// make_test_program OUT.tsr [BACKEND...]: writes a small program for the example and install
// tests (tests/testing/test_programs.h). Without backends: forward(x: float32[batch, 4]) =
// relu(x + bias) * scale with batch symbolic in [1, 8]; with them: forward(x: float32[2, 4])
// through one Relu delegate per named backend.
#include <cstdio>
#include <string>
#include <vector>

#include "tests/testing/test_programs.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: make_test_program OUT.tsr [BACKEND...]\n");
    return 2;
  }
  std::vector<std::string> backends(argv + 2, argv + argc);
  tessera::ir::ProgramBuilder builder = backends.empty()
                                            ? tessera::testing::add_relu_mul_program(true)
                                            : tessera::testing::delegate_chain_program(backends);
  auto bytes = builder.build();
  if (!bytes.ok()) {
    std::fprintf(stderr, "make_test_program: %s\n", bytes.status().message());
    return 1;
  }
  std::FILE* f = std::fopen(argv[1], "wb");
  if (f == nullptr || std::fwrite(bytes->data(), 1, bytes->size(), f) != bytes->size() ||
      std::fclose(f) != 0) {
    std::fprintf(stderr, "make_test_program: cannot write %s\n", argv[1]);
    return 1;
  }
  return 0;
}
