#include "tessera/backend/payload_graph.h"

#include <cassert>
#include <string>

#include "tessera/backend/graph_payload.h"
#include "tessera/ir/shape_expr.h"

namespace tessera {
namespace {

template <typename T>
uint32_t count(const flatbuffers::Vector<T>* v) {
  return v ? v->size() : 0;
}

// "<backend>: delegate '<id>': " before `status`'s message.
Status invalid(const BackendInitContext& context, const Status& status) {
  std::string prefix(context.backend_name());
  prefix += ": delegate '";
  prefix += context.delegate_id();
  prefix += '\'';
  return status.with_prefix(prefix);
}

}  // namespace

Result<PayloadGraph> PayloadGraph::make(const BackendInitContext& context,
                                        const FreeableBuffer* payload) {
  TESSERA_ASSIGN_OR_RETURN(const fb::Graph* graph, graph_payload(context, payload));
  PayloadGraph view(graph);

  // Symbol values in the graph's symbol order, matched by name.
  std::vector<int64_t> symbols;
  symbols.reserve(count(graph->symbols()));
  for (uint32_t i = 0; i < count(graph->symbols()); ++i) {
    TESSERA_ASSIGN_OR_RETURN(int64_t s,
                             context.symbol_value(graph->symbols()->Get(i)->name()->string_view()));
    symbols.push_back(s);
  }

  const uint32_t num_values = count(graph->values());
  view.values_.resize(num_values);
  view.dims_.resize(num_values);
  for (uint32_t i = 0; i < num_values; ++i) {
    const fb::Value* v = graph->values()->Get(i);
    PayloadValue& out = view.values_[i];
    Dims& dims = view.dims_[i];
    out.kind = v->kind();
    out.dtype = static_cast<ScalarType>(v->dtype());
    out.constant = v->constant();
    const uint32_t rank = count(v->dims());
    if (rank > static_cast<uint32_t>(kMaxDims)) {
      return invalid(context, Status::error(Error::InvalidProgram, "value %u has rank %u (max %d)",
                                            i, rank, kMaxDims));
    }
    dims.rank = static_cast<int>(rank);
    for (uint32_t k = 0; k < rank; ++k) {
      const fb::Dim* dim = v->dims()->Get(k);
      if (dim->expr() != nullptr && dim->expr()->size() > 0) {
        out.symbolic = true;
        // The verifier bounded the tensor's size by the dims' bounds, evaluated at the symbols'
        // upper bounds; an expression can exceed its bound at other values (or with the
        // method's symbol above the graph's own bound), so each dim is held to its bound here.
        Result<int64_t> x = ir::eval_dim_within_bound(dim, symbols);
        if (!x.ok()) {
          return invalid(context, x.status().with_prefix("value " + std::to_string(i) + " dim " +
                                                         std::to_string(k)));
        }
        dims.d[k] = *x;
      } else {
        dims.d[k] = dim->value();
      }
      if (dims.d[k] < 0) {
        return invalid(context, Status::error(Error::InvalidProgram, "value %u has dim %u = %lld",
                                              i, k, static_cast<long long>(dims.d[k])));
      }
    }
    if (out.constant >= 0) {
      TESSERA_ASSIGN_OR_RETURN(out.data, context.constant(static_cast<uint32_t>(out.constant)));
    }
  }

  auto check_index = [&](int32_t v, const char* what, uint32_t at) -> Status {
    if (v >= 0 && static_cast<uint32_t>(v) < num_values) return Status::ok();
    return invalid(
        context, Status::error(Error::InvalidProgram, "%s %u refers to value %d; the graph has %u",
                               what, at, v, num_values));
  };
  for (uint32_t i = 0; i < count(graph->inputs()); ++i) {
    const int32_t v = graph->inputs()->Get(i);
    TESSERA_RETURN_IF_ERROR(check_index(v, "graph input", i));
    PayloadValue& value = view.values_[static_cast<size_t>(v)];
    if (value.graph_input >= 0 || value.is_constant()) {
      return invalid(context,
                     Status::error(Error::InvalidProgram,
                                   "graph input %u (value %d) is repeated or a constant", i, v));
    }
    value.graph_input = static_cast<int32_t>(i);
  }
  for (uint32_t i = 0; i < count(graph->outputs()); ++i) {
    const int32_t v = graph->outputs()->Get(i);
    TESSERA_RETURN_IF_ERROR(check_index(v, "graph output", i));
    view.values_[static_cast<size_t>(v)].graph_output = true;
  }

  // Nodes: indices in range, one writer per value; consumers counted, then placed.
  const uint32_t num_nodes = count(graph->nodes());
  view.nodes_.reserve(num_nodes);
  view.consumer_begin_.assign(num_values + 1, 0);
  std::vector<int32_t> last_reader(num_values, -1);
  for (uint32_t n = 0; n < num_nodes; ++n) {
    const fb::Node* node = graph->nodes()->Get(n);
    view.nodes_.push_back(node);
    for (int32_t v : view.node_inputs(n)) {
      if (v == -1) continue;
      TESSERA_RETURN_IF_ERROR(check_index(v, "an input of node", n));
      if (last_reader[static_cast<size_t>(v)] == static_cast<int32_t>(n)) continue;
      last_reader[static_cast<size_t>(v)] = static_cast<int32_t>(n);
      ++view.consumer_begin_[static_cast<size_t>(v) + 1];
    }
    for (int32_t v : view.node_outputs(n)) {
      TESSERA_RETURN_IF_ERROR(check_index(v, "an output of node", n));
      PayloadValue& value = view.values_[static_cast<size_t>(v)];
      if (value.producer >= 0) {
        return invalid(context, Status::error(Error::InvalidProgram,
                                              "value %d is written by node %d and node %u", v,
                                              value.producer, n));
      }
      if (value.graph_input >= 0 || value.is_constant()) {
        return invalid(
            context,
            Status::error(Error::InvalidProgram,
                          "node %u writes value %d, which is a graph input or a constant", n, v));
      }
      value.producer = static_cast<int32_t>(n);
    }
  }
  for (uint32_t v = 0; v < num_values; ++v) view.consumer_begin_[v + 1] += view.consumer_begin_[v];
  view.consumer_nodes_.resize(view.consumer_begin_[num_values]);
  std::vector<uint32_t> fill(view.consumer_begin_.begin(), view.consumer_begin_.end() - 1);
  last_reader.assign(num_values, -1);
  for (uint32_t n = 0; n < num_nodes; ++n) {
    for (int32_t v : view.node_inputs(n)) {
      if (v == -1 || last_reader[static_cast<size_t>(v)] == static_cast<int32_t>(n)) continue;
      last_reader[static_cast<size_t>(v)] = static_cast<int32_t>(n);
      view.consumer_nodes_[fill[static_cast<size_t>(v)]++] = static_cast<int32_t>(n);
    }
  }
  return view;
}

const PayloadValue& PayloadGraph::value(int32_t v) const {
  assert(v >= 0 && static_cast<size_t>(v) < values_.size());
  return values_[static_cast<size_t>(v)];
}

const Dims& PayloadGraph::dims(int32_t v) const {
  assert(v >= 0 && static_cast<size_t>(v) < dims_.size());
  return dims_[static_cast<size_t>(v)];
}

Span<const int32_t> PayloadGraph::consumers(int32_t v) const {
  assert(v >= 0 && static_cast<size_t>(v) < values_.size());
  const uint32_t begin = consumer_begin_[static_cast<size_t>(v)];
  const uint32_t end = consumer_begin_[static_cast<size_t>(v) + 1];
  return {consumer_nodes_.data() + begin, end - begin};
}

const fb::Node& PayloadGraph::node(size_t n) const {
  assert(n < nodes_.size());
  return *nodes_[n];
}

Span<const int32_t> PayloadGraph::node_inputs(size_t n) const {
  return list(node(n).inputs());
}

Span<const int32_t> PayloadGraph::node_outputs(size_t n) const {
  return list(node(n).outputs());
}

}  // namespace tessera
