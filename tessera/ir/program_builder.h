// ProgramBuilder: writes a program file from the in-memory IR, so tests and the compiler can
// make programs without ONNX.
//
//   ProgramBuilder pb;
//   int w = pb.add_constant(weights.data(), weights.size() * 4);
//   MethodBuilder& m = pb.add_method("forward");
//   int x = m.add_input("x", ScalarType::Float32, {1, 4});
//   ...
//   m.add_kernel(node);
//   TESSERA_RETURN_IF_ERROR(m.plan_memory());
//   TESSERA_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, pb.build());
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/core/result.h"
#include "tessera/ir/graph.h"

namespace tessera::ir {

inline constexpr uint32_t kProgramVersion = 1;
inline constexpr size_t kConstantAlignment = 64;

struct CompileSpecDesc {
  std::string key;
  std::string value;
};

struct DelegateDesc {
  std::string id;       // e.g. "xnnpack#0"
  std::string backend;  // e.g. "xnnpack"
  std::vector<uint8_t> payload;  // an encoded fb::Graph (see encode_graph)
  std::vector<CompileSpecDesc> compile_specs;
  std::vector<int> inputs;   // method values bound to the payload graph's inputs
  std::vector<int> outputs;  // ... and outputs
  /// Backends that could run it instead of `backend` (fb::Delegate::candidates); empty: pinned.
  std::vector<std::string> candidates;
};

struct InstructionDesc {
  fb::InstructionKind kind = fb::InstructionKind::Kernel;
  Node node;          // Kernel
  int delegate = -1;  // Delegate: index into MethodBuilder::delegates
};

class MethodBuilder {
 public:
  explicit MethodBuilder(std::string name) : name(std::move(name)) {}

  int add_symbol(std::string symbol, int64_t min, int64_t max);
  /// Adds a tensor value (an activation); returns its index.
  int add_tensor(std::string value_name, ScalarType dtype, std::vector<Dim> dims);
  /// Adds a tensor backed by program constant `constant`.
  int add_constant_tensor(std::string value_name, ScalarType dtype, std::vector<Dim> dims,
                          int constant);
  int add_input(std::string value_name, ScalarType dtype, std::vector<Dim> dims);
  void add_output(int value) { graph.outputs.push_back(value); }
  void add_kernel(Node node);
  /// Adds a delegate and the instruction that calls it; returns the delegate index.
  int add_delegate(DelegateDesc delegate);

  /// Assigns arena offsets to every non-constant tensor from its lifetime over the chain
  /// (greedy by size) and sets arena_size. Errors if a value is read before it is written.
  Status plan_memory();

  std::string name;
  Graph graph;  // symbols, values, inputs, outputs (graph.nodes is unused; see chain)
  std::vector<InstructionDesc> chain;
  std::vector<DelegateDesc> delegates;
  uint64_t arena_size = 0;
  uint64_t unplanned_bytes = 0;  // sum of planned tensors' sizes, for reporting
};

class ProgramBuilder {
 public:
  /// Copies `size` bytes into the constant segment; returns the constant's index.
  int add_constant(const void* data, size_t size);
  MethodBuilder& add_method(std::string name);

  /// The whole program file.
  Result<std::vector<uint8_t>> build() const;
  /// Writes build() to `path`.
  Status write(const std::string& path) const;

  std::vector<MethodBuilder>& methods() { return methods_; }
  size_t constants_bytes() const { return segment_.size(); }

 private:
  std::vector<uint8_t> segment_;
  std::vector<std::pair<uint64_t, uint64_t>> constants_;  // offset, size
  std::vector<MethodBuilder> methods_;
};

}  // namespace tessera::ir
