// Fuzz target: a program file through Program::load, then load_method and one execute of every
// method that loads, on the portable kernels and the portable backend only: every delegate is
// retargeted to "portable", so whatever backend the bytes name, no other backend runs.
//
// The method's memory comes from capped heap allocators, so a hostile arena or table size is a
// clean load error here rather than an out-of-memory report from the fuzzer.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "tessera/core/heap_allocator.h"
#include "tessera/core/log.h"
#include "tessera/core/memory_manager.h"
#include "tessera/ir/schema.h"  // fb::Method and fb::Symbol: method.h and program.h only declare them
#include "tessera/runtime/data_loader.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program.h"

namespace {

// Caps for the method allocator and the activation arena (a few MB keeps one execute short).
constexpr size_t kMethodMemoryLimit = 16u << 20;
constexpr size_t kArenaLimit = 4u << 20;
constexpr size_t kMaxMethods = 4;

tessera::LoadOptions portable_only() {
  tessera::LoadOptions options;
  for (const char* backend : {"xnnpack", "onednn", "opencl", "armnn"}) {
    (void)options.add_retarget(backend, "portable");
  }
  (void)options.set_fallback("portable");
  return options;
}

void load_and_run(const tessera::Program& program, std::string_view name,
                  tessera::LoadOptions options) {
  // Every symbolic dim at its upper bound (what the arena is planned for), so that methods with
  // symbols load too.
  const tessera::fb::Method* m = program.find_method(name);
  if (m != nullptr && m->symbols() != nullptr) {
    for (const tessera::fb::Symbol* symbol : *m->symbols()) {
      (void)options.set_dim(symbol->name()->string_view(), symbol->max());
    }
  }
  tessera::HeapMemoryAllocator method_memory(64 * 1024, kMethodMemoryLimit);
  tessera::HeapMemoryAllocator arena(64 * 1024, kArenaLimit);
  tessera::MemoryManager memory(&method_memory, &arena);
  tessera::Result<tessera::Method> method = program.load_method(name, &memory, options);
  if (!method.ok()) return;
  // Inputs start as zeros: deterministic, and no uninitialised arena bytes reach the kernels.
  for (size_t i = 0; i < method->inputs_size(); ++i) {
    tessera::Result<tessera::Tensor*> input = method->input(i);
    if (input.ok() && (*input)->data() != nullptr) {
      std::memset((*input)->data(), 0, (*input)->nbytes());
    }
  }
  (void)method->execute();
  for (size_t i = 0; i < method->outputs_size(); ++i) (void)method->get_output(i);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Warnings are still formatted (their arguments come from the input), then dropped.
  tessera::set_log_sink([](tessera::LogLevel, const char*, void*) {});
  tessera::set_min_log_level(tessera::LogLevel::Warning);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Program::load wants the 64-byte alignment an mmap gives; fuzzer inputs have none.
  void* copy = std::aligned_alloc(64, (size + 63) / 64 * 64 + 64);
  if (size != 0) std::memcpy(copy, data, size);
  {
    tessera::BufferDataLoader loader(copy, size);
    tessera::Result<tessera::Program> program = tessera::Program::load(&loader);
    if (program.ok()) {
      static const tessera::LoadOptions options = portable_only();
      const size_t methods = program->num_methods();
      for (size_t m = 0; m < methods && m < kMaxMethods; ++m) {
        tessera::Result<std::string_view> name = program->method_name(m);
        if (name.ok()) load_and_run(*program, *name, options);
      }
    }
  }
  std::free(copy);
  return 0;
}
