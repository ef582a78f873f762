// The ahead-of-time pipeline: import -> passes -> lower -> partition -> payloads -> memory plan
// -> program. tessera-compile is a thin front end over compile_onnx_file().
//
//   CompileOptions options;
//   options.import.dims.push_back({"batch", 1, 8});
//   TESSERA_ASSIGN_OR_RETURN(CompiledProgram out, compile_onnx_file("model.onnx", options));
//   TESSERA_RETURN_IF_ERROR(out.program.write("model.tsr"));
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/compiler/model_graph.h"
#include "tessera/compiler/onnx_import.h"
#include "tessera/compiler/partitioner.h"
#include "tessera/compiler/passes/pipeline.h"
#include "tessera/core/result.h"
#include "tessera/ir/program_builder.h"

namespace tessera::compiler {

/// A delegate backend as the compiler sees it.
struct BackendTarget {
  std::string name;
  SupportsOpFn supports_op;
  /// Optional: the backend's own payload for `nodes` of `graph`. An error with NotSupported
  /// (or no function) stores the portable graph IR of the subgraph instead.
  std::function<Result<std::vector<uint8_t>>(const ir::Graph& graph, const std::vector<int>& nodes,
                                             const std::vector<ir::CompileSpecDesc>& specs)>
      preprocess;
  /// Optional: validates one compile spec against the backend's option schema.
  std::function<Status(const std::string& key, const std::string& value)> check_spec;
};

/// `--spec BACKEND.KEY=VALUE`.
struct CompileSpecArg {
  std::string backend;
  std::string key;
  std::string value;
};

/// Parses "BACKEND.KEY=VALUE".
Result<CompileSpecArg> parse_compile_spec(const std::string& text);

struct CompileOptions {
  ImportOptions import;
  PassOptions passes;
  /// Delegate backends in order of preference; what none takes runs on the portable kernels.
  std::vector<BackendTarget> backends;
  /// Compile specs; each must name a backend of `backends`.
  std::vector<CompileSpecArg> specs;
  std::string method_name = "forward";
  /// The backends were not pinned by the user (tessera-compile without --backends): each
  /// delegate records the backends of `backends` that support all its nodes (when there are at
  /// least two) as fb::Delegate::candidates, so selection=auto at load may measure among them.
  bool selectable = false;
  /// Called as each stage starts ("importing", "optimizing", ...).
  std::function<void(std::string_view stage)> progress;
};

struct DelegateReport {
  std::string id;
  std::string backend;
  int nodes = 0;
  int inputs = 0;
  int outputs = 0;
  size_t payload_bytes = 0;
  std::vector<std::string> candidates;  // see CompileOptions::selectable
};

struct CompileReport {
  std::string method;
  std::vector<ir::Symbol> symbols;
  int graph_nodes = 0;  // IR nodes after the passes
  PassStats passes;
  /// backend ("portable" for kernel calls) -> op name -> count.
  std::map<std::string, std::map<std::string, int>> ops_by_backend;
  std::vector<DelegateReport> delegates;
  int kernel_instructions = 0;
  uint64_t arena_bytes = 0;
  uint64_t unplanned_bytes = 0;  // sum of the planned tensors' sizes
  size_t constants_bytes = 0;
  int constants = 0;
};

struct CompiledProgram {
  ir::ProgramBuilder program;
  CompileReport report;
  ir::Graph graph;  // the method graph after the passes, before partitioning (for inspection)
};

/// Optimises, partitions and plans `graph` into a one-method program.
Result<CompiledProgram> compile_graph(ModelGraph graph, const CompileOptions& options);

/// Imports `path` (see import_onnx_file) and compiles it.
Result<CompiledProgram> compile_onnx_file(const std::string& path, const CompileOptions& options);

/// The report as a JSON object (ops by backend, delegates, arena and constants bytes, ...).
std::string report_to_json(const CompileReport& report);

}  // namespace tessera::compiler
