#include "tests/backends/common/backend_harness.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include "tessera/backend/registry.h"
#include "tessera/backend/resolution.h"
#include "tessera/core/heap_allocator.h"
#include "tessera/kernels/portable/kernel.h"

namespace tessera::backend_testing {

// ---- GraphCase ---------------------------------------------------------------------------------

int GraphCase::symbol(const std::string& name, int64_t max, int64_t value) {
  graph.symbols.push_back({name, 1, max});
  symbol_values.push_back(value);
  return static_cast<int>(graph.symbols.size()) - 1;
}

int GraphCase::input(std::vector<ir::Dim> dims, ScalarType dtype) {
  int v = tensor(std::move(dims), dtype);
  graph.inputs.push_back(v);
  return v;
}

int GraphCase::constant(std::vector<int64_t> dims, Floats data) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  if (data.empty()) {
    std::mt19937 rng(seed++ * 7919u);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    data.resize(static_cast<size_t>(n));
    for (float& f : data) f = dist(rng);
  }
  constants.push_back(std::move(data));
  ir::Value v;
  v.name = std::string(1, 'c') + std::to_string(constants.size() - 1);
  for (int64_t d : dims) v.dims.push_back(d);
  v.constant = static_cast<int>(constants.size()) - 1;
  graph.values.push_back(std::move(v));
  return static_cast<int>(graph.values.size()) - 1;
}

int GraphCase::constant_ints(std::vector<int64_t> dims, ScalarType dtype,
                             const std::vector<int64_t>& values) {
  const size_t esize = element_size(dtype);
  Floats data(words_of(dtype, static_cast<int64_t>(values.size())), 0.0f);
  auto* bytes = reinterpret_cast<uint8_t*>(data.data());
  for (size_t i = 0; i < values.size(); ++i) {
    // Little-endian: the low bytes of the int64 are the value wrapped to the dtype.
    const int64_t v = dtype == ScalarType::Bool ? (values[i] != 0) : values[i];
    std::memcpy(bytes + i * esize, &v, esize);
  }
  const int v = constant(std::move(dims), std::move(data));
  graph.values[static_cast<size_t>(v)].dtype = dtype;
  return v;
}

int GraphCase::tensor(std::vector<ir::Dim> dims, ScalarType dtype) {
  ir::Value v;
  v.name = std::string(1, 'v') + std::to_string(graph.values.size());
  v.dtype = dtype;
  v.dims = std::move(dims);
  graph.values.push_back(std::move(v));
  return static_cast<int>(graph.values.size()) - 1;
}

ir::Node& GraphCase::node(fb::OpType op, std::vector<int> inputs, int output) {
  ir::Node n;
  n.op = op;
  n.name = std::string(1, 'n') + std::to_string(graph.nodes.size());
  n.inputs = std::move(inputs);
  n.outputs = {output};
  graph.nodes.push_back(std::move(n));
  return graph.nodes.back();
}

GraphCase GraphCase::single(fb::OpType op, std::vector<std::vector<int64_t>> in,
                            std::vector<int64_t> out) {
  GraphCase c;
  std::vector<int> ins;
  for (auto& dims : in) ins.push_back(c.input(std::vector<ir::Dim>(dims.begin(), dims.end())));
  int y = c.tensor(std::vector<ir::Dim>(out.begin(), out.end()));
  c.node(op, ins, y);
  c.output(y);
  return c;
}

std::vector<int64_t> GraphCase::dims_of(int v) const {
  std::vector<int64_t> out;
  for (const ir::Dim& d : graph.values[static_cast<size_t>(v)].dims) {
    if (d.is_static()) {
      out.push_back(d.value);
    } else {
      // Tests use single-symbol dims only.
      out.push_back(symbol_values[static_cast<size_t>(d.expr[0].value)]);
    }
  }
  return out;
}

size_t words_of(ScalarType dtype, int64_t numel) {
  return (static_cast<size_t>(numel) * element_size(dtype) + 3) / 4;
}

namespace {

int64_t numel(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

ScalarType dtype_of(const GraphCase& c, int v) {
  return c.graph.values[static_cast<size_t>(v)].dtype;
}

// A zeroed buffer for value `v`.
Floats buffer_of(const GraphCase& c, int v) {
  return Floats(words_of(dtype_of(c, v), numel(c.dims_of(v))), 0.0f);
}

Result<Span<const uint8_t>> constant_bytes(void* context, uint32_t index) {
  const GraphCase* c = static_cast<const Session::Constants*>(context)->graph;
  if (index >= c->constants.size()) return Status(Error::NotFound, "no such constant");
  const Floats& f = c->constants[index];
  size_t nbytes = f.size() * sizeof(float);
  for (size_t v = 0; v < c->graph.values.size(); ++v) {
    const ir::Value& value = c->graph.values[v];
    if (value.constant == static_cast<int>(index)) {
      nbytes =
          static_cast<size_t>(numel(c->dims_of(static_cast<int>(v)))) * element_size(value.dtype);
    }
  }
  return Span<const uint8_t>(reinterpret_cast<const uint8_t*>(f.data()), nbytes);
}

void release_constant(void* context, uint32_t index) {
  auto* k = static_cast<Session::Constants*>(context);
  if (k->released == nullptr) return;
  k->released->push_back(index);
  if (k->poison && index < k->graph->constants.size()) {
    Floats& f = k->graph->constants[index];
    std::fill(f.begin(), f.end(), std::numeric_limits<float>::quiet_NaN());
  }
}

}  // namespace

std::vector<Floats> random_inputs(const GraphCase& c, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<Floats> out;
  for (int v : c.graph.inputs) {
    const ScalarType t = dtype_of(c, v);
    if (t == ScalarType::Float32) {
      Floats f(static_cast<size_t>(numel(c.dims_of(v))));
      for (float& x : f) x = dist(rng);
      out.push_back(std::move(f));
      continue;
    }
    std::uniform_int_distribution<int64_t> ints(t == ScalarType::Bool ? 0 : c.int_lo,
                                                t == ScalarType::Bool ? 1 : c.int_hi);
    Floats f = buffer_of(c, v);
    auto* bytes = reinterpret_cast<uint8_t*>(f.data());
    const size_t esize = element_size(t);
    for (int64_t i = 0; i < numel(c.dims_of(v)); ++i) {
      const int64_t x = ints(rng);
      std::memcpy(bytes + static_cast<size_t>(i) * esize, &x, esize);  // little-endian
    }
    out.push_back(std::move(f));
  }
  return out;
}

// ---- Session -----------------------------------------------------------------------------------

Session::~Session() {
  if (handle_ != nullptr) backend_->destroy(handle_);
}

Status Session::init(const GraphCase& c, const RunOptions& options) {
  case_ = &c;
  TESSERA_ASSIGN_OR_RETURN(backend_, get_backend(backend_name_));
  const std::string delegate_id =
      options.delegate_id.empty() ? std::string(backend_name_) + "#0" : options.delegate_id;
  TESSERA_RETURN_IF_ERROR(resolve_options(backend_name_, *backend_, delegate_id,
                                          options.compile_specs, options.load, options.delegates,
                                          Validation::Strict, &resolved_));
  payload_ = ir::encode_graph(c.graph);
  std::vector<SymbolValue> symbols;
  for (size_t i = 0; i < c.graph.symbols.size(); ++i) {
    symbols.push_back({c.graph.symbols[i].name, c.symbol_values[i]});
  }
  if (handle_ != nullptr) {  // a second init replaces the first delegate
    backend_->destroy(handle_);
    handle_ = nullptr;
  }
  allocator_.reset();
  BackendInitContext::Params params;
  params.method_allocator = &allocator_;
  params.options = &resolved_;
  params.method_name = "forward";
  params.cpu_pool_peers = {options.cpu_pool_peers.data(), options.cpu_pool_peers.size()};
  params.method_instance = options.method_instance;
  params.symbols = symbols;
  constants_ = {const_cast<GraphCase*>(&c), options.released, options.poison_released};
  params.constants = ConstantSource{constant_bytes, &constants_, release_constant};
  params.policy = options.policy;
  derived_.clear();
  params.derived = &derived_;
  BackendInitContext context(params);
  FreeableBuffer payload(payload_.data(), payload_.size());
  TESSERA_ASSIGN_OR_RETURN(handle_, backend_->init(context, &payload, options.compile_specs));

  // Argument tensors, owned here.
  const size_t n_in = c.graph.inputs.size(), n_out = c.graph.outputs.size();
  in_data_.resize(n_in);
  out_data_.resize(n_out);
  tensors_.resize(n_in + n_out);
  values_.resize(n_in + n_out);
  args_.clear();
  for (size_t i = 0; i < n_in + n_out; ++i) {
    const int v = i < n_in ? c.graph.inputs[i] : c.graph.outputs[i - n_in];
    std::vector<int64_t> dims = c.dims_of(v);
    Floats& data = i < n_in ? in_data_[i] : out_data_[i - n_in];
    data = buffer_of(c, v);
    tensors_[i] = Tensor(dtype_of(c, v), dims, data.data());
    values_[i] = EValue(tensors_[i]);
    args_.push_back(&values_[i]);
  }
  return Status::ok();
}

Status Session::run(const std::vector<Floats>& inputs, std::vector<Floats>* outputs,
                    const ExecuteOptions* execute, ProfileBuffer* profile) {
  for (size_t i = 0; i < in_data_.size(); ++i) {
    if (inputs[i].size() != in_data_[i].size()) return Status(Error::InvalidArgument, "input size");
    std::copy(inputs[i].begin(), inputs[i].end(), in_data_[i].begin());
  }
  ExecuteOptionView view;
  if (execute != nullptr) {
    TESSERA_RETURN_IF_ERROR(
        select_execute_options(*execute, backend_name_, backend_->option_schema(), &view));
  }
  BackendExecutionContext context(&resolved_, view, profile);
  TESSERA_RETURN_IF_ERROR(backend_->execute(context, handle_, args_));
  if (outputs != nullptr) *outputs = out_data_;
  return Status::ok();
}

// ---- runs --------------------------------------------------------------------------------------

Result<std::vector<Floats>> run_backend(const char* backend, const GraphCase& c,
                                        const std::vector<Floats>& inputs,
                                        const RunOptions& options) {
  Session s(backend);
  TESSERA_RETURN_IF_ERROR(s.init(c, options));
  std::vector<Floats> out;
  for (int i = 0; i < options.repeat; ++i) {
    TESSERA_RETURN_IF_ERROR(s.run(inputs, &out, options.execute, options.profile));
  }
  return out;
}

Result<std::vector<Floats>> run_portable(const GraphCase& c, const std::vector<Floats>& inputs) {
  std::vector<uint8_t> bytes = ir::encode_graph(c.graph);
  const fb::Graph* g = flatbuffers::GetRoot<fb::Graph>(bytes.data());
  const size_t n = c.graph.values.size();
  std::vector<Floats> data(n);
  std::vector<Tensor> tensors(n);
  for (size_t v = 0; v < n; ++v) {
    std::vector<int64_t> dims = c.dims_of(static_cast<int>(v));
    const ir::Value& value = c.graph.values[v];
    if (value.constant >= 0) {
      data[v] = c.constants[static_cast<size_t>(value.constant)];
    } else {
      data[v] = buffer_of(c, static_cast<int>(v));
    }
    tensors[v] = Tensor(value.dtype, dims, data[v].data());
  }
  for (size_t i = 0; i < c.graph.inputs.size(); ++i) {
    data[static_cast<size_t>(c.graph.inputs[i])] = inputs[i];
    tensors[static_cast<size_t>(c.graph.inputs[i])].set_data(
        data[static_cast<size_t>(c.graph.inputs[i])].data());
  }
  HeapMemoryAllocator allocator;
  for (const fb::Node* node : *g->nodes()) {
    std::vector<const Tensor*> ins;
    std::vector<Tensor*> outs;
    for (int v : *node->inputs()) ins.push_back(v < 0 ? nullptr : &tensors[static_cast<size_t>(v)]);
    for (int v : *node->outputs()) outs.push_back(&tensors[static_cast<size_t>(v)]);
    portable::KernelNode kn{node, Span<const Tensor* const>(ins.data(), ins.size()),
                            Span<const Tensor* const>(outs.data(), outs.size())};
    TESSERA_ASSIGN_OR_RETURN(portable::PreparedKernel k, portable::prepare_kernel(kn, allocator));
    TESSERA_RETURN_IF_ERROR(portable::run_kernel(k,
                                                 Span<const Tensor* const>(ins.data(), ins.size()),
                                                 Span<Tensor* const>(outs.data(), outs.size())));
  }
  std::vector<Floats> out;
  for (int v : c.graph.outputs) out.push_back(data[static_cast<size_t>(v)]);
  return out;
}

::testing::AssertionResult close(const std::vector<Floats>& got, const std::vector<Floats>& want,
                                 double relative) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << got.size() << " outputs, expected " << want.size();
  }
  for (size_t o = 0; o < got.size(); ++o) {
    if (got[o].size() != want[o].size()) {
      return ::testing::AssertionFailure() << "output " << o << " has " << got[o].size()
                                           << " elements, expected " << want[o].size();
    }
    double max_ref = 0;
    for (float w : want[o]) max_ref = std::max(max_ref, std::fabs(static_cast<double>(w)));
    const double tol = std::max(relative * max_ref, 1e-6);
    double worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < got[o].size(); ++i) {
      const double e = std::fabs(static_cast<double>(got[o][i]) - want[o][i]);
      if (!(e <= worst)) {  // also catches NaN
        worst = std::isnan(e) ? INFINITY : e;
        at = i;
      }
    }
    if (worst > tol) {
      return ::testing::AssertionFailure()
             << "output " << o << ": |error| " << worst << " at " << at << " (got " << got[o][at]
             << ", want " << want[o][at] << "), tolerance " << tol;
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult matches_portable(const char* backend, const GraphCase& c, float lo, float hi,
                                            double relative) {
  std::vector<Floats> inputs = random_inputs(c, c.seed * 31u + 5u, lo, hi);
  Result<std::vector<Floats>> want = run_portable(c, inputs);
  if (!want.ok()) {
    return ::testing::AssertionFailure() << "portable: " << want.status().message();
  }
  Result<std::vector<Floats>> got = run_backend(backend, c, inputs);
  if (!got.ok()) return ::testing::AssertionFailure() << backend << ": " << got.status().message();
  std::vector<Floats> got_float, want_float;
  for (size_t o = 0; o < c.graph.outputs.size() && o < got->size(); ++o) {
    const int v = c.graph.outputs[o];
    const ScalarType t = dtype_of(c, v);
    if (t == ScalarType::Float32) {
      got_float.push_back((*got)[o]);
      want_float.push_back((*want)[o]);
      continue;
    }
    // Exact: compare element by element and name the first difference.
    const size_t esize = element_size(t);
    const auto* g = reinterpret_cast<const uint8_t*>((*got)[o].data());
    const auto* w = reinterpret_cast<const uint8_t*>((*want)[o].data());
    for (int64_t i = 0; i < numel(c.dims_of(v)); ++i) {
      if (std::memcmp(g + i * esize, w + i * esize, esize) == 0) continue;
      int64_t gv = 0, wv = 0;  // little-endian: the low bytes
      std::memcpy(&gv, g + i * esize, esize);
      std::memcpy(&wv, w + i * esize, esize);
      return ::testing::AssertionFailure() << "output " << o << " (" << scalar_type_name(t)
                                           << "): element " << i << " is " << gv << ", want " << wv;
    }
  }
  return close(got_float, want_float, relative);
}

}  // namespace tessera::backend_testing
