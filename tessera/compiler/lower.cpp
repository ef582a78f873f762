#include "tessera/compiler/lower.h"

#include <algorithm>
#include <unordered_map>

#include "tessera/ir/op.h"

namespace tessera::compiler {

Result<LoweredGraph> lower_graph(const ModelGraph& g, ir::ProgramBuilder& program) {
  LoweredGraph out;
  ir::Graph& ig = out.graph;
  ig.symbols = g.symbols;
  std::vector<int> remap(g.values.size(), -1);
  std::unordered_map<const HostTensor*, int> constant_index;

  auto lower_value = [&](int v) -> Result<int> {
    if (remap[v] >= 0) return remap[v];
    const Value& src = g.values[v];
    ir::Value dst;
    dst.name = src.name;
    dst.dtype = src.dtype;
    for (size_t k = 0; k < src.dims.size(); ++k) {
      const SymExpr& d = src.dims[k];
      if (!d.is_const() && d.lower_bound(g.symbols) < 0) {
        return Status::error(Error::InvalidProgram,
                             "value '%s' has dim %zu = %s, which is negative at the symbols' lower "
                             "bounds; raise them with --dim",
                             src.name.c_str(), k, d.to_string(&g.symbols).c_str());
      }
      if (d.is_const() && d.const_value() < 0) {
        return Status::error(Error::InvalidProgram, "value '%s' has negative dim %lld", src.name.c_str(),
                             static_cast<long long>(d.const_value()));
      }
      dst.dims.push_back(d.to_dim(g.symbols));
    }
    // Tensors planned at their upper bound must fit comfortably in 64-bit sizes.
    uint64_t bytes = element_size(dst.dtype);
    for (const ir::Dim& d : dst.dims) {
      if (d.value < 0 || __builtin_mul_overflow(bytes, static_cast<uint64_t>(d.value), &bytes) ||
          bytes > (uint64_t{1} << 44)) {
        return Status::error(Error::InvalidProgram, "value '%s' is too large (%s at the upper bounds)",
                             src.name.c_str(), g.dims_string(v).c_str());
      }
    }
    if (src.data) {
      if (src.data->is_symbolic()) {
        return Status::error(Error::NotSupported,
                             "value '%s' is a shape value that depends on a symbolic dim and is read "
                             "at run time",
                             src.name.c_str());
      }
      auto it = constant_index.find(src.data.get());
      if (it == constant_index.end()) {
        std::vector<uint8_t> bytes = src.data->to_bytes();
        int c = program.add_constant(bytes.data(), bytes.size());
        out.constants_bytes += bytes.size();
        ++out.constants;
        it = constant_index.emplace(src.data.get(), c).first;
      }
      dst.constant = it->second;
    }
    ig.values.push_back(std::move(dst));
    remap[v] = static_cast<int>(ig.values.size()) - 1;
    return remap[v];
  };

  for (int v : g.inputs) {
    TESSERA_ASSIGN_OR_RETURN(int iv, lower_value(v));
    ig.inputs.push_back(iv);
  }
  for (const ir::Node& n : g.nodes) {
    ir::Node node = n;
    for (int& v : node.inputs) {
      if (v >= 0) {
        TESSERA_ASSIGN_OR_RETURN(v, lower_value(v));
      }
    }
    for (int& v : node.outputs) {
      if (v >= 0) {
        TESSERA_ASSIGN_OR_RETURN(v, lower_value(v));
      }
    }
    ig.nodes.push_back(std::move(node));
  }
  std::vector<bool> written(ig.values.size(), false);
  for (const ir::Node& n : ig.nodes) {
    for (int v : n.outputs) {
      if (v >= 0) written[v] = true;
    }
  }
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    const int v = g.outputs[k];
    const std::string& name = k < g.output_names.size() ? g.output_names[k] : g.values[v].name;
    TESSERA_ASSIGN_OR_RETURN(int iv, lower_value(v));
    written.resize(ig.values.size(), false);
    const bool repeated = std::find(ig.outputs.begin(), ig.outputs.end(), iv) != ig.outputs.end();
    if (written[iv] && !repeated) {
      ig.values[iv].name = name;  // the model's output name, also when Identity/Dropout aliased it
      ig.outputs.push_back(iv);
      continue;
    }
    // A constant, an input or a repeated output: copy it into a value of its own.
    ir::Value copy = ig.values[iv];
    copy.constant = -1;
    copy.name = name;
    if (copy.name == ig.values[iv].name) copy.name += ":output";
    ig.values.push_back(std::move(copy));
    const int ov = static_cast<int>(ig.values.size()) - 1;
    ir::Node id;
    id.op = fb::OpType::Identity;
    id.name = "output:" + name;
    id.inputs = {iv};
    id.outputs = {ov};
    ig.nodes.push_back(std::move(id));
    ig.outputs.push_back(ov);
  }
  return out;
}

}  // namespace tessera::compiler
