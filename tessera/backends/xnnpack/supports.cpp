#include "tessera/backends/xnnpack/supports.h"

#include "tessera/backends/xnnpack/node_reader.h"
#include "tessera/backends/xnnpack/op_plan.h"

namespace tessera::xnnpack {
namespace {

bool check(const NodeReader& reader, std::string* why) {
  OpPlan plan;
  Status status = plan_op(reader, &plan);
  if (!status.is_ok() && why != nullptr) *why = status.message();
  return status.is_ok();
}

}  // namespace

bool xnnpack_supports(const ir::Graph& graph, const ir::Node& node, std::string* why) {
  return check(IrNodeReader(graph, node), why);
}

bool xnnpack_supports(const fb::Graph& graph, const fb::Node& node, std::string* why) {
  return check(FbNodeReader(graph, node), why);
}

}  // namespace tessera::xnnpack
