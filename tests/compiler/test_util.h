// Shared helpers of the compiler tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tessera/compiler/compiler.h"
#include "tessera/compiler/onnx_import.h"
#include "tessera/ir/op.h"
#include "tests/compiler/onnx_builder.h"

namespace tessera::compiler::testing {

inline Result<ModelGraph> import_model(const OnnxBuilder& b, std::vector<DimBound> dims = {}) {
  std::string bytes = b.bytes();
  ImportOptions options;
  options.dims = std::move(dims);
  return import_onnx(bytes.data(), bytes.size(), options);
}

inline Result<CompiledProgram> compile_model(const OnnxBuilder& b, std::vector<DimBound> dims = {},
                                             CompileOptions options = {}) {
  auto g = import_model(b, std::move(dims));
  if (!g.ok()) return g.status();
  return compile_graph(std::move(g).value(), options);
}

/// Op names of the graph's nodes in order.
inline std::vector<std::string> op_names(const std::vector<ir::Node>& nodes) {
  std::vector<std::string> out;
  for (const ir::Node& n : nodes) out.push_back(ir::op_name(n.op));
  return out;
}

#define ASSERT_OK(expr)                                          \
  do {                                                           \
    const auto& tessera_s_ = (expr);                             \
    ASSERT_TRUE(tessera_s_.ok()) << tessera_s_.status().message(); \
  } while (0)

}  // namespace tessera::compiler::testing
