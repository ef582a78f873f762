#include "tessera/compiler/compiler.h"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "tessera/compiler/lower.h"
#include "tessera/core/tensor.h"
#include "tessera/ir/op.h"
#include "tessera/runtime/program.h"
#include "tessera/runtime/program_validation.h"

namespace tessera::compiler {
namespace {

void progress(const CompileOptions& options, std::string_view stage) {
  if (options.progress) options.progress(stage);
}

}  // namespace

Result<CompileSpecArg> parse_compile_spec(const std::string& text) {
  const auto dot = text.find('.');
  const auto eq = text.find('=');
  if (dot == std::string::npos || eq == std::string::npos || dot == 0 || eq < dot + 2) {
    return Status::error(Error::InvalidArgument,
                         "bad compile spec '%s' (expected BACKEND.KEY=VALUE, e.g. xnnpack.num_threads=4)",
                         text.c_str());
  }
  return CompileSpecArg{text.substr(0, dot), text.substr(dot + 1, eq - dot - 1), text.substr(eq + 1)};
}

Result<CompiledProgram> compile_graph(ModelGraph graph, const CompileOptions& options) {
  CompiledProgram out;
  CompileReport& report = out.report;
  report.method = options.method_name;

  // Compile specs first: they are cheap to check and a typo should not wait for the model.
  std::map<std::string, std::vector<ir::CompileSpecDesc>> specs;
  for (const CompileSpecArg& s : options.specs) {
    auto it = std::find_if(options.backends.begin(), options.backends.end(),
                           [&](const BackendTarget& b) { return b.name == s.backend; });
    if (it == options.backends.end()) {
      std::string names;
      for (const BackendTarget& b : options.backends) names += (names.empty() ? "" : ", ") + b.name;
      return Status::error(Error::OptionUnknownBackend,
                           "compile spec '%s.%s': backend '%s' is not among the target backends (%s)",
                           s.backend.c_str(), s.key.c_str(), s.backend.c_str(),
                           names.empty() ? "none: portable kernels only" : names.c_str());
    }
    if (it->check_spec) TESSERA_RETURN_IF_ERROR(it->check_spec(s.key, s.value));
    specs[s.backend].push_back({s.key, s.value});
  }

  progress(options, "optimizing");
  TESSERA_RETURN_IF_ERROR(run_passes(graph, options.passes, &report.passes));
  report.symbols = graph.symbols;

  progress(options, "lowering");
  ir::ProgramBuilder& pb = out.program;
  TESSERA_ASSIGN_OR_RETURN(LoweredGraph lowered, lower_graph(graph, pb));
  const ir::Graph& ig = lowered.graph;
  // What the loader would reject must fail here, not in a program file that never loads.
  for (const ir::Value& v : ig.values) {
    if (v.dims.size() > static_cast<size_t>(kMaxDims)) {
      return Status::error(Error::NotSupported,
                           "tensor '%s' has rank %zu; Tessera tensors have at most %d dims",
                           v.name.c_str(), v.dims.size(), kMaxDims);
    }
    // The loader's bound on a tensor's size (at its dims' upper bounds), the same function:
    // its non-zero dims count even where another dim is 0 and the tensor holds nothing.
    if (v.kind != fb::ValueKind::Tensor) continue;
    int64_t dims[kMaxDims];
    for (size_t d = 0; d < v.dims.size(); ++d) dims[d] = std::max<int64_t>(v.dims[d].value, 0);
    uint64_t bytes = 0;
    if (!internal::bounded_nbytes(v.dtype, Span<const int64_t>(dims, v.dims.size()), &bytes)) {
      return Status::error(Error::NotSupported,
                           "tensor '%s': its non-zero dims need more than %llu bytes, the most a "
                           "Tessera tensor may have",
                           v.name.c_str(), static_cast<unsigned long long>(kMaxArenaBytes));
    }
  }
  report.graph_nodes = static_cast<int>(ig.nodes.size());
  report.constants_bytes = pb.constants_bytes();
  report.constants = lowered.constants;

  progress(options, "partitioning");
  std::vector<BackendCandidate> candidates;
  for (const BackendTarget& b : options.backends) candidates.push_back({b.name, b.supports_op});
  PartitionOptions partition_options;
  partition_options.follow_producers = options.selectable;
  TESSERA_ASSIGN_OR_RETURN(std::vector<Partition> partitions,
                           partition_graph(ig, candidates, partition_options));

  // Method values: those the chain touches. Values inside a delegate stay in its payload.
  std::vector<int> method_index(ig.values.size(), -1);
  ir::MethodBuilder& m = pb.add_method(options.method_name);
  m.graph.symbols = ig.symbols;
  auto use = [&](int v) {
    if (v < 0) return -1;
    if (method_index[v] < 0) {
      m.graph.values.push_back(ig.values[v]);
      method_index[v] = static_cast<int>(m.graph.values.size()) - 1;
    }
    return method_index[v];
  };
  for (int v : ig.inputs) m.graph.inputs.push_back(use(v));

  progress(options, "building delegates");
  std::map<std::string, int> delegate_count;
  for (const Partition& p : partitions) {
    const std::string backend = p.backend.empty() ? "portable" : p.backend;
    for (int i : p.nodes) ++report.ops_by_backend[backend][ir::op_name(ig.nodes[i].op)];
    if (p.backend.empty()) {
      for (int i : p.nodes) {
        ir::Node node = ig.nodes[i];
        for (int& v : node.inputs) v = use(v);
        for (int& v : node.outputs) v = use(v);
        m.add_kernel(std::move(node));
        ++report.kernel_instructions;
      }
      continue;
    }
    const BackendTarget& target = *std::find_if(options.backends.begin(), options.backends.end(),
                                                [&](const BackendTarget& b) { return b.name == p.backend; });
    Subgraph sub = extract_subgraph(ig, p.nodes);
    ir::DelegateDesc d;
    d.backend = p.backend;
    d.id = p.backend + "#" + std::to_string(delegate_count[p.backend]++);
    d.compile_specs = specs[p.backend];
    if (options.selectable) {
      for (const BackendTarget& t : options.backends) {
        const bool all = std::all_of(p.nodes.begin(), p.nodes.end(), [&](int i) {
          return t.supports_op && t.supports_op(ig, ig.nodes[i]);
        });
        if (all) d.candidates.push_back(t.name);
      }
      if (d.candidates.size() < 2) d.candidates.clear();
    }
    bool have_payload = false;
    if (target.preprocess) {
      auto payload = target.preprocess(ig, p.nodes, d.compile_specs);
      if (payload.ok()) {
        d.payload = std::move(payload).value();
        have_payload = true;
      } else if (payload.error() != Error::NotSupported) {
        return payload.status().with_prefix(d.id + ": preprocess");
      }
    }
    if (!have_payload) d.payload = ir::encode_graph(sub.graph);
    if (have_payload) d.candidates.clear();  // a backend's own payload: only it can run it
    for (int v : sub.inputs) d.inputs.push_back(use(v));
    for (int v : sub.outputs) d.outputs.push_back(use(v));
    DelegateReport dr{d.id, d.backend, static_cast<int>(p.nodes.size()), static_cast<int>(d.inputs.size()),
                      static_cast<int>(d.outputs.size()), d.payload.size(), d.candidates};
    report.delegates.push_back(std::move(dr));
    m.add_delegate(std::move(d));
  }
  for (int v : ig.outputs) m.add_output(use(v));
  out.graph = ig;

  progress(options, "planning memory");
  TESSERA_RETURN_IF_ERROR(m.plan_memory());
  if (m.arena_size > kMaxArenaBytes) {
    return Status::error(
        Error::NotSupported,
        "the activation arena would need %llu bytes; programs may plan at most %llu "
        "(lower the bounds of symbolic dims)",
        static_cast<unsigned long long>(m.arena_size),
        static_cast<unsigned long long>(kMaxArenaBytes));
  }
  report.arena_bytes = m.arena_size;
  report.unplanned_bytes = m.unplanned_bytes;
  return out;
}

Result<CompiledProgram> compile_onnx_file(const std::string& path, const CompileOptions& options) {
  progress(options, "importing");
  TESSERA_ASSIGN_OR_RETURN(ModelGraph graph, import_onnx_file(path, options.import));
  return compile_graph(std::move(graph), options);
}

std::string report_to_json(const CompileReport& r) {
  using Json = nlohmann::ordered_json;
  Json symbols = Json::array();
  for (const ir::Symbol& sym : r.symbols) {
    symbols.push_back({{"name", sym.name}, {"min", sym.min}, {"max", sym.max}});
  }
  Json ops_by_backend = Json::object();
  for (const auto& [backend, ops] : r.ops_by_backend) {
    Json counts = Json::object();
    for (const auto& [op, count] : ops) counts[op] = count;
    ops_by_backend[backend] = std::move(counts);
  }
  Json delegates = Json::array();
  for (const DelegateReport& d : r.delegates) {
    delegates.push_back({{"id", d.id},
                         {"backend", d.backend},
                         {"nodes", d.nodes},
                         {"inputs", d.inputs},
                         {"outputs", d.outputs},
                         {"payload_bytes", d.payload_bytes},
                         {"candidates", d.candidates}});
  }
  const Json report = {{"method", r.method},
                       {"symbols", std::move(symbols)},
                       {"nodes", r.graph_nodes},
                       {"passes",
                        {{"constants_folded", r.passes.constants_folded},
                         {"patterns_fused", r.passes.patterns_fused},
                         {"batch_norms_folded", r.passes.batch_norms_folded},
                         {"batch_norms_lowered", r.passes.batch_norms_lowered},
                         {"activations_fused", r.passes.activations_fused},
                         {"dead_nodes_removed", r.passes.dead_nodes_removed}}},
                       {"ops_by_backend", std::move(ops_by_backend)},
                       {"delegates", std::move(delegates)},
                       {"kernel_instructions", r.kernel_instructions},
                       {"arena_bytes", r.arena_bytes},
                       {"unplanned_bytes", r.unplanned_bytes},
                       {"constants", r.constants},
                       {"constants_bytes", r.constants_bytes}};
  return report.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace tessera::compiler
