#include "python/src/program.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string_view>

#include "python/src/errors.h"
#include "python/src/options.h"
#include "tessera/backend/derived_values.h"
#include "tessera/backend/execute_options.h"
#include "tessera/backend/options_map.h"
#include "tessera/backend/policy.h"
#include "tessera/backend/resolved_options.h"
#include "tessera/ir/schema.h"  // fb::Method: method.h and program.h only declare it
#include "tessera/runtime/data_loader.h"
#include "tessera/runtime/delegate_info.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program.h"

namespace py = pybind11;

namespace tessera::python {

struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};

/// A Program and the bytes it views. Shared by the Python Program and every Method loaded from
/// it, so the bytes live as long as the last of them.
struct ProgramState {
  std::optional<MmapDataLoader> mmap;
  std::unique_ptr<uint8_t, FreeDeleter> buffer;
  std::optional<BufferDataLoader> buffer_loader;
  std::optional<Program> program;
  std::string source;   // the path, or "<bytes>"
  bool closed = false;  // read and written with the GIL held

  void check_open() const {
    if (closed) {
      throw StatusError(Status::error(Error::InvalidState, "program %s is closed", source.c_str()));
    }
  }
};

namespace {

// --- dtypes ----------------------------------------------------------------------------------

py::dtype numpy_dtype(ScalarType t) {
  switch (t) {
    case ScalarType::Float32:
      return py::dtype::of<float>();
    case ScalarType::Float16:
      return py::dtype("float16");
    case ScalarType::Int64:
      return py::dtype::of<int64_t>();
    case ScalarType::Int32:
      return py::dtype::of<int32_t>();
    case ScalarType::Int8:
      return py::dtype::of<int8_t>();
    case ScalarType::UInt8:
      return py::dtype::of<uint8_t>();
    case ScalarType::Bool:
      return py::dtype::of<bool>();
  }
  return py::dtype::of<float>();
}

// NumPy kind and item size of each ScalarType: an array matches when both agree and its byte
// order is native.
bool dtype_matches(const py::detail::PyArrayDescr_Proxy* d, ScalarType t) {
  if (d->byteorder == '>') return false;
  const char kind = d->kind;
  const int size = static_cast<int>(d->elsize);
  switch (t) {
    case ScalarType::Float32:
      return kind == 'f' && size == 4;
    case ScalarType::Float16:
      return kind == 'f' && size == 2;
    case ScalarType::Int64:
      return kind == 'i' && size == 8;
    case ScalarType::Int32:
      return kind == 'i' && size == 4;
    case ScalarType::Int8:
      return kind == 'i' && size == 1;
    case ScalarType::UInt8:
      return kind == 'u' && size == 1;
    case ScalarType::Bool:
      return kind == 'b' && size == 1;
  }
  return false;
}

// --- symbolic shapes -------------------------------------------------------------------------

std::string symbol_name(const fb::Method* m, int64_t index) {
  if (m->symbols() == nullptr || index < 0 || index >= static_cast<int64_t>(m->symbols()->size())) {
    return "?";
  }
  return m->symbols()->Get(static_cast<uint32_t>(index))->name()->str();
}

// A dim as Python sees it: an int, the symbol's name, or an expression such as "2*batch".
py::object dim_object(const fb::Method* m, const fb::Dim* d) {
  if (d->expr() == nullptr || d->expr()->size() == 0) return py::int_(d->value());
  std::vector<std::pair<std::string, bool>> stack;  // text, is compound
  for (const fb::ShapeTerm* term : *d->expr()) {
    if (term->op() == fb::ShapeOp::Const) {
      stack.push_back({std::to_string(term->value()), false});
    } else if (term->op() == fb::ShapeOp::Sym) {
      stack.push_back({symbol_name(m, term->value()), false});
    } else {
      if (stack.size() < 2) return py::int_(d->value());
      auto b = stack.back();
      stack.pop_back();
      auto a = stack.back();
      stack.pop_back();
      const char* op = term->op() == fb::ShapeOp::Add   ? "+"
                       : term->op() == fb::ShapeOp::Sub ? "-"
                       : term->op() == fb::ShapeOp::Mul ? "*"
                                                        : "//";
      auto wrap = [](const std::pair<std::string, bool>& x) {
        return x.second ? "(" + x.first + ")" : x.first;
      };
      stack.push_back({wrap(a) + op + wrap(b), true});
    }
  }
  if (stack.size() != 1) return py::int_(d->value());
  return py::str(stack.back().first);
}

struct ValueDesc {
  std::string name;
  ScalarType dtype = ScalarType::Float32;
  py::tuple shape;
};

ValueDesc describe_value(const fb::Method* m, uint32_t value_index) {
  ValueDesc out;
  const fb::Value* v = m->values()->Get(value_index);
  out.name = v->name() ? v->name()->str() : std::string();
  out.dtype = static_cast<ScalarType>(v->dtype());
  const size_t rank = v->dims() ? v->dims()->size() : 0;
  out.shape = py::tuple(rank);
  for (size_t i = 0; i < rank; ++i)
    out.shape[i] = dim_object(m, v->dims()->Get(static_cast<uint32_t>(i)));
  return out;
}

// --- the load configuration ------------------------------------------------------------------

/// Everything a load of the method needs, kept for reloads at other input shapes. Heap-held:
/// `load` points at the two maps.
struct LoadConfig {
  LoadOptions load;
  LoadBackendOptionsMap backend_options;
  DelegateOptionsMap delegate_options;
  std::string selection_cache_dir;  // what load.selection_cache_dir points at, when given
};

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

std::string type_name(py::handle h) {
  return py::str(py::type::handle_of(h).attr("__name__"));
}

[[noreturn]] void argument_error(const std::string& message) {
  throw StatusError(Status(Error::InvalidArgument, message));
}

}  // namespace

// --- Method ----------------------------------------------------------------------------------

/// What tessera.Method wraps: the loaded Method for the input shapes of the last call, and up to
/// kMaxVariants loads at other shapes of its symbolic dims (one per distinct set of shapes).
class PyMethod {
 public:
  static constexpr size_t kMaxVariants = 4;

  PyMethod(std::shared_ptr<ProgramState> program, std::string name,
           std::unique_ptr<LoadConfig> config, std::vector<std::string> free_symbols)
      : program_(std::move(program)),
        name_(std::move(name)),
        config_(std::move(config)),
        free_symbols_(std::move(free_symbols)) {
    const fb::Method* m = fb_method();
    const size_t n_in = m->inputs() ? m->inputs()->size() : 0;
    const size_t n_out = m->outputs() ? m->outputs()->size() : 0;
    for (size_t i = 0; i < n_in; ++i)
      inputs_.push_back(describe_value(m, m->inputs()->Get(static_cast<uint32_t>(i))));
    for (size_t i = 0; i < n_out; ++i)
      outputs_.push_back(describe_value(m, m->outputs()->Get(static_cast<uint32_t>(i))));
  }

  /// The first load, with `options` (the configuration plus starting values of the free
  /// symbols; it views config_'s maps). GIL released by the caller.
  Status load_initial(const LoadOptions& options) {
    Result<Method> r = program_->program->load_method(name_, nullptr, options);
    if (!r.ok()) return r.status();
    variants_.push_back(std::make_unique<Variant>(Variant{std::move(r).value()}));
    current_ = variants_.back().get();
    return Status::ok();
  }

  const fb::Method* fb_method() const { return program_->program->find_method(name_); }

  void check_open() const {
    program_->check_open();
    if (closed_) {
      throw StatusError(Status::error(Error::InvalidState, "method '%s' is closed", name_.c_str()));
    }
  }

  /// method(*arrays, **named) and method.run(...): the outputs as new arrays.
  py::list call(py::args args, py::kwargs named, const ExecuteOptions& execute) {
    check_open();
    const size_t n = inputs_.size();
    if (args.size() > n) {
      argument_error("method '" + name_ + "' takes " + std::to_string(n) + " input(s) (" +
                     input_list() + "), got " + std::to_string(args.size()));
    }
    std::vector<py::object> given(n);
    for (size_t i = 0; i < args.size(); ++i) given[i] = py::reinterpret_borrow<py::object>(args[i]);
    if (named) {
      for (auto item : named) {
        std::string key = py::str(item.first);
        size_t index = find_input(key);
        if (given[index])
          argument_error("input '" + key + "' given twice (by position and by name)");
        given[index] = py::reinterpret_borrow<py::object>(item.second);
      }
    }
    for (size_t i = 0; i < n; ++i) {
      if (!given[i])
        argument_error("method '" + name_ + "': input '" + inputs_[i].name + "' (#" +
                       std::to_string(i) + ") is missing; inputs: " + input_list());
    }
    return run_arrays(given, execute);
  }

  py::list run_arrays(std::vector<py::object>& given, const ExecuteOptions& execute) {
    const size_t n = inputs_.size();
    std::vector<Tensor> tensors(n);
    for (size_t i = 0; i < n; ++i) given[i] = prepare_input(i, given[i], &tensors[i]);

    std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
    {
      py::gil_scoped_release release;
      lock.lock();
      if (closed_) {
        throw StatusError(
            Status::error(Error::InvalidState, "method '%s' is closed", name_.c_str()));
      }
      select_variant(tensors);
      for (size_t i = 0; i < n; ++i) {
        Status st = current_->method.set_input(i, tensors[i]);
        if (!st.is_ok()) throw StatusError(st);
      }
      Status st = current_->method.execute(execute);
      if (!st.is_ok()) throw StatusError(st);
    }
    // GIL and the method's lock held: copy the outputs into arrays that own their memory.
    const size_t n_out = current_->method.outputs_size();
    py::list out(n_out);
    for (size_t i = 0; i < n_out; ++i) {
      Result<const Tensor*> t = current_->method.get_output(i);
      if (!t.ok()) throw StatusError(t.status());
      const Tensor& tensor = **t;
      std::vector<py::ssize_t> shape(tensor.sizes().begin(), tensor.sizes().end());
      py::array array(numpy_dtype(tensor.dtype()), shape);
      if (tensor.nbytes() > 0) std::memcpy(array.mutable_data(), tensor.data(), tensor.nbytes());
      out[i] = std::move(array);
    }
    return out;
  }

  // Checks and, where needed, converts input `i`; fills `tensor` to view the array's data.
  // Returns the array to keep alive.
  py::object prepare_input(size_t i, const py::object& value, Tensor* tensor) {
    const ScalarType want = inputs_[i].dtype;
    py::object array = value;
    bool ok_as_is = false;
    if (py::isinstance<py::array>(value)) {
      auto* proxy = py::detail::array_proxy(value.ptr());
      ok_as_is = dtype_matches(py::detail::array_descriptor_proxy(proxy->descr), want) &&
                 py::detail::check_flags(value.ptr(), py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_ |
                                                          py::detail::npy_api::NPY_ARRAY_ALIGNED_);
    }
    if (!ok_as_is) array = convert_input(i, value);
    auto* proxy = py::detail::array_proxy(array.ptr());
    if (proxy->nd > kMaxDims) {
      throw StatusError(
          Status::error(Error::ShapeMismatch,
                        "input '%s' has rank %d; Tessera tensors have at most %d dims "
                        "(the method takes %zu)",
                        inputs_[i].name.c_str(), proxy->nd, kMaxDims, inputs_[i].shape.size()),
          nullptr);
    }
    int64_t sizes[kMaxDims];
    for (int d = 0; d < proxy->nd; ++d) sizes[d] = static_cast<int64_t>(proxy->dimensions[d]);
    *tensor = Tensor(want, Span<const int64_t>(sizes, static_cast<size_t>(proxy->nd)), proxy->data);
    return array;
  }

  // np.asarray, then the input's dtype (with a DTypeConversionWarning) when NumPy calls the cast
  // "same_kind" or safer, then C order. Other dtypes are a DTypeError.
  py::object convert_input(size_t i, const py::object& value) {
    py::module_ np = py::module_::import("numpy");
    py::object array;
    try {
      array = np.attr("asarray")(value);
    } catch (py::error_already_set& e) {
      throw StatusError(Status::error(Error::InvalidType,
                                      "input '%s': cannot make an array of a %s: %s",
                                      inputs_[i].name.c_str(), type_name(value).c_str(), e.what()));
    }
    py::dtype have = py::reinterpret_borrow<py::dtype>(array.attr("dtype"));
    py::dtype want = numpy_dtype(inputs_[i].dtype);
    const char* want_name = scalar_type_name(inputs_[i].dtype);
    if (!have.equal(want)) {
      const char kind = have.kind();
      const bool numeric = kind == 'b' || kind == 'i' || kind == 'u' || kind == 'f';
      if (!numeric || !np.attr("can_cast")(have, want, "same_kind").cast<bool>()) {
        std::string have_name = py::str(have);
        throw StatusError(Status::error(Error::InvalidType,
                                        "input '%s' takes %s; an array of %s cannot be converted "
                                        "to it without changing its kind",
                                        inputs_[i].name.c_str(), want_name, have_name.c_str()));
      }
      std::string have_name = py::str(have);
      std::string message = "tessera: input '" + inputs_[i].name + "' takes " + want_name +
                            "; converting the " + have_name + " array (a copy)";
      py::object category = py::module_::import("tessera._errors").attr("DTypeConversionWarning");
      if (PyErr_WarnEx(category.ptr(), message.c_str(), 1) != 0) throw py::error_already_set();
      array = array.attr("astype")(want);
    }
    return np.attr("ascontiguousarray")(array);
  }

  size_t find_input(const std::string& name) const {
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (inputs_[i].name == name) return i;
    }
    throw StatusError(Status::error(Error::NotFound, "method '%s' has no input '%s' (inputs: %s)",
                                    name_.c_str(), name.c_str(), input_list().c_str()));
  }

  std::string input_list() const {
    std::string s;
    for (size_t i = 0; i < inputs_.size(); ++i) s += (i ? ", '" : "'") + inputs_[i].name + "'";
    return s.empty() ? "none" : s;
  }

  // With the lock held and the GIL released: makes current_ a load whose inputs have the shapes
  // of `tensors`, loading one if the symbolic dims need other values.
  void select_variant(const std::vector<Tensor>& tensors) {
    if (free_symbols_.empty() || shapes_match(*current_, tensors)) return;
    for (auto& v : variants_) {
      if (shapes_match(*v, tensors)) {
        current_ = v.get();
        return;
      }
    }
    LoadOptions options = config_->load;
    for (size_t i = 0; i < tensors.size(); ++i) {
      Status st = options.set_input_shape(i, tensors[i].sizes());
      if (!st.is_ok()) throw StatusError(st, "ShapeError");
    }
    Result<Method> r = program_->program->load_method(name_, nullptr, options);
    if (!r.ok()) {
      // The inputs' shapes gave the dims: a bound or a contradiction is a shape problem.
      const Error code = r.status().code();
      throw StatusError(r.status(), code == Error::InvalidArgument || code == Error::ShapeMismatch
                                        ? "ShapeError"
                                        : nullptr);
    }
    if (variants_.size() == kMaxVariants) {
      // Drop the oldest load that is not the current one.
      for (auto it = variants_.begin(); it != variants_.end(); ++it) {
        if (it->get() != current_) {
          variants_.erase(it);
          break;
        }
      }
    }
    variants_.push_back(std::make_unique<Variant>(Variant{std::move(r).value()}));
    current_ = variants_.back().get();
  }

  struct Variant {
    Method method;
  };

  static bool shapes_match(Variant& v, const std::vector<Tensor>& tensors) {
    for (size_t i = 0; i < tensors.size(); ++i) {
      Result<Tensor*> in = v.method.input(i);
      if (!in.ok()) return false;
      Span<const int64_t> a = (*in)->sizes(), b = tensors[i].sizes();
      if (a.size() != b.size()) return false;
      for (size_t d = 0; d < a.size(); ++d) {
        if (a[d] != b[d]) return false;
      }
    }
    return true;
  }

  /// The current load, with the method's lock held (a call on another thread may replace
  /// it): taken with the GIL released, so a thread waiting for the lock never holds the GIL.
  struct Current {
    std::unique_lock<std::mutex> lock;
    const Method& method;
  };
  Current current() const {
    check_open();
    std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
    {
      py::gil_scoped_release release;
      lock.lock();
    }
    check_open();
    return Current{std::move(lock), current_->method};
  }

  void close() {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
    current_ = nullptr;
    variants_.clear();
  }

  py::list describe(const std::vector<ValueDesc>& values) const {
    py::object info = py::module_::import("tessera._types").attr("TensorInfo");
    py::list out;
    for (const ValueDesc& v : values) out.append(info(v.name, numpy_dtype(v.dtype), v.shape));
    return out;
  }

  std::shared_ptr<ProgramState> program_;
  std::string name_;
  std::unique_ptr<LoadConfig> config_;
  std::vector<std::string> free_symbols_;
  std::vector<ValueDesc> inputs_, outputs_;
  std::vector<std::unique_ptr<Variant>> variants_;
  Variant* current_ = nullptr;
  mutable std::mutex mutex_;
  bool closed_ = false;
};

namespace {

// --- Program ---------------------------------------------------------------------------------

py::list method_names(const PyProgram& p) {
  p.state->check_open();
  py::list out;
  for (size_t i = 0; i < p.state->program->num_methods(); ++i) {
    out.append(std::string(take(p.state->program->method_name(i))));
  }
  return out;
}

void add_dims(py::handle dims, LoadConfig* config, std::vector<std::string>* given) {
  if (dims.is_none()) return;
  if (!PyDict_Check(dims.ptr()))
    argument_error("dims must be a dict such as {\"batch\": 4}, not a " + type_name(dims));
  for (auto item : py::reinterpret_borrow<py::dict>(dims)) {
    if (!py::isinstance<py::str>(item.first))
      argument_error("dims: key " + std::string(py::repr(item.first)) + " is not a str");
    std::string name = item.first.cast<std::string>();
    if (py::isinstance<py::bool_>(item.second) || !PyIndex_Check(item.second.ptr())) {
      argument_error("dims['" + name + "'] must be an int, not a " + type_name(item.second));
    }
    check(config->load.set_dim(name, item.second.cast<int64_t>()));
    given->push_back(name);
  }
}

void add_retargets(py::handle retarget, LoadConfig* config) {
  if (retarget.is_none()) return;
  auto add = [&](const std::string& from, const std::string& to) {
    check(config->load.add_retarget(from, to));
  };
  if (PyDict_Check(retarget.ptr())) {
    for (auto item : py::reinterpret_borrow<py::dict>(retarget)) {
      if (!py::isinstance<py::str>(item.first) || !py::isinstance<py::str>(item.second)) {
        argument_error(
            "retarget must map backend names to backend names, e.g. {\"xnnpack\": \"portable\"}");
      }
      add(item.first.cast<std::string>(), item.second.cast<std::string>());
    }
    return;
  }
  if (py::isinstance<py::str>(retarget)) {
    for (const std::string& pair : split_commas(retarget.cast<std::string>())) {
      size_t eq = pair.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == pair.size()) {
        argument_error("retarget '" + pair + "' is not FROM=TO");
      }
      add(pair.substr(0, eq), pair.substr(eq + 1));
    }
    return;
  }
  argument_error(
      "retarget must be a dict {\"xnnpack\": \"portable\"} or a str \"xnnpack=portable\", not a " +
      type_name(retarget));
}

void set_fallback(py::handle fallback, LoadConfig* config) {
  if (fallback.is_none()) return;
  std::string text;
  if (py::isinstance<py::str>(fallback)) {
    text = fallback.cast<std::string>();
  } else if (py::isinstance<py::list>(fallback) || py::isinstance<py::tuple>(fallback)) {
    for (py::handle h : fallback) {
      if (!py::isinstance<py::str>(h))
        argument_error("fallback entries must be backend names (str), not a " + type_name(h));
      text += (text.empty() ? "" : ",") + h.cast<std::string>();
    }
  } else {
    argument_error("fallback must be a list of backend names or a comma-separated str, not a " +
                   type_name(fallback));
  }
  check(config->load.set_fallback(text));
}

std::unique_ptr<PyMethod> load_method(
    PyProgram& p, const std::string& name, py::handle options, py::handle delegate_options,
    py::handle dims, py::handle retarget, py::handle fallback, py::handle policy, bool lenient,
    py::handle selection, py::handle selection_cache_dir, py::handle selection_cache_max_kb,
    py::handle selection_tolerance, py::handle selection_budget_ms,
    py::handle selection_runs_per_load, bool selection_lower_precision, py::handle startup_backend,
    py::handle on_execute_failure) {
  p.state->check_open();
  const fb::Method* m = p.state->program->find_method(name);
  if (m == nullptr) {
    std::string names;
    for (size_t i = 0; i < p.state->program->num_methods(); ++i) {
      names += (i ? ", '" : "'") + std::string(take(p.state->program->method_name(i))) + "'";
    }
    throw StatusError(Status::error(Error::NotFound, "program has no method '%s' (methods: %s)",
                                    name.c_str(), names.c_str()));
  }
  auto config = std::make_unique<LoadConfig>();
  for_each_option(options, "options", [&](const std::string& target, const BackendOption& o) {
    if (target.find('#') != std::string::npos) {
      check(config->delegate_options.set_options(target, Span<const BackendOption>(&o, 1)));
    } else {
      check(config->backend_options.set_options(target, Span<const BackendOption>(&o, 1)));
    }
  });
  for_each_option(
      delegate_options, "delegate_options", [&](const std::string& target, const BackendOption& o) {
        check(config->delegate_options.set_options(target, Span<const BackendOption>(&o, 1)));
      });
  std::vector<std::string> given_dims;
  add_dims(dims, config.get(), &given_dims);
  add_retargets(retarget, config.get());
  set_fallback(fallback, config.get());
  if (!policy.is_none()) {
    if (!py::isinstance<py::str>(policy))
      argument_error("policy must be a str (auto, latency, balanced, power_saver), not a " +
                     type_name(policy));
    Result<Policy> parsed = parse_policy(policy.cast<std::string>());
    if (!parsed.ok()) throw StatusError(parsed.status());
    config->load.set_policy(*parsed);
  }
  if (!selection.is_none()) {
    if (!py::isinstance<py::str>(selection))
      argument_error("selection must be a str (auto, fixed, measure), not a " +
                     type_name(selection));
    Result<Selection> parsed = parse_selection(selection.cast<std::string>());
    if (!parsed.ok()) throw StatusError(parsed.status());
    config->load.selection = *parsed;
  }
  if (!selection_cache_dir.is_none()) {
    if (!py::isinstance<py::str>(selection_cache_dir))
      argument_error("selection_cache_dir must be a str (\"\" disables the cache), not a " +
                     type_name(selection_cache_dir));
    config->selection_cache_dir = selection_cache_dir.cast<std::string>();
    config->load.selection_cache_dir = config->selection_cache_dir.c_str();
  }
  // An int (not bool) for an int64 field, checked by `check_value`; beyond int64, the error
  // `beyond` makes of its text.
  auto int64_value = [](py::handle value, const std::string& type_error,
                        Status (*check_value)(int64_t), Status (*beyond)(const std::string&)) {
    if (!py::isinstance<py::int_>(value) || py::isinstance<py::bool_>(value)) {
      argument_error(type_error + type_name(value));
    }
    int64_t v = 0;
    try {
      v = value.cast<int64_t>();
    } catch (const py::cast_error&) {
      check(beyond(py::repr(value).cast<std::string>()));
    }
    check(check_value(v));
    return v;
  };
  if (!selection_cache_max_kb.is_none()) {
    config->load.selection_cache_max_kb = int64_value(
        selection_cache_max_kb, "selection_cache_max_kb must be an int (KiB; 0: no bound), not a ",
        &LoadOptions::check_selection_cache_max_kb, [](const std::string& text) {
          return Status::error(
              Error::InvalidArgument, "selection cache bound %s KiB must be 0 (none) to %lld KiB",
              text.c_str(), static_cast<long long>(LoadOptions::kSelectionCacheMaxKbLimit));
        });
  }
  if (!selection_runs_per_load.is_none()) {
    config->load.selection_runs_per_load = int64_value(
        selection_runs_per_load, "selection_runs_per_load must be an int >= 1, not a ",
        &LoadOptions::check_selection_runs_per_load, [](const std::string& text) {
          return Status::error(Error::InvalidArgument,
                               "selection runs per load %s must be 1 to %lld", text.c_str(),
                               static_cast<long long>(LoadOptions::kSelectionRunsPerLoadLimit));
        });
  }
  // A number (int or float, not bool), checked as load_method checks it.
  auto number = [](py::handle value, const char* what) {
    if ((!py::isinstance<py::float_>(value) && !py::isinstance<py::int_>(value)) ||
        py::isinstance<py::bool_>(value)) {
      argument_error(std::string(what) + " must be a number or None, not a " + type_name(value));
    }
    return value.cast<double>();
  };
  if (!selection_tolerance.is_none()) {
    const double tolerance = number(selection_tolerance, "selection_tolerance");
    check(LoadOptions::check_selection_tolerance(tolerance));
    config->load.selection_tolerance = tolerance;
  }
  if (py::isinstance<py::str>(selection_budget_ms)) {
    if (selection_budget_ms.cast<std::string>() != "auto") {
      argument_error("selection_budget_ms must be a number of ms >= 0 or \"auto\", not \"" +
                     selection_budget_ms.cast<std::string>() + "\"");
    }
    config->load.selection_budget_ms = LoadOptions::kSelectionBudgetAuto;
  } else if (!selection_budget_ms.is_none()) {
    const double budget = number(selection_budget_ms, "selection_budget_ms");
    if (budget < 0) {
      argument_error("selection_budget_ms must be a number of ms >= 0 or \"auto\", not " +
                     py::repr(selection_budget_ms).cast<std::string>());
    }
    check(LoadOptions::check_selection_budget_ms(budget));
    config->load.selection_budget_ms = budget;
  }
  config->load.selection_lower_precision = selection_lower_precision;
  if (!startup_backend.is_none()) {
    if (!py::isinstance<py::str>(startup_backend))
      argument_error(
          "startup_backend must be a str (a backend name, \"auto\", or \"\" for "
          "none), not a " +
          type_name(startup_backend));
    check(config->load.set_startup_backend(startup_backend.cast<std::string>()));
  }
  if (!on_execute_failure.is_none()) {
    if (!py::isinstance<py::str>(on_execute_failure))
      argument_error("on_execute_failure must be a str (fail, fallback), not a " +
                     type_name(on_execute_failure));
    Result<OnExecuteFailure> parsed =
        parse_on_execute_failure(on_execute_failure.cast<std::string>());
    if (!parsed.ok()) throw StatusError(parsed.status());
    config->load.on_execute_failure = *parsed;
  }
  config->load.lenient_options = lenient;
  config->load.backend_options = &config->backend_options;
  config->load.delegate_options = &config->delegate_options;

  // Symbols neither given nor fixed by their bounds follow the inputs. The first load gives
  // them their lower bound; the configuration kept for reloads leaves them out.
  std::vector<std::string> free_symbols;
  LoadOptions initial = config->load;
  if (m->symbols() != nullptr) {
    for (const fb::Symbol* s : *m->symbols()) {
      const std::string sym = s->name()->str();
      bool given = false;
      for (const std::string& g : given_dims) given = given || g == sym;
      if (given || s->min() == s->max()) continue;
      free_symbols.push_back(sym);
      check(initial.set_dim(sym, s->min()));
    }
  }
  auto method =
      std::make_unique<PyMethod>(p.state, name, std::move(config), std::move(free_symbols));
  Status st;
  {
    py::gil_scoped_release release;
    st = method->load_initial(initial);
  }
  check(st);
  return method;
}

}  // namespace

// --- construction ----------------------------------------------------------------------------

PyProgram PyProgram::from_path(const std::string& path) {
  auto state = std::make_shared<ProgramState>();
  state->source = "'" + path + "'";
  Status st;
  {
    py::gil_scoped_release release;
    Result<MmapDataLoader> loader = MmapDataLoader::from(path.c_str());
    if (!loader.ok()) {
      st = loader.status();
    } else {
      state->mmap.emplace(std::move(loader).value());
      Result<Program> program = Program::load(&*state->mmap);
      if (program.ok()) {
        state->program.emplace(std::move(program).value());
      } else {
        st = program.status().with_prefix(path);
      }
    }
  }
  check(st);
  PyProgram p;
  p.state = std::move(state);
  return p;
}

PyProgram PyProgram::from_bytes(const void* data, size_t size, std::string source) {
  auto state = std::make_shared<ProgramState>();
  state->source = std::move(source);
  const size_t alloc = (size + 63) / 64 * 64;
  state->buffer.reset(static_cast<uint8_t*>(std::aligned_alloc(64, alloc == 0 ? 64 : alloc)));
  if (!state->buffer)
    throw StatusError(Status::error(Error::MemoryAllocationFailed,
                                    "cannot allocate %zu bytes for the program", size));
  if (size > 0) std::memcpy(state->buffer.get(), data, size);
  state->buffer_loader.emplace(state->buffer.get(), size);
  Result<Program> program = Program::load(&*state->buffer_loader);
  check(program.ok() ? Status::ok() : program.status());
  state->program.emplace(std::move(program).value());
  PyProgram p;
  p.state = std::move(state);
  return p;
}

namespace {

py::dict delegate_dict(const DelegateInfo& d) {
  py::dict out;
  out["id"] = std::string(d.id);
  out["backend"] = std::string(d.backend);
  out["requested_backend"] = std::string(d.requested_backend);
  out["reason"] = std::string(d.reason);
  out["nodes"] = d.num_nodes;
  out["execute_fallbacks"] = d.execute_fallbacks;
  out["execute_fallback_reason"] = std::string(d.execute_fallback_reason);
  py::list options;
  if (d.options != nullptr) {
    for (size_t k = 0; k < d.options->size(); ++k) {
      const BackendOption& o = d.options->option(k);
      py::dict entry;
      const char* key = d.options->spec(k).key;
      entry["key"] = std::string(key);
      entry["value"] = option_value(o);
      entry["source"] = std::string(option_level_name(d.options->source(k)));
      entry["origin"] = o.origin().empty() ? py::object(py::none())
                                           : py::object(py::str(std::string(o.origin())));
      const DerivedValue* derived = d.derived != nullptr ? d.derived->find(key) : nullptr;
      entry["resolved"] = derived ? py::object(py::str(derived->value)) : py::object(py::none());
      entry["reason"] = derived ? py::object(py::str(derived->reason)) : py::object(py::none());
      options.append(entry);
    }
  }
  out["options"] = options;
  // Derived values that are not options (xnnpack's thread_pool).
  py::list derived;
  for (size_t k = 0; d.derived != nullptr && k < d.derived->size(); ++k) {
    const DerivedValue& v = (*d.derived)[k];
    if (d.options != nullptr && d.options->find(v.key) >= 0) continue;
    py::dict entry;
    entry["key"] = std::string(v.key);
    entry["value"] = std::string(v.value);
    entry["reason"] = std::string(v.reason);
    derived.append(entry);
  }
  out["derived"] = derived;
  py::dict selection;
  selection["mode"] = std::string(d.selection.mode);
  selection["cached"] = d.selection.cached;
  selection["disturbed_measurements"] = d.selection.disturbed_measurements;
  selection["summary"] = std::string(d.selection.summary);
  py::list candidates;
  for (size_t c = 0; c < d.selection.num_candidates; ++c) {
    const SelectionCandidate& k = d.selection.candidates[c];
    py::dict entry;
    entry["backend"] = std::string(k.backend);
    entry["options"] = std::string(k.options);
    entry["median_ms"] = k.median_ms;
    entry["runs"] = k.runs;
    entry["disturbed_runs"] = k.disturbed_runs;
    entry["init_ms"] = k.init_ms;
    entry["alone_init_ms"] = k.alone_init_ms;
    entry["accepted"] = k.accepted;
    entry["chosen"] = k.chosen;
    entry["reason"] = std::string(k.reason);
    candidates.append(entry);
  }
  selection["candidates"] = candidates;
  if (d.selection.method.checked) {
    const MethodSelection& m = d.selection.method;
    py::list uniform;
    for (size_t u = 0; u < m.num_uniform; ++u) {
      py::dict a;
      a["backend"] = std::string(m.uniform[u].backend);
      a["ms"] = m.uniform[u].runs > 0 ? py::object(py::float_(m.uniform[u].ms)) : py::none();
      a["runs"] = m.uniform[u].runs;
      a["reason"] = std::string(m.uniform[u].reason);
      uniform.append(a);
    }
    py::dict method;
    method["mixed_ms"] = m.mixed_ms;
    method["mixed_runs"] = m.mixed_runs;
    method["uniform"] = uniform;
    method["chosen"] = std::string(m.chosen);
    method["reason"] = std::string(m.reason);
    method["budget_cut"] = m.budget_cut;
    method["reinit_ms"] = m.reinit_ms;
    selection["method"] = method;
  } else {
    selection["method"] = py::none();
  }
  out["selection"] = selection;
  const StartupReport& st = d.startup;
  if (st.backend[0] != '\0') {
    py::dict startup;
    startup["backend"] = std::string(st.backend);
    startup["target"] = std::string(st.target);
    startup["state"] = std::string(st.state);
    startup["reason"] = std::string(st.reason);
    py::dict executes;
    executes[py::str(st.backend)] = st.startup_executes;
    executes[py::str(st.target)] = st.target_executes;
    startup["executes"] = executes;
    startup["switched_at_execute"] = st.switched_at_execute >= 0
                                         ? py::object(py::int_(st.switched_at_execute))
                                         : py::object(py::none());
    startup["switched_after_ms"] = st.switched_at_execute >= 0
                                       ? py::object(py::float_(st.switched_after_ms))
                                       : py::object(py::none());
    startup["build_ms"] = st.build_ms;
    startup["failure"] = std::string(st.failure);
    out["startup"] = startup;
  } else {
    out["startup"] = py::none();
  }
  out["startup_reason"] = std::string(st.reason);
  return out;
}

py::dict policy_dict(const PolicyDecision& p) {
  py::dict out;
  out["requested"] = std::string(policy_name(p.requested));
  out["effective"] = std::string(policy_name(p.effective));
  out["reason"] = std::string(p.reason);
  out["threads"] = p.threads;
  out["threads_reason"] = std::string(p.threads_reason);
  out["yield_workers"] = p.yield_workers;
  out["expensive_load_transforms"] = p.expensive_load_transforms;
  return out;
}

ExecuteOptions build_execute_options(py::handle execute_options) {
  ExecuteOptions out;
  for_each_option(execute_options, "execute_options",
                  [&](const std::string& target, const BackendOption& o) {
                    check(out.set_options(target, Span<const BackendOption>(&o, 1)));
                  });
  return out;
}

}  // namespace

void bind_program(py::module_& m) {
  py::class_<PyProgram>(m, "Program",
                        R"doc(A verified Tessera program (.tsr). Immutable once loaded; load_method
may be called any number of times, from any thread.)doc")
      .def_static(
          "load",
          [](py::object source) {
            if (py::isinstance<py::bytes>(source) || py::isinstance<py::bytearray>(source) ||
                py::isinstance<py::memoryview>(source)) {
              py::buffer_info info = py::reinterpret_borrow<py::buffer>(source).request();
              return PyProgram::from_bytes(info.ptr, static_cast<size_t>(info.size * info.itemsize),
                                           "<bytes>");
            }
            py::object fspath = py::module_::import("os").attr("fspath");
            py::object path;
            try {
              path = fspath(source);
            } catch (py::error_already_set&) {
              argument_error("Program.load takes a path (str or os.PathLike) or bytes, not a " +
                             type_name(source));
            }
            if (!py::isinstance<py::str>(path))
              argument_error("Program.load: give the path as str, not bytes");
            return PyProgram::from_path(path.cast<std::string>());
          },
          py::arg("source"),
          "Loads and verifies a program from a file path (memory-mapped) or from bytes (copied).")
      .def_property_readonly("method_names", &method_names, "Names of the program's methods.")
      .def_property_readonly(
          "compile_report", [](const PyProgram& p) { return p.compile_report; },
          "The compiler's report (dict) for a program made by tessera.compile; else None.")
      .def_property_readonly("closed", [](const PyProgram& p) { return p.state->closed; })
      .def(
          "load_method",
          [](PyProgram& p, py::handle name, py::object options, py::object delegate_options,
             py::object dims, py::object retarget, py::object fallback, py::object policy,
             py::handle lenient, py::object selection, py::object selection_cache_dir,
             py::object selection_cache_max_kb, py::object selection_tolerance,
             py::object selection_budget_ms, py::object selection_runs_per_load,
             py::handle selection_lower_precision, py::object startup_backend,
             py::object on_execute_failure) {
            return load_method(p, str_arg(name, "name"), options, delegate_options, dims, retarget,
                               fallback, policy, bool_arg(lenient, "lenient"), selection,
                               selection_cache_dir, selection_cache_max_kb, selection_tolerance,
                               selection_budget_ms, selection_runs_per_load,
                               bool_arg(selection_lower_precision, "selection_lower_precision"),
                               startup_backend, on_execute_failure);
          },
          py::arg("name") = "forward", py::kw_only(), py::arg("options") = py::none(),
          py::arg("delegate_options") = py::none(), py::arg("dims") = py::none(),
          py::arg("retarget") = py::none(), py::arg("fallback") = py::none(),
          py::arg("policy") = py::none(), py::arg("lenient") = py::bool_(false),
          py::arg("selection") = py::none(), py::arg("selection_cache_dir") = py::none(),
          py::arg("selection_cache_max_kb") = py::none(),
          py::arg("selection_tolerance") = py::none(), py::arg("selection_budget_ms") = py::none(),
          py::arg("selection_runs_per_load") = py::none(),
          py::arg("selection_lower_precision") = py::bool_(false),
          py::arg("startup_backend") = py::none(), py::arg("on_execute_failure") = py::none(),
          R"doc(Loads method `name` and initialises its delegates.

options: load-scope backend options, {"xnnpack.num_threads": 2} or {"xnnpack": {"num_threads": 2}}
    (a target with '#', such as "xnnpack#0", is one delegate).
delegate_options: per-delegate options, {"xnnpack#0.num_threads": 1} or {"xnnpack#0": {...}}.
dims: values of symbolic dims, {"batch": 4}; symbols not given follow the inputs' shapes.
retarget: {"xnnpack": "portable"} or "xnnpack=portable": run delegates compiled for one backend on another.
fallback: ["opencl", "xnnpack", "portable"] or "opencl,xnnpack,portable".
policy: "auto", "latency", "balanced" or "power_saver".
lenient: unknown option keys warn and are skipped instead of failing.
selection: "auto" (default), "fixed" or "measure": how each delegate's backend is chosen (a
    program compiled without backends is measured once per machine and remembered).
selection_cache_dir: where measured choices are remembered (default ~/.cache/tessera/selection
    or $XDG_CACHE_HOME's); "" disables it.
selection_cache_max_kb: size bound of that directory's entries in KiB (default 16384; 0: none):
    after a load writes an entry, the least recently used are removed until they fit.
selection_tolerance: a measured candidate whose outputs differ from the reference's by more than
    this times the reference's max |value| is rejected (default 1e-4).
selection_budget_ms: time one delegate's measurement may spend, inits and runs, before option
    variants and backends nobody listed are skipped; "auto" (the default): its runs may take
    twice the first candidate's init (what a fixed load spends on the delegate).
selection_runs_per_load: how many runs the application makes per load (default 100): the
    fastest backend is kept unless another one's init plus this many runs comes to at least 3%
    less, and an option variant whose init takes longer than the chosen configuration's must repay the difference within these runs,
    by what it saves per run, or it is not taken.
selection_lower_precision: option values that lower precision (oneDNN precision="bf16") are
    measured too; they must still pass selection_tolerance, so raise it as well (bf16: ~1e-2).
startup_backend: "xnnpack", "onednn" or "auto": a delegate whose backend would compile device
    code now (OpenCL without its programs cached) runs on this CPU backend while that compiles
    in the background, and moves over between two calls once it is ready (see
    Method.wait_for_startup and each delegate's "startup").
on_execute_failure: "fail" (default: the error is raised) or "fallback": when a delegate's backend
    fails while running, the delegate moves to the next backend of `fallback` and runs again once
    in the same call; Method.delegates reports the move (execute_fallbacks,
    execute_fallback_reason).)doc")
      .def(
          "save",
          [](PyProgram& p, py::object path) {
            p.state->check_open();
            Span<const uint8_t> data =
                p.state->mmap ? p.state->mmap->data() : p.state->buffer_loader->data();
            py::bytes bytes(reinterpret_cast<const char*>(data.data()), data.size());
            py::module_::import("pathlib")
                .attr("Path")(py::module_::import("os").attr("fspath")(path))
                .attr("write_bytes")(bytes);
          },
          py::arg("path"), "Writes the program file to `path`.")
      .def(
          "close", [](PyProgram& p) { p.state->closed = true; },
          "Closes the program: later calls on it, and on Methods loaded from it, raise StateError.")
      .def(
          "__enter__", [](PyProgram& p) -> PyProgram& { return p; },
          py::return_value_policy::reference)
      .def("__exit__", [](PyProgram& p, py::args) { p.state->closed = true; })
      .def("__repr__", [](const PyProgram& p) {
        if (p.state->closed) return "<tessera.Program " + p.state->source + " (closed)>";
        std::string names;
        for (size_t i = 0; i < p.state->program->num_methods(); ++i) {
          names += (i ? ", " : "") + std::string(take(p.state->program->method_name(i)));
        }
        return "<tessera.Program " + p.state->source + " methods: " + names + ">";
      });

  py::class_<PyMethod>(m, "Method",
                       R"doc(A loaded method. Call it with NumPy arrays: method(x), method(x=x) or
method.run([x], execute_options=...). One call at a time per Method (calls from several threads
are serialised); separate Methods run concurrently.)doc")
      .def("__call__",
           [](PyMethod& self, py::args args, py::kwargs named) {
             return self.call(std::move(args), std::move(named), ExecuteOptions::none());
           })
      .def(
          "run",
          [](PyMethod& self, py::object inputs, py::object execute_options) {
            ExecuteOptions exec = build_execute_options(execute_options);
            if (PyDict_Check(inputs.ptr())) {
              return self.call(py::args(py::tuple()), py::reinterpret_borrow<py::kwargs>(inputs),
                               exec);
            }
            if (py::isinstance<py::list>(inputs) || py::isinstance<py::tuple>(inputs)) {
              return self.call(py::args(py::tuple(inputs)), py::kwargs(), exec);
            }
            return self.call(py::args(py::make_tuple(inputs)), py::kwargs(), exec);
          },
          py::arg("inputs"), py::arg("execute_options") = py::none(),
          R"doc(Runs the method. `inputs`: a list of arrays in input order, a dict by input name, or one
array. `execute_options`: per-call options of execute-scoped keys, in either dict form.
Returns a list of new arrays.)doc")
      .def_property_readonly("name", [](const PyMethod& self) { return self.name_; })
      .def_property_readonly(
          "inputs", [](const PyMethod& self) { return self.describe(self.inputs_); },
          "TensorInfo(name, dtype, shape) per input; symbolic dims by name.")
      .def_property_readonly(
          "outputs", [](const PyMethod& self) { return self.describe(self.outputs_); },
          "TensorInfo(name, dtype, shape) per output; symbolic dims by name.")
      .def_property_readonly(
          "delegates",
          [](const PyMethod& self) {
            auto current = self.current();
            const Method& method = current.method;
            py::list out;
            for (size_t i = 0; i < method.num_delegates(); ++i)
              out.append(delegate_dict(method.delegate_info(i)));
            return out;
          },
          "Per delegate: id, backend, requested_backend, reason, nodes, options: [{key, value, "
          "source, origin, resolved, reason}] (resolved and reason: what the backend derived for a "
          "value left at auto, else None), derived: [{key, value, reason}] (derived values that "
          "are not options, such as xnnpack's thread_pool), selection: {mode, cached, "
          "disturbed_measurements, "
          "summary, "
          "candidates: [{backend, median_ms, runs, disturbed_runs, init_ms, alone_init_ms, "
          "accepted, chosen, "
          "reason}], "
          "method: None or {mixed_ms, mixed_runs, uniform: [{backend, ms, runs, reason}], chosen, "
          "reason, budget_cut, reinit_ms}}, startup: None or "
          "{backend, "
          "target, state, reason, executes: {backend: count}, switched_at_execute, "
          "switched_after_ms, build_ms, failure} (startup_backend), and startup_reason.")
      .def(
          "wait_for_startup",
          [](const PyMethod& self, py::object timeout_ms) {
            double timeout = -1;
            if (!timeout_ms.is_none()) {
              if (!py::isinstance<py::float_>(timeout_ms) && !py::isinstance<py::int_>(timeout_ms))
                argument_error("timeout_ms must be a number or None, not a " +
                               type_name(timeout_ms));
              timeout = timeout_ms.cast<double>();
            }
            auto current = self.current();
            // Under the method's lock, like a call: the Method is not used elsewhere meanwhile.
            Method& method = const_cast<Method&>(current.method);
            py::gil_scoped_release release;
            return method.wait_for_startup(timeout);
          },
          py::arg("timeout_ms") = py::none(),
          "Waits (at most timeout_ms; None: no limit) for delegates started on a startup backend "
          "to have their own backend ready, and moves them to it; True when none is pending.")
      .def_property_readonly(
          "policy",
          [](const PyMethod& self) { return policy_dict(self.current().method.policy()); })
      .def_property_readonly(
          "dims",
          [](const PyMethod& self) {
            auto current = self.current();
            const Method& method = current.method;
            py::dict out;
            const fb::Method* m = self.fb_method();
            if (m->symbols() != nullptr) {
              for (const fb::Symbol* s : *m->symbols()) {
                out[py::str(s->name()->str())] = take(method.symbol_value(s->name()->str()));
              }
            }
            return out;
          },
          "Current values of the symbolic dims (those of the last call's inputs).")
      .def_property_readonly(
          "symbols",
          [](const PyMethod& self) {
            self.check_open();
            py::dict out;
            const fb::Method* m = self.fb_method();
            if (m->symbols() != nullptr) {
              for (const fb::Symbol* s : *m->symbols())
                out[py::str(s->name()->str())] = py::make_tuple(s->min(), s->max());
            }
            return out;
          },
          "Bounds (min, max) of each symbolic dim, as compiled.")
      .def_property_readonly(
          "arena_bytes", [](const PyMethod& self) { return self.current().method.arena_bytes(); })
      .def_property_readonly(
          "closed", [](const PyMethod& self) { return self.closed_ || self.program_->closed; })
      .def("close", &PyMethod::close,
           "Releases the method's delegates and memory; later calls raise StateError.")
      .def(
          "__enter__", [](PyMethod& self) -> PyMethod& { return self; },
          py::return_value_policy::reference)
      .def("__exit__", [](PyMethod& self, py::args) { self.close(); })
      .def("__repr__", [](const PyMethod& self) {
        return "<tessera.Method '" + self.name_ + "' inputs: " + self.input_list() +
               (self.closed_ ? " (closed)>" : ">");
      });
}

}  // namespace tessera::python
