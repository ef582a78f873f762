#include "tessera/backends/xnnpack/subgraph_builder.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tessera/backends/xnnpack/node_reader.h"
#include "tessera/backends/xnnpack/op_plan.h"
#include "tessera/ir/memory_plan.h"
#include "tessera/ir/op.h"

// How it works. The nodes are walked twice in the same order with the same layout decisions.
// The dry pass places every node in a "segment" (one XNNPACK runtime), decides each value's
// layout, and records the steps between runtimes (layout conversions, concatenations) and the
// buffers they use; a value is "exported" from its segment when anything after the segment reads
// it. Only then are the external value counts known, which xnn_create_subgraph needs, so the
// emit pass defines the XNNPACK subgraphs and creates the runtimes.

namespace tessera::xnnpack {
namespace {

constexpr uint32_t kInvalidId = XNN_INVALID_VALUE_ID;

const char* status_name(xnn_status s) {
  switch (s) {
    case xnn_status_success:
      return "success";
    case xnn_status_uninitialized:
      return "uninitialized";
    case xnn_status_invalid_parameter:
      return "invalid parameter";
    case xnn_status_invalid_state:
      return "invalid state";
    case xnn_status_unsupported_parameter:
      return "unsupported parameter";
    case xnn_status_unsupported_hardware:
      return "unsupported hardware";
    case xnn_status_out_of_memory:
      return "out of memory";
  }
  return "unknown";
}

struct Converted {
  Layout layout;
  int rank;
  int buffer;
};

// A view of a value defined in one segment's subgraph.
struct View {
  int segment;
  Layout layout;
  int rank;
  uint32_t id;
};

// A padded, permuted copy of a constant for elementwise operands.
struct StaticCopy {
  Layout layout;
  int rank;
  const float* data;
};

struct ValueState {
  Dims dims;
  int constant = -1;
  const float* data = nullptr;  // constant bytes, in place in the program
  int graph_input = -1;
  bool graph_output = false;
  Layout pref = Layout::Identity;
  Layout layout = Layout::Identity;  // as produced (or staged)
  int segment = -1;  // producing segment; -1 when held in a buffer (input, concat) or constant
  int buffer = -1;   // natural buffer (staged input or export)
  bool exported = false;
  std::vector<Converted> converted;
  std::vector<StaticCopy> copies;
  // Emit pass.
  uint32_t id = kInvalidId;  // in its producing segment
  std::vector<View> views;

  bool is_activation() const { return constant < 0; }
  Dims natural() const { return physical_dims(dims, dims.rank, layout); }
};

struct BufferInfo {
  int value;
  Dims physical;
  bool read_later = false;  // read by a step after the one writing it
};

struct SegmentInfo {
  std::vector<int> imports;  // buffers, in first-use order
  size_t num_nodes = 0;
  size_t num_externals = 0;
  // Emit pass.
  xnn_subgraph_t subgraph = nullptr;
  uint32_t next_external = 0;
  std::vector<std::pair<uint32_t, int>> externals;   // id, buffer
  std::vector<std::pair<int, uint32_t>> import_ids;  // buffer, id
};

// One data input of a node as the op wants it.
struct Request {
  int slot;
  int value;
  Layout layout;
  int rank;
  bool constant;
};

class Builder {
 public:
  Builder(const PayloadGraph& view, const BackendInitContext& context, const BuildOptions& options,
          Delegate* delegate)
      : view_(view), context_(context), options_(options), d_(*delegate) {}

  Status build();
  /// For each runtime, the first node it runs (after build()).
  std::vector<size_t> runtime_first_nodes() const {
    std::vector<size_t> out(d_.runtimes.size(), 0);
    std::vector<bool> set(out.size(), false);
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (plans_[i].kind == OpKind::Concat) continue;
      const int seg = node_segment_[i];
      if (seg < 0 || static_cast<size_t>(seg) >= segment_runtime_.size()) continue;
      const int r = segment_runtime_[static_cast<size_t>(seg)];
      if (r < 0 || static_cast<size_t>(r) >= out.size() || set[static_cast<size_t>(r)]) continue;
      out[static_cast<size_t>(r)] = i;
      set[static_cast<size_t>(r)] = true;
    }
    return out;
  }
  const fb::Node* node(size_t i) const { return nodes_[i]; }

 private:
  // Setup.
  Status load_values();
  Status plan_nodes();
  void compute_preferences();

  // Both passes.
  Status walk(bool emit);
  void requests_of(size_t node, std::vector<Request>* out) const;
  Layout output_layout(size_t node) const;
  bool is_free(const ValueState& v, Layout layout, int rank) const {
    return same_memory_order(v.dims, v.dims.rank, v.layout, rank, layout);
  }
  const Converted* find_converted(const ValueState& v, Layout layout, int rank) const;

  // Dry pass.
  int begin_segment();
  void close_segment();
  int natural_buffer(int value);
  int new_buffer(int value, const Dims& physical);
  void import(int segment, int buffer);
  Status ensure_converted(int value, Layout layout, int rank, size_t node);
  void plan_concat(size_t node, const std::vector<Request>& requests);
  Status finish_plan();
  Status place_buffers();

  // Emit pass.
  Status emit_begin(int segment);
  Status emit_close(int segment);
  Status emit_node(size_t node);
  Result<uint32_t> view(int value, Layout layout, int rank);
  Result<uint32_t> import_id(int buffer);
  Result<uint32_t> define_output(int value, Layout layout);
  Result<uint32_t> define_internal(const Dims& physical);
  Result<uint32_t> define_static(const float* data, const Dims& dims);
  Result<const float*> static_copy(int value, Layout layout, int rank);
  Result<float*> owned(size_t count);
  /// Constant `v` is copied into what the current segment's runtime keeps (packed weights,
  /// folded parameters): its program bytes are released once the runtime exists.
  void consumed(const ValueState& v) {
    if (v.constant >= 0) consumed_constants_.push_back(static_cast<uint32_t>(v.constant));
  }
  Status check(xnn_status status, size_t node, const char* what) const;

  const PayloadGraph& view_;
  const BackendInitContext& context_;
  const BuildOptions& options_;
  Delegate& d_;
  std::vector<uint32_t> consumed_constants_;  // see consumed()

  std::vector<ValueState> values_;
  std::vector<const fb::Node*> nodes_;
  std::vector<OpPlan> plans_;
  std::vector<BufferInfo> buffers_;
  std::vector<SegmentInfo> segments_;
  std::vector<bool> split_before_;
  std::vector<int> node_segment_;
  std::vector<int> node_pos_;         // each node's place among its segment's nodes (dry pass)
  std::vector<int> segment_runtime_;  // runtime index of each non-empty segment
  std::vector<int> graph_inputs_, graph_outputs_;
  int current_ = -1;
};

// ---- setup -------------------------------------------------------------------------------------

Status Builder::load_values() {
  const size_t n = view_.num_values();
  values_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const PayloadValue& v = view_.value(static_cast<int32_t>(i));
    ValueState& s = values_[i];
    s.dims = view_.dims(static_cast<int32_t>(i));
    s.constant = v.constant;
    s.graph_input = v.graph_input;
    s.graph_output = v.graph_output;
    if (v.is_constant() && v.is_tensor() && v.dtype == ScalarType::Float32) {
      const Span<const uint8_t> bytes = v.data;
      const size_t want = static_cast<size_t>(s.dims.numel()) * sizeof(float);
      if (bytes.size() != want) {
        return Status::error(Error::InvalidProgram,
                             "xnnpack: constant %d has %zu bytes, value %zu needs %zu", s.constant,
                             bytes.size(), i, want);
      }
      if (reinterpret_cast<uintptr_t>(bytes.data()) % alignof(float) != 0) {
        TESSERA_ASSIGN_OR_RETURN(float* copy, owned(static_cast<size_t>(s.dims.numel())));
        std::memcpy(copy, bytes.data(), want);
        s.data = copy;
      } else {
        s.data = reinterpret_cast<const float*>(bytes.data());
      }
    }
  }
  graph_inputs_.assign(view_.inputs().begin(), view_.inputs().end());
  graph_outputs_.assign(view_.outputs().begin(), view_.outputs().end());
  for (int io : graph_inputs_) {
    const PayloadValue& v = view_.value(io);
    if (!v.is_tensor() || view_.dims(io).rank > kMaxXnnDims || v.dtype != ScalarType::Float32) {
      return Status(Error::NotSupported,
                    "xnnpack: graph inputs must be float32 tensors of rank <= 6");
    }
  }
  for (int o : graph_outputs_) {
    const PayloadValue& v = view_.value(o);
    if (!v.is_tensor() || v.dtype != ScalarType::Float32) {
      return Status(Error::NotSupported, "xnnpack: graph outputs must be float32 tensors");
    }
  }
  return Status::ok();
}

Status Builder::plan_nodes() {
  const size_t n = view_.num_nodes();
  plans_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const fb::Node* node = &view_.node(i);
    nodes_.push_back(node);
    TESSERA_RETURN_IF_ERROR(plan_op(FbNodeReader(view_, *node), &plans_[i]));
    // Topological order: inputs defined before use.
    for (int32_t v : view_.node_inputs(i)) {
      if (v >= 0 && !view_.defined_before(v, i)) {
        return Status::error(Error::InvalidProgram,
                             "xnnpack: node %zu reads value %d before it is written", i, v);
      }
    }
  }
  for (int o : graph_outputs_) {
    if (!view_.defined_before(o, n)) {
      return Status::error(Error::InvalidProgram, "xnnpack: graph output value %d is never written",
                           o);
    }
  }
  return Status::ok();
}

int input_value(const fb::Node* node, int slot) {
  if (node->inputs() == nullptr || slot >= static_cast<int>(node->inputs()->size())) return -1;
  return node->inputs()->Get(static_cast<uint32_t>(slot));
}

int output_value(const fb::Node* node) {
  return node->outputs()->Get(0);
}

// Channels-last wins for a value if any consumer wants it (directly or through ops that follow
// their input's layout): 4-D activations mostly feed spatial ops.
void Builder::compute_preferences() {
  for (size_t i = nodes_.size(); i-- > 0;) {
    const OpPlan& p = plans_[i];
    const ValueState& out = values_[static_cast<size_t>(output_value(nodes_[i]))];
    for (int slot = 0; slot < static_cast<int>(nodes_[i]->inputs()->size()); ++slot) {
      const int v = input_value(nodes_[i], slot);
      if (v < 0) continue;
      ValueState& in = values_[static_cast<size_t>(v)];
      if (!in.is_activation() || in.dims.rank != 4) continue;
      if (p.rule == LayoutRule::Fixed) {
        if (slot == 0 && p.layout == Layout::ChannelsLast) in.pref = Layout::ChannelsLast;
      } else if (out.pref == Layout::ChannelsLast && out.dims.rank == 4) {
        in.pref = Layout::ChannelsLast;
      }
    }
  }
}

// ---- layout decisions (both passes) ------------------------------------------------------------

Layout Builder::output_layout(size_t node) const {
  const OpPlan& p = plans_[node];
  const ValueState& out = values_[static_cast<size_t>(output_value(nodes_[node]))];
  if (out.dims.rank != 4) return Layout::Identity;  // channels-last is for 4-D values
  if (p.rule == LayoutRule::Fixed) return p.layout;
  if (p.kind != OpKind::Binary && p.kind != OpKind::Concat) {
    return values_[static_cast<size_t>(input_value(nodes_[node], 0))].layout;
  }
  bool any_cl = false, any_id = false;
  for (int slot = 0; slot < static_cast<int>(nodes_[node]->inputs()->size()); ++slot) {
    const ValueState& in = values_[static_cast<size_t>(input_value(nodes_[node], slot))];
    if (!in.is_activation() || in.dims.rank != 4) continue;
    // An operand stored the same way in both layouts (e.g. [N, C, 1, 1]) does not vote.
    if (same_memory_order(in.dims, 4, Layout::ChannelsLast, 4, Layout::Identity)) continue;
    (in.layout == Layout::ChannelsLast ? any_cl : any_id) = true;
  }
  if (any_cl && !any_id) return Layout::ChannelsLast;
  if (any_id && !any_cl) return Layout::Identity;
  return out.pref;
}

void Builder::requests_of(size_t node, std::vector<Request>* out) const {
  out->clear();
  const OpPlan& p = plans_[node];
  const fb::Node* n = nodes_[node];
  if (p.kind == OpKind::Concat) {
    const Layout layout = output_layout(node);
    for (int slot = 0; slot < static_cast<int>(n->inputs()->size()); ++slot) {
      const int v = input_value(n, slot);
      out->push_back({slot, v, layout, values_[static_cast<size_t>(v)].dims.rank, false});
    }
    return;
  }
  if (p.kind == OpKind::Binary) {
    const Layout layout = output_layout(node);
    const int rank = values_[static_cast<size_t>(output_value(n))].dims.rank;
    for (int slot = 0; slot < 2; ++slot) {
      const int v = input_value(n, slot);
      out->push_back({slot, v, layout, rank, !values_[static_cast<size_t>(v)].is_activation()});
    }
    return;
  }
  // Every other op has one data input, slot 0 (weights are read by the op itself).
  const int v = input_value(n, 0);
  const ValueState& in = values_[static_cast<size_t>(v)];
  const Layout layout = p.rule == LayoutRule::Fixed ? p.layout : in.layout;
  out->push_back({0, v, layout, in.dims.rank, !in.is_activation()});
}

const Converted* Builder::find_converted(const ValueState& v, Layout layout, int rank) const {
  for (const Converted& c : v.converted) {
    if (c.layout == layout && c.rank == rank) return &c;
  }
  return nullptr;
}

// ---- dry pass: segments, buffers, steps --------------------------------------------------------

int Builder::begin_segment() {
  segments_.emplace_back();
  current_ = static_cast<int>(segments_.size()) - 1;
  return current_;
}

void Builder::close_segment() {
  if (segments_[static_cast<size_t>(current_)].num_nodes == 0) return;
  Step step;
  step.kind = Step::Kind::Invoke;
  step.runtime = current_;
  d_.steps.push_back(step);
}

int Builder::new_buffer(int value, const Dims& physical) {
  buffers_.push_back({value, physical, false});
  return static_cast<int>(buffers_.size()) - 1;
}

int Builder::natural_buffer(int value) {
  ValueState& v = values_[static_cast<size_t>(value)];
  if (v.buffer < 0) {
    v.buffer = new_buffer(value, v.natural());
    if (v.segment >= 0) v.exported = true;
  }
  return v.buffer;
}

void Builder::import(int segment, int buffer) {
  std::vector<int>& imports = segments_[static_cast<size_t>(segment)].imports;
  if (std::find(imports.begin(), imports.end(), buffer) == imports.end()) {
    imports.push_back(buffer);
  }
  const BufferInfo& b = buffers_[static_cast<size_t>(buffer)];
  const ValueState& v = values_[static_cast<size_t>(b.value)];
  if (v.segment >= 0 && v.segment != segment)
    buffers_[static_cast<size_t>(buffer)].read_later = true;
}

Conversion make_conversion(const Dims& logical, Layout from, Layout to) {
  Conversion c;
  c.numel = static_cast<size_t>(logical.numel());
  if (from == to) return c;
  const Dims e = expand_rank(logical, 4);
  c.n = e.d[0];
  c.c = e.d[1];
  c.s = e.d[2] * e.d[3];
  c.kind =
      to == Layout::ChannelsLast ? Conversion::Kind::ToChannelsLast : Conversion::Kind::ToIdentity;
  return c;
}

Status Builder::ensure_converted(int value, Layout layout, int rank, size_t node) {
  ValueState& v = values_[static_cast<size_t>(value)];
  if (find_converted(v, layout, rank) != nullptr) return Status::ok();
  if (v.segment >= 0 && v.segment == current_) {
    // Produced in the open runtime: end it here so the value can be converted outside.
    close_segment();
    split_before_[node] = true;
    begin_segment();
  }
  const int src = natural_buffer(value);
  buffers_[static_cast<size_t>(src)].read_later = true;
  const int dst = new_buffer(value, physical_dims(v.dims, rank, layout));
  v.converted.push_back({layout, rank, dst});
  Step step;
  step.kind = Step::Kind::Convert;
  step.src = src;
  step.dst = dst;
  step.conversion = make_conversion(v.dims, v.layout, layout);
  d_.steps.push_back(step);
  return Status::ok();
}

// A concatenation runs between runtimes as a copy step: its inputs must be in buffers, its
// output is a buffer the next runtime imports.
void Builder::plan_concat(size_t node, const std::vector<Request>& requests) {
  bool produced_here = false;
  for (const Request& r : requests) {
    const ValueState& v = values_[static_cast<size_t>(r.value)];
    produced_here |= is_free(v, r.layout, r.rank) && v.segment >= 0 && v.segment == current_;
  }
  if (produced_here) {
    close_segment();
    split_before_[node] = true;
    begin_segment();
  }
  const int out_value = output_value(nodes_[node]);
  ValueState& out = values_[static_cast<size_t>(out_value)];
  out.layout = output_layout(node);
  const Dims physical = out.natural();
  static constexpr int kNhwc[4] = {0, 2, 3, 1};
  int axis = plans_[node].axis;
  if (out.layout == Layout::ChannelsLast)
    axis = static_cast<int>(std::find(kNhwc, kNhwc + 4, axis) - kNhwc);
  Step step;
  step.kind = Step::Kind::Concat;
  step.first_part = d_.concat_parts.size();
  step.outer = 1;
  for (int k = 0; k < axis; ++k) step.outer *= static_cast<size_t>(physical.d[k]);
  for (const Request& r : requests) {
    ValueState& v = values_[static_cast<size_t>(r.value)];
    const int src = is_free(v, r.layout, r.rank) ? natural_buffer(r.value)
                                                 : find_converted(v, r.layout, r.rank)->buffer;
    buffers_[static_cast<size_t>(src)].read_later = true;
    const Dims in = physical_dims(v.dims, r.rank, r.layout);
    size_t inner = 1;
    for (int k = axis; k < in.rank; ++k) inner *= static_cast<size_t>(in.d[k]);
    d_.concat_parts.push_back({src, inner});
  }
  step.num_parts = requests.size();
  step.dst = new_buffer(out_value, physical);
  out.buffer = step.dst;
  out.segment = -1;  // lives in a buffer, like a graph input
  d_.steps.push_back(step);
}

Status Builder::walk(bool emit) {
  std::vector<Request> requests;
  if (emit) {
    for (ValueState& v : values_) {
      v.id = kInvalidId;
      v.views.clear();
    }
    current_ = 0;
    if (!segments_.empty()) TESSERA_RETURN_IF_ERROR(emit_begin(0));
  } else {
    split_before_.assign(nodes_.size(), false);
    node_segment_.assign(nodes_.size(), 0);
    node_pos_.assign(nodes_.size(), 0);
    begin_segment();
    for (int i : graph_inputs_) {
      ValueState& v = values_[static_cast<size_t>(i)];
      v.layout = v.dims.rank == 4 ? v.pref : Layout::Identity;
    }
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (emit) {
      if (split_before_[i]) {
        TESSERA_RETURN_IF_ERROR(emit_close(current_));
        ++current_;
        TESSERA_RETURN_IF_ERROR(emit_begin(current_));
      }
      if (plans_[i].kind != OpKind::Concat) TESSERA_RETURN_IF_ERROR(emit_node(i));
      continue;
    }
    if (options_.one_runtime_per_node && plans_[i].kind != OpKind::Concat &&
        segments_[static_cast<size_t>(current_)].num_nodes > 0) {
      close_segment();
      split_before_[i] = true;
      begin_segment();
    }
    requests_of(i, &requests);
    for (const Request& r : requests) {
      const ValueState& v = values_[static_cast<size_t>(r.value)];
      if (!r.constant && !is_free(v, r.layout, r.rank)) {
        TESSERA_RETURN_IF_ERROR(ensure_converted(r.value, r.layout, r.rank, i));
      }
    }
    if (plans_[i].kind == OpKind::Concat) {
      plan_concat(i, requests);
      node_segment_[i] = current_;
      continue;
    }
    for (const Request& r : requests) {
      const ValueState& v = values_[static_cast<size_t>(r.value)];
      if (r.constant) continue;  // defined as static data in each runtime
      if (!is_free(v, r.layout, r.rank)) {
        import(current_, find_converted(v, r.layout, r.rank)->buffer);
      } else if (v.segment != current_) {
        import(current_, natural_buffer(r.value));
      }
    }
    node_segment_[i] = current_;
    node_pos_[i] = static_cast<int>(segments_[static_cast<size_t>(current_)].num_nodes++);
    ValueState& out = values_[static_cast<size_t>(output_value(nodes_[i]))];
    out.layout = output_layout(i);
    out.segment = current_;
    // What the node writes lives in the delegate's arena (place_buffers), where buffers share
    // memory node by node, not in the runtime's workspace: this XNNPACK (Debian's, 2022) gives
    // every internal value memory of its own there. ResNeXt-50's single runtime held a 50 MB
    // workspace, all first touched by the first run. A constant pad stays internal, so that
    // XNNPACK can still fold it into the convolution or pooling after it.
    if (plans_[i].kind != OpKind::ConstantPad) natural_buffer(output_value(nodes_[i]));
  }
  if (emit) {
    if (!segments_.empty()) TESSERA_RETURN_IF_ERROR(emit_close(current_));
    // Invoke steps name segments; runtimes exist for the non-empty ones only.
    for (Step& step : d_.steps) {
      if (step.kind == Step::Kind::Invoke)
        step.runtime = segment_runtime_[static_cast<size_t>(step.runtime)];
    }
    return Status::ok();
  }
  close_segment();
  return finish_plan();
}

// Outputs, input stages, external counts and buffer storage, once the walk has placed every
// node.
Status Builder::finish_plan() {
  const size_t num_in = graph_inputs_.size();
  std::vector<bool> seen(values_.size(), false);
  std::vector<std::pair<int, int>> bound;  // buffer, argument
  for (size_t j = 0; j < graph_outputs_.size(); ++j) {
    const int value = graph_outputs_[j];
    ValueState& v = values_[static_cast<size_t>(value)];
    OutputStage stage;
    stage.arg = static_cast<int>(num_in + j);
    stage.conversion = make_conversion(v.dims, v.layout, Layout::Identity);
    if (v.constant >= 0) {
      stage.constant = v.data;
      stage.conversion = make_conversion(v.dims, Layout::Identity, Layout::Identity);
      d_.outputs.push_back(stage);
      continue;
    }
    const int b = natural_buffer(value);
    // Written in place into the argument when nothing else reads it and no layout change is
    // needed; a repeated output copies from the first one.
    const bool direct = v.segment >= 0 && !seen[static_cast<size_t>(value)] &&
                        !buffers_[static_cast<size_t>(b)].read_later &&
                        is_free(v, Layout::Identity, v.dims.rank);
    seen[static_cast<size_t>(value)] = true;
    if (direct) {
      bound.push_back({b, stage.arg});
      continue;
    }
    stage.buffer = b;
    d_.outputs.push_back(stage);
  }
  // Buffers: storage, or bound to an output argument.
  d_.buffers.resize(buffers_.size());
  for (size_t b = 0; b < buffers_.size(); ++b) {
    d_.buffers[b].numel = static_cast<size_t>(buffers_[b].physical.numel());
  }
  for (const auto& [b, arg] : bound) d_.buffers[static_cast<size_t>(b)].arg = arg;
  for (int i : graph_inputs_) {
    const ValueState& v = values_[static_cast<size_t>(i)];
    if (v.buffer < 0) continue;  // never read
    d_.inputs.push_back(
        {v.graph_input, v.buffer, make_conversion(v.dims, Layout::Identity, v.layout)});
  }
  TESSERA_RETURN_IF_ERROR(place_buffers());
  for (size_t k = 0; k < segments_.size(); ++k)
    segments_[k].num_externals = segments_[k].imports.size();
  for (const ValueState& v : values_) {
    if (v.exported) ++segments_[static_cast<size_t>(v.segment)].num_externals;
  }
  return Status::ok();
}

// The buffers share one arena wherever their lifetimes do not overlap. Time runs over the steps
// in order, one at a time, and inside a runtime's step over its nodes, one slot each. A buffer
// lives from the first slot that writes it (an input stage: before every step) to the last that
// reads it (an output stage: after every step). A runtime's imports live through its whole step;
// a value its nodes write, from the node writing it to the last node of that runtime reading it
// (later readers are other steps). DenseNet-121 has 58 concatenations between runtimes, and with
// a buffer each its XNNPACK delegate held 270 MB.
Status Builder::place_buffers() {
  const size_t n = d_.buffers.size();
  const size_t num_steps = d_.steps.size();
  std::vector<int> invoke_step(segments_.size(), -1);  // Step::runtime is still the segment here
  std::vector<int> base = {0}, slots;  // each step's first slot and its number of slots
  for (size_t k = 0; k < num_steps; ++k) {
    const Step& st = d_.steps[k];
    int count = 1;
    if (st.kind == Step::Kind::Invoke) {
      invoke_step[static_cast<size_t>(st.runtime)] = static_cast<int>(k);
      count = std::max(1, static_cast<int>(segments_[static_cast<size_t>(st.runtime)].num_nodes));
    }
    slots.push_back(count);
    base.push_back(base.back() + count);
  }
  const int end = base.back();
  std::vector<int> first(n, end + 1), last(n, -2);
  auto live = [&](int b, int at) {
    if (b < 0) return;
    first[static_cast<size_t>(b)] = std::min(first[static_cast<size_t>(b)], at);
    last[static_cast<size_t>(b)] = std::max(last[static_cast<size_t>(b)], at);
  };
  for (const InputStage& st : d_.inputs) live(st.buffer, -1);
  for (const OutputStage& st : d_.outputs) live(st.buffer, end);
  for (size_t k = 0; k < num_steps; ++k) {
    const Step& st = d_.steps[k];
    const int at = base[k];
    switch (st.kind) {
      case Step::Kind::Invoke:
        for (int b : segments_[static_cast<size_t>(st.runtime)].imports) {
          live(b, at);
          live(b, at + slots[k] - 1);
        }
        break;
      case Step::Kind::Convert:
        live(st.src, at);
        live(st.dst, at);
        break;
      case Step::Kind::Concat:
        for (size_t q = 0; q < st.num_parts; ++q) live(d_.concat_parts[st.first_part + q].src, at);
        live(st.dst, at);
        break;
    }
  }
  // Inside each runtime: the node writing a value, and its readers there.
  std::vector<Request> requests;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (plans_[i].kind == OpKind::Concat) continue;
    const int seg = node_segment_[i];
    const int k = invoke_step[static_cast<size_t>(seg)];
    if (k < 0) continue;
    const int at = base[static_cast<size_t>(k)] + node_pos_[i];
    const ValueState& out = values_[static_cast<size_t>(output_value(nodes_[i]))];
    if (out.exported && out.segment == seg) live(out.buffer, at);
    requests_of(i, &requests);
    for (const Request& r : requests) {
      const ValueState& v = values_[static_cast<size_t>(r.value)];
      if (!r.constant && v.exported && v.segment == seg && is_free(v, r.layout, r.rank))
        live(v.buffer, at);
    }
  }
  // Placed by the compiler's planner (largest first, lowest offset that fits), as oneDNN's
  // activation arena is.
  std::vector<ir::PlanItem> items;
  std::vector<size_t> which;
  for (size_t b = 0; b < n; ++b) {
    if (d_.buffers[b].arg >= 0) continue;
    if (first[b] > last[b]) {  // no step found: live throughout, to be safe
      first[b] = -1;
      last[b] = end;
    }
    const size_t bytes = d_.buffers[b].numel * sizeof(float) + XNN_EXTRA_BYTES;
    items.push_back({bytes, first[b], last[b]});
    which.push_back(b);
  }
  const ir::MemoryPlan plan = ir::plan_memory(items, 64);
  d_.buffer_bytes = plan.arena_size;
  d_.unshared_buffer_bytes = plan.total_size;
  if (plan.arena_size == 0) return Status::ok();
  TESSERA_ASSIGN_OR_RETURN(float* arena, owned(plan.arena_size / sizeof(float)));
  for (size_t k = 0; k < which.size(); ++k) {
    d_.buffers[which[k]].data = arena + plan.offsets[k] / static_cast<int64_t>(sizeof(float));
  }
  return Status::ok();
}

// ---- emit pass ---------------------------------------------------------------------------------

Status Builder::check(xnn_status status, size_t node, const char* what) const {
  if (status == xnn_status_success) return Status::ok();
  const fb::Node* n = node < nodes_.size() ? nodes_[node] : nullptr;
  return Status::error(Error::DelegateInvalidCompatibility, "xnnpack: %s node '%s': %s failed (%s)",
                       n ? ir::op_name(n->op()) : "-", n && n->name() ? n->name()->c_str() : "",
                       what, status_name(status));
}

Result<float*> Builder::owned(size_t count) {
  OwnedFloats p = allocate_floats(count);
  if (!p) {
    return Status::error(Error::MemoryAllocationFailed, "xnnpack: cannot allocate %zu bytes",
                         count * sizeof(float));
  }
  float* raw = p.get();
  d_.storage.push_back(std::move(p));
  return raw;
}

Status Builder::emit_begin(int segment) {
  SegmentInfo& s = segments_[static_cast<size_t>(segment)];
  if (s.num_nodes == 0) return Status::ok();  // only copy steps there
  return check(xnn_create_subgraph(static_cast<uint32_t>(s.num_externals), 0, &s.subgraph),
               nodes_.size(), "xnn_create_subgraph");
}

Status Builder::emit_close(int segment) {
  SegmentInfo& s = segments_[static_cast<size_t>(segment)];
  if (s.num_nodes == 0) return Status::ok();
  segment_runtime_.resize(segments_.size(), -1);
  segment_runtime_[static_cast<size_t>(segment)] = static_cast<int>(d_.runtimes.size());
  Runtime r;
  r.num_nodes = s.num_nodes;
  const xnn_status st =
      xnn_create_runtime_v2(s.subgraph, options_.pool.get(), options_.runtime_flags, &r.runtime);
  xnn_delete_subgraph(s.subgraph);
  s.subgraph = nullptr;
  // The runtime's operators packed their filters and biases when it was created. The static
  // data stays valid for the runtime's life, as XNNPACK requires of it (the permuted copies
  // above are kept), but the program's pages of the constants it was made from can go: they
  // are read back from the file if anything reads them.
  for (const uint32_t c : consumed_constants_) context_.release_constant(c);
  consumed_constants_.clear();
  if (st != xnn_status_success) {
    return Status::error(Error::DelegateInvalidCompatibility,
                         "xnnpack: xnn_create_runtime_v2 failed for runtime %d (%s)", segment,
                         status_name(st));
  }
  // Arguments are not known yet: a scratch area stands in for outputs written in place, so
  // the first setup (which sizes XNNPACK's internal buffers) happens here, not in execute.
  size_t scratch_floats = 0;
  for (const auto& [id, buffer] : s.externals) {
    const Buffer& b = d_.buffers[static_cast<size_t>(buffer)];
    if (b.arg >= 0) scratch_floats = std::max(scratch_floats, b.numel);
  }
  OwnedFloats scratch = allocate_floats(scratch_floats);
  for (const auto& [id, buffer] : s.externals) {
    const Buffer& b = d_.buffers[static_cast<size_t>(buffer)];
    r.externals.push_back({id, b.arg >= 0 ? scratch.get() : b.data});
    if (b.arg >= 0) r.bound.push_back({r.externals.size() - 1, buffer});
  }
  const xnn_status setup = xnn_setup_runtime(r.runtime, r.externals.size(), r.externals.data());
  for (const ExternalBinding& b : r.bound) r.externals[b.index].data = nullptr;
  d_.runtimes.push_back(std::move(r));
  if (setup != xnn_status_success) {
    return Status::error(Error::DelegateInvalidCompatibility,
                         "xnnpack: xnn_setup_runtime failed for runtime %d (%s)", segment,
                         status_name(setup));
  }
  return Status::ok();
}

void to_size_dims(const Dims& d, size_t* out) {
  for (int i = 0; i < d.rank; ++i) out[i] = static_cast<size_t>(d.d[i]);
}

Result<uint32_t> Builder::define_internal(const Dims& physical) {
  size_t dims[kMaxDims];
  to_size_dims(physical, dims);
  uint32_t id = kInvalidId;
  TESSERA_RETURN_IF_ERROR(
      check(xnn_define_tensor_value(segments_[static_cast<size_t>(current_)].subgraph,
                                    xnn_datatype_fp32, static_cast<size_t>(physical.rank), dims,
                                    nullptr, kInvalidId, 0, &id),
            nodes_.size(), "xnn_define_tensor_value"));
  return id;
}

Result<uint32_t> Builder::define_static(const float* data, const Dims& dims_in) {
  size_t dims[kMaxDims];
  to_size_dims(dims_in, dims);
  uint32_t id = kInvalidId;
  TESSERA_RETURN_IF_ERROR(check(
      xnn_define_tensor_value(segments_[static_cast<size_t>(current_)].subgraph, xnn_datatype_fp32,
                              static_cast<size_t>(dims_in.rank), dims, data, kInvalidId, 0, &id),
      nodes_.size(), "xnn_define_tensor_value (static)"));
  return id;
}

Result<uint32_t> Builder::import_id(int buffer) {
  SegmentInfo& s = segments_[static_cast<size_t>(current_)];
  for (const auto& [b, id] : s.import_ids) {
    if (b == buffer) return id;
  }
  const uint32_t id = s.next_external++;
  size_t dims[kMaxDims];
  const Dims& physical = buffers_[static_cast<size_t>(buffer)].physical;
  to_size_dims(physical, dims);
  uint32_t out = kInvalidId;
  TESSERA_RETURN_IF_ERROR(check(
      xnn_define_tensor_value(s.subgraph, xnn_datatype_fp32, static_cast<size_t>(physical.rank),
                              dims, nullptr, id, XNN_VALUE_FLAG_EXTERNAL_INPUT, &out),
      nodes_.size(), "xnn_define_tensor_value (input)"));
  s.import_ids.push_back({buffer, id});
  s.externals.push_back({id, buffer});
  return id;
}

Result<uint32_t> Builder::define_output(int value, Layout layout) {
  ValueState& v = values_[static_cast<size_t>(value)];
  const Dims physical = physical_dims(v.dims, v.dims.rank, layout);
  if (!v.exported) {
    TESSERA_ASSIGN_OR_RETURN(v.id, define_internal(physical));
    return v.id;
  }
  SegmentInfo& s = segments_[static_cast<size_t>(current_)];
  const uint32_t id = s.next_external++;
  size_t dims[kMaxDims];
  to_size_dims(physical, dims);
  TESSERA_RETURN_IF_ERROR(check(
      xnn_define_tensor_value(s.subgraph, xnn_datatype_fp32, static_cast<size_t>(physical.rank),
                              dims, nullptr, id, XNN_VALUE_FLAG_EXTERNAL_OUTPUT, &v.id),
      nodes_.size(), "xnn_define_tensor_value (output)"));
  s.externals.push_back({id, v.buffer});
  return v.id;
}

Result<const float*> Builder::static_copy(int value, Layout layout, int rank) {
  ValueState& v = values_[static_cast<size_t>(value)];
  for (const StaticCopy& c : v.copies) {
    if (c.layout == layout && c.rank == rank) return c.data;
  }
  const Dims e = expand_rank(v.dims, rank);
  TESSERA_ASSIGN_OR_RETURN(float* data, owned(static_cast<size_t>(e.numel())));
  if (layout == Layout::ChannelsLast) {
    static constexpr int kToNhwc[4] = {0, 2, 3, 1};
    permute(v.data, e, kToNhwc, data);
  } else if (e.numel() > 0) {
    std::memcpy(data, v.data, static_cast<size_t>(e.numel()) * sizeof(float));
  }
  v.copies.push_back({layout, rank, data});
  consumed(v);
  return static_cast<const float*>(data);
}

Result<uint32_t> Builder::view(int value, Layout layout, int rank) {
  ValueState& v = values_[static_cast<size_t>(value)];
  for (const View& w : v.views) {
    if (w.segment == current_ && w.layout == layout && w.rank == rank) return w.id;
  }
  const Dims want = physical_dims(v.dims, rank, layout);
  uint32_t id;
  Dims have;
  if (!v.is_activation()) {
    TESSERA_ASSIGN_OR_RETURN(const float* data, static_copy(value, layout, rank));
    TESSERA_ASSIGN_OR_RETURN(id, define_static(data, want));
    have = want;
  } else if (!is_free(v, layout, rank)) {
    TESSERA_ASSIGN_OR_RETURN(id, import_id(find_converted(v, layout, rank)->buffer));
    have = want;
  } else {
    if (v.segment == current_) {
      id = v.id;
    } else {
      TESSERA_ASSIGN_OR_RETURN(id, import_id(v.buffer));
    }
    have = v.natural();
  }
  if (!(have == want)) {
    // Same memory order, other dims: XNNPACK needs a reshape node (a copy).
    TESSERA_ASSIGN_OR_RETURN(uint32_t reshaped, define_internal(want));
    size_t dims[kMaxDims];
    to_size_dims(want, dims);
    TESSERA_RETURN_IF_ERROR(
        check(xnn_define_static_reshape(segments_[static_cast<size_t>(current_)].subgraph,
                                        static_cast<size_t>(want.rank), dims, id, reshaped, 0),
              nodes_.size(), "xnn_define_static_reshape (layout view)"));
    id = reshaped;
  }
  v.views.push_back({current_, layout, rank, id});
  return id;
}

Status Builder::emit_node(size_t i) {
  const fb::Node* n = nodes_[i];
  const OpPlan& p = plans_[i];
  xnn_subgraph_t sg = segments_[static_cast<size_t>(current_)].subgraph;
  const int out_value = output_value(n);
  const ValueState& out = values_[static_cast<size_t>(out_value)];
  const Layout out_layout = output_layout(i);
  std::vector<Request> requests;
  requests_of(i, &requests);
  uint32_t in_ids[2] = {kInvalidId, kInvalidId};
  for (const Request& r : requests) {
    // Constants become padded static copies in the wanted layout and rank.
    TESSERA_ASSIGN_OR_RETURN(in_ids[r.slot], view(r.value, r.layout, r.rank));
  }
  const uint32_t x = in_ids[0];
  auto weight = [&](int slot) -> const ValueState& {
    return values_[static_cast<size_t>(input_value(n, slot))];
  };
  // HardSigmoid and count_include_pad pooling define an intermediate value first.
  TESSERA_ASSIGN_OR_RETURN(uint32_t y, define_output(out_value, out_layout));
  const float lo = p.output_min, hi = p.output_max;
  const Window& w = p.window;
  switch (p.kind) {
    case OpKind::Convolution: {
      const ValueState& wt = weight(1);
      const int64_t co = wt.dims.d[0], ci = wt.dims.d[1], kh = wt.dims.d[2], kw = wt.dims.d[3];
      // OIHW to XNNPACK's OHWI: the same order for a 1x1 filter, which is then read in place.
      const float* packed = wt.data;
      if (kh != 1 || kw != 1) {
        TESSERA_ASSIGN_OR_RETURN(float* to, owned(static_cast<size_t>(wt.dims.numel())));
        static constexpr int kToOhwi[4] = {0, 2, 3, 1};
        permute(wt.data, wt.dims, kToOhwi, to);
        packed = to;
      }
      consumed(wt);
      Dims fd;
      fd.rank = 4;
      fd.d[0] = co;
      fd.d[1] = kh;
      fd.d[2] = kw;
      fd.d[3] = ci;
      TESSERA_ASSIGN_OR_RETURN(uint32_t filter, define_static(packed, fd));
      const float* bias_data = p.has_bias ? weight(2).data : nullptr;
      if (p.has_bias) consumed(weight(2));
      if (bias_data == nullptr) {
        TESSERA_ASSIGN_OR_RETURN(float* zeros, owned(static_cast<size_t>(co)));  // zeroed
        bias_data = zeros;
      }
      Dims bd;
      bd.rank = 1;
      bd.d[0] = co;
      TESSERA_ASSIGN_OR_RETURN(uint32_t bias, define_static(bias_data, bd));
      return check(
          xnn_define_convolution_2d(sg, w.pad_top, w.pad_right, w.pad_bottom, w.pad_left,
                                    w.kernel[0], w.kernel[1], w.stride[0], w.stride[1],
                                    w.dilation[0], w.dilation[1], p.groups, p.group_input_channels,
                                    p.group_output_channels, lo, hi, x, filter, bias, y, 0),
          i, "xnn_define_convolution_2d");
    }
    case OpKind::DepthwiseConvolution: {
      const ValueState& wt = weight(1);
      const int64_t co = wt.dims.d[0], kh = wt.dims.d[2], kw = wt.dims.d[3];
      TESSERA_ASSIGN_OR_RETURN(float* packed, owned(static_cast<size_t>(wt.dims.numel())));
      consumed(wt);
      Dims src;  // [co, kh, kw] -> [kh, kw, co]
      src.rank = 3;
      src.d[0] = co;
      src.d[1] = kh;
      src.d[2] = kw;
      static constexpr int kToHwo[3] = {1, 2, 0};
      permute(wt.data, src, kToHwo, packed);
      Dims fd;
      fd.rank = 4;
      fd.d[0] = 1;
      fd.d[1] = kh;
      fd.d[2] = kw;
      fd.d[3] = co;
      TESSERA_ASSIGN_OR_RETURN(uint32_t filter, define_static(packed, fd));
      uint32_t bias = kInvalidId;
      if (p.has_bias) {
        Dims bd;
        bd.rank = 1;
        bd.d[0] = co;
        TESSERA_ASSIGN_OR_RETURN(bias, define_static(weight(2).data, bd));
        consumed(weight(2));
      }
      return check(
          xnn_define_depthwise_convolution_2d(
              sg, w.pad_top, w.pad_right, w.pad_bottom, w.pad_left, w.kernel[0], w.kernel[1],
              w.stride[0], w.stride[1], w.dilation[0], w.dilation[1], p.depth_multiplier,
              static_cast<size_t>(p.groups), lo, hi, x, filter, bias, y, 0),
          i, "xnn_define_depthwise_convolution_2d");
    }
    case OpKind::Deconvolution: {
      const ValueState& wt = weight(1);
      const int64_t g = p.groups, ig = static_cast<int64_t>(p.group_input_channels),
                    og = static_cast<int64_t>(p.group_output_channels), kh = wt.dims.d[2],
                    kw = wt.dims.d[3];
      TESSERA_ASSIGN_OR_RETURN(float* packed, owned(static_cast<size_t>(wt.dims.numel())));
      consumed(wt);
      Dims src;  // [g, ig, og, kh, kw] -> [g, og, kh, kw, ig]
      src.rank = 5;
      src.d[0] = g;
      src.d[1] = ig;
      src.d[2] = og;
      src.d[3] = kh;
      src.d[4] = kw;
      static constexpr int kToGohwi[5] = {0, 2, 3, 4, 1};
      permute(wt.data, src, kToGohwi, packed);
      Dims fd;
      fd.rank = 4;
      fd.d[0] = g * og;
      fd.d[1] = kh;
      fd.d[2] = kw;
      fd.d[3] = ig;
      TESSERA_ASSIGN_OR_RETURN(uint32_t filter, define_static(packed, fd));
      uint32_t bias = kInvalidId;
      if (p.has_bias) {
        Dims bd;
        bd.rank = 1;
        bd.d[0] = g * og;
        TESSERA_ASSIGN_OR_RETURN(bias, define_static(weight(2).data, bd));
        consumed(weight(2));
      }
      return check(xnn_define_deconvolution_2d(
                       sg, w.pad_top, w.pad_right, w.pad_bottom, w.pad_left, p.adjustment[0],
                       p.adjustment[1], w.kernel[0], w.kernel[1], w.stride[0], w.stride[1],
                       w.dilation[0], w.dilation[1], p.groups, p.group_input_channels,
                       p.group_output_channels, lo, hi, x, filter, bias, y, 0),
                   i, "xnn_define_deconvolution_2d");
    }
    case OpKind::FullyConnected: {
      const ValueState& wt = weight(1);
      const float* wdata = wt.data;
      consumed(wt);
      if (p.alpha != 1.0f) {
        TESSERA_ASSIGN_OR_RETURN(float* scaled, owned(static_cast<size_t>(wt.dims.numel())));
        for (int64_t k = 0; k < wt.dims.numel(); ++k) scaled[k] = wt.data[k] * p.alpha;
        wdata = scaled;
      }
      TESSERA_ASSIGN_OR_RETURN(uint32_t filter, define_static(wdata, wt.dims));
      const int64_t nout = p.transpose_weights ? wt.dims.d[1] : wt.dims.d[0];
      uint32_t bias = kInvalidId;
      if (p.has_bias) {
        const ValueState& c = weight(p.bias_input);
        const float* bdata = c.data;
        consumed(c);
        if (p.beta != 1.0f || c.dims.numel() != nout) {
          TESSERA_ASSIGN_OR_RETURN(float* b, owned(static_cast<size_t>(nout)));
          for (int64_t k = 0; k < nout; ++k) b[k] = c.data[c.dims.numel() == nout ? k : 0] * p.beta;
          bdata = b;
        }
        Dims bd;
        bd.rank = 1;
        bd.d[0] = nout;
        TESSERA_ASSIGN_OR_RETURN(bias, define_static(bdata, bd));
      }
      return check(xnn_define_fully_connected(sg, lo, hi, x, filter, bias, y,
                                              p.transpose_weights ? XNN_FLAG_TRANSPOSE_WEIGHTS : 0),
                   i, "xnn_define_fully_connected");
    }
    case OpKind::Binary: {
      const uint32_t a = in_ids[0], b = in_ids[1];
      switch (p.binary) {
        case BinaryOp::Add:
          return check(xnn_define_add2(sg, lo, hi, a, b, y, 0), i, "xnn_define_add2");
        case BinaryOp::Subtract:
          return check(xnn_define_subtract(sg, lo, hi, a, b, y, 0), i, "xnn_define_subtract");
        case BinaryOp::Multiply:
          return check(xnn_define_multiply2(sg, lo, hi, a, b, y, 0), i, "xnn_define_multiply2");
        case BinaryOp::Divide:
          return check(xnn_define_divide(sg, lo, hi, a, b, y, 0), i, "xnn_define_divide");
        case BinaryOp::Maximum:
          return check(xnn_define_maximum2(sg, a, b, y, 0), i, "xnn_define_maximum2");
        case BinaryOp::Minimum:
          return check(xnn_define_minimum2(sg, a, b, y, 0), i, "xnn_define_minimum2");
      }
      break;
    }
    case OpKind::Unary:
      return check(p.unary.define(sg, p, x, y), i, p.unary.name);
    case OpKind::HardSigmoid: {
      Dims one;
      one.rank = out.dims.rank;
      for (int k = 0; k < one.rank; ++k) one.d[k] = 1;
      // Each scalar gets its own padded allocation (XNNPACK may read past it).
      TESSERA_ASSIGN_OR_RETURN(float* alpha, owned(1));
      TESSERA_ASSIGN_OR_RETURN(float* beta, owned(1));
      alpha[0] = p.alpha;
      beta[0] = p.beta;
      TESSERA_ASSIGN_OR_RETURN(uint32_t alpha_id, define_static(alpha, one));
      TESSERA_ASSIGN_OR_RETURN(uint32_t beta_id, define_static(beta, one));
      TESSERA_ASSIGN_OR_RETURN(uint32_t t,
                               define_internal(physical_dims(out.dims, out.dims.rank, out_layout)));
      TESSERA_RETURN_IF_ERROR(
          check(xnn_define_multiply2(sg, -INFINITY, INFINITY, x, alpha_id, t, 0), i,
                "xnn_define_multiply2"));
      return check(xnn_define_add2(sg, lo, hi, t, beta_id, y, 0), i, "xnn_define_add2");
    }
    case OpKind::BatchNorm: {
      const ValueState &gamma = weight(1), &beta = weight(2), &mean = weight(3), &var = weight(4);
      const int64_t channels = gamma.dims.d[0];
      TESSERA_ASSIGN_OR_RETURN(float* scale, owned(static_cast<size_t>(channels)));
      TESSERA_ASSIGN_OR_RETURN(float* shift, owned(static_cast<size_t>(channels)));
      for (int64_t c = 0; c < channels; ++c) {
        scale[c] = gamma.data[c] / std::sqrt(var.data[c] + p.epsilon);
        shift[c] = beta.data[c] - mean.data[c] * scale[c];
      }
      for (const ValueState* v : {&gamma, &beta, &mean, &var}) consumed(*v);
      // [1, C, 1, ...] in the output's layout: the channel values stay contiguous.
      Dims per_channel;
      per_channel.rank = out.dims.rank;
      for (int k = 0; k < per_channel.rank; ++k) per_channel.d[k] = k == 1 ? channels : 1;
      const Dims physical = physical_dims(per_channel, per_channel.rank, out_layout);
      TESSERA_ASSIGN_OR_RETURN(uint32_t scale_id, define_static(scale, physical));
      TESSERA_ASSIGN_OR_RETURN(uint32_t shift_id, define_static(shift, physical));
      TESSERA_ASSIGN_OR_RETURN(uint32_t t,
                               define_internal(physical_dims(out.dims, out.dims.rank, out_layout)));
      TESSERA_RETURN_IF_ERROR(
          check(xnn_define_multiply2(sg, -INFINITY, INFINITY, x, scale_id, t, 0), i,
                "xnn_define_multiply2"));
      return check(xnn_define_add2(sg, lo, hi, t, shift_id, y, 0), i, "xnn_define_add2");
    }
    case OpKind::Softmax:
      return check(xnn_define_softmax(sg, x, y, 0), i, "xnn_define_softmax");
    case OpKind::MaxPooling:
      return check(xnn_define_max_pooling_2d(sg, w.pad_top, w.pad_right, w.pad_bottom, w.pad_left,
                                             w.kernel[0], w.kernel[1], w.stride[0], w.stride[1],
                                             w.dilation[0], w.dilation[1], lo, hi, x, y, 0),
                   i, "xnn_define_max_pooling_2d");
    case OpKind::AveragePooling: {
      uint32_t src = x;
      if (p.explicit_pad) {
        const ValueState& in = values_[static_cast<size_t>(input_value(n, 0))];
        Dims padded = physical_dims(in.dims, 4, Layout::ChannelsLast);
        padded.d[1] += p.explicit_pad_begin[0] + p.explicit_pad_end[0];
        padded.d[2] += p.explicit_pad_begin[1] + p.explicit_pad_end[1];
        TESSERA_ASSIGN_OR_RETURN(src, define_internal(padded));
        const size_t pre[4] = {0, p.explicit_pad_begin[0], p.explicit_pad_begin[1], 0};
        const size_t post[4] = {0, p.explicit_pad_end[0], p.explicit_pad_end[1], 0};
        TESSERA_RETURN_IF_ERROR(
            check(xnn_define_static_constant_pad(sg, pre, post, 0.0f, x, src, 0), i,
                  "xnn_define_static_constant_pad"));
      }
      return check(xnn_define_average_pooling_2d(sg, w.pad_top, w.pad_right, w.pad_bottom,
                                                 w.pad_left, w.kernel[0], w.kernel[1], w.stride[0],
                                                 w.stride[1], lo, hi, src, y, 0),
                   i, "xnn_define_average_pooling_2d");
    }
    case OpKind::GlobalAveragePooling: {
      if (out.dims.rank == 4) {
        return check(xnn_define_global_average_pooling_2d(sg, lo, hi, x, y, 0), i,
                     "xnn_define_global_average_pooling_2d");
      }
      // ReduceMean without keepdims: pool to [N, 1, 1, C], then view it as [N, C].
      Dims pooled;
      pooled.rank = 4;
      pooled.d[0] = out.dims.d[0];
      pooled.d[1] = pooled.d[2] = 1;
      pooled.d[3] = out.dims.d[1];
      TESSERA_ASSIGN_OR_RETURN(uint32_t t, define_internal(pooled));
      TESSERA_RETURN_IF_ERROR(check(xnn_define_global_average_pooling_2d(sg, lo, hi, x, t, 0), i,
                                    "xnn_define_global_average_pooling_2d"));
      const size_t dims[2] = {static_cast<size_t>(out.dims.d[0]),
                              static_cast<size_t>(out.dims.d[1])};
      return check(xnn_define_static_reshape(sg, 2, dims, t, y, 0), i, "xnn_define_static_reshape");
    }
    case OpKind::ConstantPad: {
      const int rank = out.dims.rank;
      size_t pre[kMaxDims] = {}, post[kMaxDims] = {};
      static constexpr int kNhwc[4] = {0, 2, 3, 1};
      for (int k = 0; k < rank; ++k) {
        const int logical = out_layout == Layout::ChannelsLast ? kNhwc[k] : k;
        pre[k] = static_cast<size_t>(p.pad_begin[logical]);
        post[k] = static_cast<size_t>(p.pad_end[logical]);
      }
      return check(xnn_define_static_constant_pad(sg, pre, post, p.pad_value, x, y, 0), i,
                   "xnn_define_static_constant_pad");
    }
    case OpKind::Reshape:
    case OpKind::Copy: {
      size_t dims[kMaxDims];
      const Dims physical = physical_dims(out.dims, out.dims.rank, out_layout);
      to_size_dims(physical, dims);
      return check(xnn_define_static_reshape(sg, static_cast<size_t>(physical.rank), dims, x, y, 0),
                   i, "xnn_define_static_reshape");
    }
    case OpKind::ResizeBilinear:
      return check(xnn_define_static_resize_bilinear_2d(sg, static_cast<size_t>(out.dims.d[2]),
                                                        static_cast<size_t>(out.dims.d[3]), x, y,
                                                        p.resize_flags),
                   i, "xnn_define_static_resize_bilinear_2d");
    case OpKind::PRelu: {
      const ValueState& slope = weight(1);
      const Dims physical = physical_dims(out.dims, out.dims.rank, out_layout);
      const int64_t channels = physical.d[physical.rank - 1];
      TESSERA_ASSIGN_OR_RETURN(float* s, owned(static_cast<size_t>(channels)));
      for (int64_t c = 0; c < channels; ++c) s[c] = slope.data[p.slope_per_channel ? c : 0];
      consumed(slope);
      Dims sd;
      sd.rank = 1;
      sd.d[0] = channels;
      TESSERA_ASSIGN_OR_RETURN(uint32_t slope_id, define_static(s, sd));
      return check(xnn_define_prelu(sg, x, slope_id, y, 0), i, "xnn_define_prelu");
    }
    case OpKind::Concat:
      break;  // a copy step between runtimes (plan_concat), never emitted as a node
  }
  return Status::error(Error::Internal, "xnnpack: node %zu: unhandled op kind", i);
}

Status Builder::build() {
  TESSERA_RETURN_IF_ERROR(load_values());
  TESSERA_RETURN_IF_ERROR(plan_nodes());
  compute_preferences();
  TESSERA_RETURN_IF_ERROR(walk(/*emit=*/false));
  d_.num_inputs = graph_inputs_.size();
  d_.num_outputs = graph_outputs_.size();
  for (int v : graph_inputs_) d_.arg_numel.push_back(values_[static_cast<size_t>(v)].dims.numel());
  for (int v : graph_outputs_) d_.arg_numel.push_back(values_[static_cast<size_t>(v)].dims.numel());
  Status status = walk(/*emit=*/true);
  for (SegmentInfo& s : segments_) {
    if (s.subgraph != nullptr) xnn_delete_subgraph(s.subgraph);
    s.subgraph = nullptr;
  }
  return status;
}

}  // namespace

Result<std::unique_ptr<Delegate>> build_delegate(const PayloadGraph& view,
                                                 const BackendInitContext& context,
                                                 const BuildOptions& options) {
  auto delegate = std::make_unique<Delegate>();
  const std::string_view id = context.delegate_id();
  std::snprintf(delegate->id, sizeof delegate->id, "%.*s", static_cast<int>(id.size()), id.data());
  delegate->pool = options.pool;
  delegate->runtime_flags = options.runtime_flags;
  Builder builder(view, context, options, delegate.get());
  TESSERA_RETURN_IF_ERROR(builder.build());
  // Profile event names: inputs, each step, outputs.
  auto add_name = [&](const char* what, int index) {
    std::array<char, 48> name{};
    // "<delegate id>:<what>[#index]"; the id is cut so the name fits its 47 characters.
    char label[32];
    if (index >= 0) {
      std::snprintf(label, sizeof label, "%s#%d", what, index % 10000);
    } else {
      std::snprintf(label, sizeof label, "%s", what);
    }
    const size_t label_size = std::strlen(label);
    const size_t id_size = std::min(std::strlen(delegate->id), name.size() - 2 - label_size);
    std::memcpy(name.data(), delegate->id, id_size);
    name[id_size] = ':';
    std::memcpy(name.data() + id_size + 1, label, label_size);
    delegate->event_names.push_back(name);
  };
  add_name("stage_inputs", -1);
  int conversions = 0, concats = 0;
  const std::vector<size_t> first_nodes =
      options.one_runtime_per_node ? builder.runtime_first_nodes() : std::vector<size_t>();
  for (const Step& s : delegate->steps) {
    if (s.kind == Step::Kind::Invoke && options.one_runtime_per_node) {
      // "<op>:<node name>", like the other backends' per-operator events.
      const fb::Node* n = builder.node(first_nodes[static_cast<size_t>(s.runtime)]);
      std::array<char, 48> name{};
      std::snprintf(name.data(), name.size(), "%s:%s", fb::EnumNameOpType(n->op()),
                    n->name() ? n->name()->c_str() : "");
      delegate->event_names.push_back(name);
    } else if (s.kind == Step::Kind::Invoke) {
      add_name("xnn_invoke", s.runtime);
    } else if (s.kind == Step::Kind::Concat) {
      add_name("concat", concats++);
    } else {
      add_name("convert_layout", conversions++);
    }
  }
  add_name("stage_outputs", -1);
  return delegate;
}

namespace {

Result<Span<const uint8_t>> recipe_constant(void* context, uint32_t index) {
  const auto* recipe = static_cast<const PerNodeRecipe*>(context);
  for (const auto& [i, bytes] : recipe->constants) {
    if (i == index) return bytes;
  }
  return Status::error(Error::NotFound, "xnnpack: constant %u was not recorded at init", index);
}

}  // namespace

Result<std::unique_ptr<PerNodeRecipe>> make_per_node_recipe(const PayloadGraph& view,
                                                            const void* payload, size_t size,
                                                            const BackendInitContext& context,
                                                            const BuildOptions& options) {
  auto r = std::make_unique<PerNodeRecipe>();
  r->payload.assign(static_cast<const uint8_t*>(payload), static_cast<const uint8_t*>(payload) + size);
  r->options = context.options();
  for (const SymbolValue& s : context.symbols()) r->symbol_names.emplace_back(s.name);
  for (size_t i = 0; i < r->symbol_names.size(); ++i) {
    r->symbols.push_back({r->symbol_names[i], context.symbols()[i].value});
  }
  for (size_t i = 0; i < view.num_values(); ++i) {
    const PayloadValue& v = view.value(static_cast<int32_t>(i));
    if (!v.is_constant()) continue;
    const uint32_t index = static_cast<uint32_t>(v.constant);
    bool seen = false;
    for (const auto& c : r->constants) seen = seen || c.first == index;
    if (!seen) r->constants.emplace_back(index, v.data);
  }
  r->build = options;
  r->build.one_runtime_per_node = true;
  return r;
}

Result<std::unique_ptr<Delegate>> build_per_node(const PerNodeRecipe& recipe) {
  BackendInitContext::Params params;
  params.options = &recipe.options;
  params.symbols = Span<const SymbolValue>(recipe.symbols.data(), recipe.symbols.size());
  params.constants = ConstantSource{recipe_constant, const_cast<PerNodeRecipe*>(&recipe)};
  BackendInitContext context(params);
  const FreeableBuffer payload(recipe.payload.data(), recipe.payload.size());
  TESSERA_ASSIGN_OR_RETURN(const PayloadGraph view, PayloadGraph::make(context, &payload));
  return build_delegate(view, context, recipe.build);
}

}  // namespace tessera::xnnpack
