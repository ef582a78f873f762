#include "tessera/compiler/passes/activation_fusion.h"

#include <cmath>

#include "tessera/compiler/shape_inference.h"
#include "tessera/ir/op_attrs.h"
#include "tessera/ir/op_table.h"

namespace tessera::compiler {

int fuse_activations(ModelGraph& graph) {
  const std::vector<int> uses = graph.use_counts();
  const std::vector<int> producer = graph.producers();
  std::vector<bool> removed(graph.nodes.size(), false);
  int fused = 0;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const ir::Node& act = graph.nodes[i];
    if (act.op != fb::OpType::Relu && act.op != fb::OpType::Clip) continue;
    if (act.inputs.empty() || act.inputs[0] < 0 || act.outputs.size() != 1) continue;
    const int mid = act.inputs[0];
    const int p = producer[mid];
    if (p < 0 || removed[p] || uses[mid] != 1) continue;
    ir::Node& prod = graph.nodes[p];
    const ir::OpInfo* info = ir::op_info(prod.op);
    if (info == nullptr || !info->fused_activation || prod.activation != fb::Activation::None) {
      continue;
    }
    if (prod.outputs.size() != 1 || graph.values[mid].dtype != ScalarType::Float32) continue;
    if (act.op == fb::OpType::Relu) {
      prod.activation = fb::Activation::Relu;
      prod.activation_min = 0.0f;
      prod.activation_max = INFINITY;
    } else {
      // A Clip whose attributes do not read stays as it is, for load validation to report.
      const Result<ir::ClipAttrs> clip = ir::ClipAttrs::read(act);
      if (!clip.ok()) continue;
      prod.activation = fb::Activation::Clip;
      prod.activation_min = clip->min;
      prod.activation_max = clip->max;
    }
    prod.outputs[0] = act.outputs[0];
    removed[i] = true;
    ++fused;
  }
  std::vector<ir::Node> kept;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (!removed[i]) kept.push_back(std::move(graph.nodes[i]));
  }
  graph.nodes = std::move(kept);
  return fused;
}

}  // namespace tessera::compiler
