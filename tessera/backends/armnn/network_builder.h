// Converts a delegate payload (the portable graph IR, an fb::Graph) into an armnn::INetwork, in
// NCHW throughout, so no layout conversion is needed at the delegate's boundaries.
//
// check_node is the one support check: supports_op answers with it (dims at their stored upper
// bounds) and build_network runs it on every node before converting, so the partitioner never
// hands this backend a node it then fails to convert. Composed ops (grouped convolution as
// split + convolutions + concat, LayerNormalization as mean/sub/mul/rsqrt, HardSigmoid as
// linear + bounded ReLU, rank broadcasting as reshapes) are built from ArmNN 20.08's layers.
#pragma once

#include <armnn/INetwork.hpp>
#include <armnn/Tensor.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "tessera/backend/context.h"
#include "tessera/backend/dims.h"
#include "tessera/backend/payload_graph.h"
#include "tessera/core/result.h"
#include "tessera/core/status.h"
#include "tessera/ir/schema.h"

namespace tessera::armnn_backend {

/// OK when build_network converts `node`; NotSupported with the reason otherwise
/// ("armnn: Gelu node 'g': ArmNN 20.08 has no erf or Gelu activation"). `dims` holds the dims
/// of every value of `graph` (resolved, or the stored upper bounds).
Status check_node(const fb::Graph& graph, const fb::Node& node, Span<const Dims> dims);

/// The stored (upper bound) dims of every value of `graph`.
std::vector<Dims> stored_dims(const fb::Graph& graph);

/// A network ready for armnn::Optimize, with its bindings: binding id i of the input (output)
/// layers is graph input (output) i.
struct BuiltNetwork {
  armnn::INetworkPtr network{nullptr, nullptr};
  std::vector<armnn::TensorInfo> input_infos;
  std::vector<armnn::TensorInfo> output_infos;
  size_t layers = 0;  // ArmNN layers added, input/output layers included
};

/// Builds the network of the payload graph `view` (ArmNN copies the constants). Errors:
/// InvalidProgram (constant sizes, a dim above 32 bits, a value read before it is written),
/// NotSupported (check_node), DelegateInvalidCompatibility (ArmNN threw).
Result<BuiltNetwork> build_network(const PayloadGraph& view);

}  // namespace tessera::armnn_backend
