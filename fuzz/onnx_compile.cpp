// Fuzz target: an ONNX model through the whole ahead-of-time pipeline (import with the checker
// and shape inference, passes, partitioning for the built CPU backends with their preprocess,
// memory planning, serialization). A program the compiler writes must then pass Program::load:
// the compiler and the loader's verifier must agree.
//
// The first input byte chooses the import options (bounds for a symbolic dim "batch", the ONNX
// checker on or off); the rest is the serialized ModelProto.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "tessera/compiler/backend_targets.h"
#include "tessera/compiler/compiler.h"
#include "tessera/compiler/onnx_import.h"
#include "tessera/core/log.h"
#include "tessera/runtime/data_loader.h"
#include "tessera/runtime/program.h"

namespace {

const std::vector<tessera::compiler::BackendTarget>& targets() {
  static const std::vector<tessera::compiler::BackendTarget> all = [] {
    auto t = tessera::compiler::registry_backend_targets({});
    return t.ok() ? std::move(t).value() : std::vector<tessera::compiler::BackendTarget>{};
  }();
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tessera::set_log_sink([](tessera::LogLevel, const char*, void*) {});
  (void)targets();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  tessera::compiler::CompileOptions options;
  if ((mode & 1) != 0) options.import.dims.push_back({"batch", 1, 4});
  options.import.check_model = (mode & 2) == 0;
  options.backends = targets();

  tessera::Result<tessera::compiler::ModelGraph> graph =
      tessera::compiler::import_onnx(data + 1, size - 1, options.import);
  if (!graph.ok()) return 0;
  tessera::Result<tessera::compiler::CompiledProgram> compiled =
      tessera::compiler::compile_graph(std::move(graph).value(), options);
  if (!compiled.ok()) return 0;
  tessera::Result<std::vector<uint8_t>> bytes = compiled->program.build();
  if (!bytes.ok()) return 0;

  void* copy = std::aligned_alloc(64, (bytes->size() + 63) / 64 * 64 + 64);
  std::memcpy(copy, bytes->data(), bytes->size());
  tessera::BufferDataLoader loader(copy, bytes->size());
  tessera::Result<tessera::Program> program = tessera::Program::load(&loader);
  if (!program.ok()) {
    std::fprintf(stderr, "compiled program does not load: %s\n", program.status().message());
    std::abort();
  }
  std::free(copy);
  return 0;
}
