// Small programs built with ProgramBuilder, shared by the runtime, backend and tool tests.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "tessera/ir/program_builder.h"
#include "tessera/runtime/data_loader.h"
#include "tessera/runtime/program.h"

namespace tessera::testing {

/// A 64-byte aligned copy of a program, for BufferDataLoader.
class AlignedBuffer {
 public:
  explicit AlignedBuffer(const std::vector<uint8_t>& bytes)
      : size_(bytes.size()),
        data_(static_cast<uint8_t*>(std::aligned_alloc(64, (bytes.size() + 63) / 64 * 64 + 64))) {
    if (size_) std::copy(bytes.begin(), bytes.end(), data_.get());
  }
  uint8_t* data() const { return data_.get(); }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  size_t size_;
  std::unique_ptr<uint8_t, Free> data_;
};

/// A built program loaded from an aligned copy in memory, with the copy and the loader it needs.
struct LoadedProgram {
  std::unique_ptr<AlignedBuffer> buffer;
  std::unique_ptr<BufferDataLoader> loader;
  std::unique_ptr<Program> program;
};

/// Builds `pb` and loads it; the error of the step that failed.
inline Result<LoadedProgram> load_built_program(const ir::ProgramBuilder& pb) {
  Result<std::vector<uint8_t>> bytes = pb.build();
  if (!bytes.ok()) return bytes.status();
  LoadedProgram out;
  out.buffer = std::make_unique<AlignedBuffer>(*bytes);
  out.loader = std::make_unique<BufferDataLoader>(out.buffer->data(), out.buffer->size());
  Result<Program> p = Program::load(out.loader.get());
  if (!p.ok()) return p.status();
  out.program = std::make_unique<Program>(std::move(*p));
  return out;
}

/// forward(x: float32[batch, 4]) = relu(x + bias) * scale, with bias and scale constants.
/// `symbolic` makes batch a symbol with bounds [1, 8]; otherwise batch is 2.
inline ir::ProgramBuilder add_relu_mul_program(bool symbolic = false) {
  ir::ProgramBuilder pb;
  const float bias[4] = {-1.0f, 0.5f, 2.0f, -3.0f};
  const float scale[4] = {2.0f, 2.0f, 0.5f, 1.0f};
  int cb = pb.add_constant(bias, sizeof bias);
  int cs = pb.add_constant(scale, sizeof scale);
  ir::MethodBuilder& m = pb.add_method("forward");
  ir::Dim batch = 2;
  if (symbolic) batch = ir::Dim::symbol(m.add_symbol("batch", 1, 8), 8);
  int x = m.add_input("x", ScalarType::Float32, {batch, 4});
  int b = m.add_constant_tensor("bias", ScalarType::Float32, {4}, cb);
  int s = m.add_constant_tensor("scale", ScalarType::Float32, {4}, cs);
  int t = m.add_tensor("t", ScalarType::Float32, {batch, 4});
  int y = m.add_tensor("y", ScalarType::Float32, {batch, 4});
  ir::Node add;
  add.op = fb::OpType::Add;
  add.name = "add";
  add.inputs = {x, b};
  add.outputs = {t};
  add.activation = fb::Activation::Relu;
  m.add_kernel(add);
  ir::Node mul;
  mul.op = fb::OpType::Mul;
  mul.name = "mul";
  mul.inputs = {t, s};
  mul.outputs = {y};
  m.add_kernel(mul);
  m.add_output(y);
  if (!m.plan_memory().is_ok()) std::abort();
  return pb;
}

/// Expected output of add_relu_mul_program for one row.
inline void add_relu_mul_reference(const float* x, float* y, int64_t rows) {
  const float bias[4] = {-1.0f, 0.5f, 2.0f, -3.0f};
  const float scale[4] = {2.0f, 2.0f, 0.5f, 1.0f};
  for (int64_t r = 0; r < rows; ++r) {
    for (int c = 0; c < 4; ++c) {
      float v = x[r * 4 + c] + bias[c];
      y[r * 4 + c] = (v > 0 ? v : 0) * scale[c];
    }
  }
}

}  // namespace tessera::testing

namespace tessera::testing {

/// forward(x: float32[2, 4]) runs a chain of delegates, one per entry of `backends`, each a
/// payload graph `Relu` over [2, 4]. Ids are "<backend>#<n>", n counting per backend. Compile
/// specs for delegate i come from `specs[i]` when given. `shape` replaces [2, 4] (a large one
/// makes a method the policy does not treat as small).
inline ir::ProgramBuilder delegate_chain_program(
    const std::vector<std::string>& backends,
    const std::vector<std::vector<ir::CompileSpecDesc>>& specs = {},
    const std::vector<int64_t>& shape = {2, 4}) {
  ir::ProgramBuilder pb;
  ir::MethodBuilder& m = pb.add_method("forward");
  const std::vector<ir::Dim> dims(shape.begin(), shape.end());
  int prev = m.add_input("x", ScalarType::Float32, dims);
  std::vector<std::pair<std::string, int>> counters;
  for (size_t i = 0; i < backends.size(); ++i) {
    // Appended, not "v" + to_string(i): GCC 12 warns -Wrestrict on that (a false positive).
    std::string value_name = "v";
    value_name += std::to_string(i);
    int next = m.add_tensor(value_name, ScalarType::Float32, dims);
    ir::Graph g;
    ir::Value v;
    v.dims = dims;
    g.values = {v, v};
    ir::Node relu;
    relu.op = fb::OpType::Relu;
    relu.name = "relu" + std::to_string(i);
    relu.inputs = {0};
    relu.outputs = {1};
    g.nodes = {relu};
    g.inputs = {0};
    g.outputs = {1};
    int n = 0;
    for (auto& [name, c] : counters) {
      if (name == backends[i]) n = ++c;
    }
    if (n == 0) {
      bool seen = false;
      for (auto& [name, c] : counters) seen |= name == backends[i];
      if (!seen) counters.emplace_back(backends[i], 0);
    }
    ir::DelegateDesc d;
    d.id = backends[i] + "#" + std::to_string(n);
    d.backend = backends[i];
    d.payload = ir::encode_graph(g);
    if (i < specs.size()) d.compile_specs = specs[i];
    d.inputs = {prev};
    d.outputs = {next};
    m.add_delegate(std::move(d));
    prev = next;
  }
  m.add_output(prev);
  if (!m.plan_memory().is_ok()) std::abort();
  return pb;
}

}  // namespace tessera::testing
