#include "tessera/compiler/backend_targets.h"

#include <algorithm>
#include <memory>

#include "tessera/backend/interface.h"
#include "tessera/backend/option_schema.h"
#include "tessera/backend/registry.h"
#include "tessera/ir/schema.h"

namespace tessera::compiler {
namespace {

// The method graph encoded once as an fb::Graph, for OpView/SubgraphView pointers.
class EncodedGraph {
 public:
  const fb::Graph* get(const ir::Graph& graph) {
    if (&graph != source_ || graph.nodes.size() != nodes_ || graph.values.size() != values_) {
      bytes_ = ir::encode_graph(graph);
      source_ = &graph;
      nodes_ = graph.nodes.size();
      values_ = graph.values.size();
    }
    return flatbuffers::GetRoot<fb::Graph>(bytes_.data());
  }

 private:
  const ir::Graph* source_ = nullptr;
  size_t nodes_ = 0, values_ = 0;
  std::vector<uint8_t> bytes_;
};

BackendTarget make_target(const std::string& name, BackendInterface* backend) {
  auto encoded = std::make_shared<EncodedGraph>();
  BackendTarget t;
  t.name = name;
  t.supports_op = [backend, encoded](const ir::Graph& graph, const ir::Node& node) {
    const fb::Graph* g = encoded->get(graph);
    const size_t index = static_cast<size_t>(&node - graph.nodes.data());
    if (index >= graph.nodes.size() || !g->nodes()) return false;
    OpView view{static_cast<int>(node.op), g->nodes()->Get(static_cast<flatbuffers::uoffset_t>(index)), g};
    return backend->supports_op(view);
  };
  t.preprocess = [backend, encoded](const ir::Graph& graph, const std::vector<int>& nodes,
                                    const std::vector<ir::CompileSpecDesc>& specs) -> Result<std::vector<uint8_t>> {
    std::vector<uint32_t> indices(nodes.begin(), nodes.end());
    std::vector<CompileSpec> raw;
    for (const ir::CompileSpecDesc& s : specs) raw.push_back({s.key.c_str(), s.value.c_str()});
    SubgraphView view{encoded->get(graph), Span<const uint32_t>(indices.data(), indices.size())};
    TESSERA_ASSIGN_OR_RETURN(Payload payload, backend->preprocess(view, Span<const CompileSpec>(raw.data(), raw.size())));
    return std::vector<uint8_t>(payload.begin(), payload.end());
  };
  t.check_spec = [name, backend](const std::string& key, const std::string& value) -> Status {
    Span<const OptionSpec> schema = backend->option_schema();
    const int index = find_option_spec(schema, key);
    if (index < 0) return unknown_option_status(name, schema, key);
    BackendOption option;
    TESSERA_RETURN_IF_ERROR(parse_option_value(name, schema[static_cast<size_t>(index)], value, &option));
    return validate_option(name, schema, option, OptionLevel::CompileSpec);
  };
  return t;
}

}  // namespace

Result<std::vector<BackendTarget>> registry_backend_targets(const std::vector<std::string>& names) {
  std::vector<std::string> wanted = names;
  if (wanted.empty()) {
    // An explicit preference, not the registry's alphabetical order. On x86, oneDNN, then
    // XNNPACK: over the 19 full harness runs of the classifier set on record (Intel, Zen 4 and
    // Zen 5 guests, 1 and 2 threads; 456 rows), XNNPACK's program was the faster in 41 rows and
    // took 1.12-1.71x as long as oneDNN's in each run's geometric mean, and a fixed load (or an
    // auto one without a selection cache) builds the program's own backend. Elsewhere XNNPACK
    // first, the library made for those CPUs. Then any other CPU backend. "opencl" and "armnn" are
    // run-time device choices (ArmNN's device on x86 is its CpuRef reference implementation):
    // opt in by name, or retarget at load.
#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
    const char* const preference[] = {"onednn", "xnnpack"};
#else
    const char* const preference[] = {"xnnpack", "onednn"};
#endif
    const std::vector<std::string> registered = registered_backends();
    for (const char* preferred : preference) {
      if (std::find(registered.begin(), registered.end(), preferred) != registered.end()) {
        wanted.push_back(preferred);
      }
    }
    for (const std::string& n : registered) {
      if (n != "portable" && n != "opencl" && n != "armnn" &&
          std::find(wanted.begin(), wanted.end(), n) == wanted.end()) {
        wanted.push_back(n);
      }
    }
  }
  std::vector<BackendTarget> targets;
  for (const std::string& n : wanted) {
    if (n == "portable") break;
    TESSERA_ASSIGN_OR_RETURN(BackendInterface* backend, get_backend(n));
    targets.push_back(make_target(n, backend));
  }
  return targets;
}

}  // namespace tessera::compiler
