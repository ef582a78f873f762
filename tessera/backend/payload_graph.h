// PayloadGraph: a delegate's payload graph (an fb::Graph, see graph_payload.h) as every backend
// reads it at init: dims evaluated against the load's symbols, constants with their bytes, and
// each value's producer and consumers, computed once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tessera/backend/context.h"
#include "tessera/backend/dims.h"
#include "tessera/backend/freeable_buffer.h"
#include "tessera/core/result.h"
#include "tessera/core/scalar_type.h"
#include "tessera/core/span.h"
#include "tessera/ir/schema.h"

namespace tessera {

/// One value of a payload graph.
struct PayloadValue {
  fb::ValueKind kind = fb::ValueKind::Tensor;
  ScalarType dtype = ScalarType::Float32;
  bool symbolic = false;  // some dim is an expression over symbols
  int32_t constant = -1;  // program constant index; -1 for an activation
  /// The constant's bytes, in place in the program (they live as long as the Program); empty for
  /// an activation.
  Span<const uint8_t> data;
  /// The node writing it; -1 for graph inputs, constants and values no node writes.
  int32_t producer = -1;
  int32_t graph_input = -1;  // its position among the graph inputs, or -1
  bool graph_output = false;

  bool is_constant() const { return constant >= 0; }
  bool is_tensor() const { return kind == fb::ValueKind::Tensor; }
};

/// The read-only view of one delegate's payload graph that a backend builds from at init.
/// Built once per init; the graph and the constants it views belong to the payload and the
/// Program, which must outlive it. Heap use is at construction only (no allocation per access).
class PayloadGraph {
 public:
  /// Verifies `payload` (errors as graph_payload()), then resolves every value against the
  /// load's symbols and constants. Errors: NotFound from BackendInitContext::symbol_value for a
  /// symbol the load does not give; from BackendInitContext::constant; InvalidProgram
  /// "<backend>: delegate '<id>': ..." for a dim expression that does not evaluate, a negative
  /// dim, a rank above kMaxDims, a value index out of range, or a value written twice or written
  /// although it is a graph input or a constant.
  static Result<PayloadGraph> make(const BackendInitContext& context,
                                   const FreeableBuffer* payload);

  const fb::Graph& graph() const { return *graph_; }

  size_t num_values() const { return values_.size(); }
  /// Value `v`; `v` must be in [0, num_values()) (debug assert).
  const PayloadValue& value(int32_t v) const;
  /// Value `v`'s dims, evaluated against the load's symbols.
  const Dims& dims(int32_t v) const;
  /// Every value's dims, by value index.
  Span<const Dims> dims() const { return dims_; }
  /// The nodes reading value `v`, in ascending order, each once.
  Span<const int32_t> consumers(int32_t v) const;
  /// Whether value `v` holds data before node `n` runs: a graph input, a constant, or written
  /// by a node before `n` (n = num_nodes(): after the last node).
  bool defined_before(int32_t v, size_t n) const {
    const PayloadValue& x = value(v);
    return x.graph_input >= 0 || x.is_constant() ||
           (x.producer >= 0 && static_cast<size_t>(x.producer) < n);
  }

  size_t num_nodes() const { return nodes_.size(); }
  /// Node `n`; `n` must be in [0, num_nodes()) (debug assert).
  const fb::Node& node(size_t n) const;
  /// Value indices read by node `n`, -1 for an absent optional input.
  Span<const int32_t> node_inputs(size_t n) const;
  Span<const int32_t> node_outputs(size_t n) const;

  /// The graph inputs and outputs, as value indices.
  Span<const int32_t> inputs() const { return list(graph_->inputs()); }
  Span<const int32_t> outputs() const { return list(graph_->outputs()); }

 private:
  explicit PayloadGraph(const fb::Graph* graph) : graph_(graph) {}
  static Span<const int32_t> list(const flatbuffers::Vector<int32_t>* v) {
    return v ? Span<const int32_t>(v->data(), v->size()) : Span<const int32_t>();
  }

  const fb::Graph* graph_;
  std::vector<PayloadValue> values_;
  std::vector<Dims> dims_;
  std::vector<const fb::Node*> nodes_;
  std::vector<int32_t> consumer_nodes_;   // every value's consumers, value after value
  std::vector<uint32_t> consumer_begin_;  // value v's consumers: [begin[v], begin[v + 1])
};

}  // namespace tessera
