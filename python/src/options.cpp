#include "python/src/options.h"

#include "python/src/errors.h"
#include "tessera/backend/option_schema.h"
#include "tessera/backend/options_map.h"
#include "tessera/backend/registry.h"

namespace py = pybind11;

namespace tessera::python {
namespace {

const OptionSpec* find_spec(std::string_view backend, std::string_view key) {
  Result<BackendInterface*> b = get_backend(backend_of_delegate_id(backend));
  if (!b.ok()) return nullptr;
  Span<const OptionSpec> schema = (*b)->option_schema();
  int i = find_option_spec(schema, key);
  return i < 0 ? nullptr : &schema[static_cast<size_t>(i)];
}

[[noreturn]] void not_a_value(std::string_view backend, std::string_view key, py::handle value) {
  std::string type = py::str(py::type::handle_of(value).attr("__name__"));
  throw StatusError(Status::error(
      Error::OptionTypeMismatch,
      "%.*s: option '%.*s': a Python %s is not an option value (give a bool, int, float or str)",
      static_cast<int>(backend.size()), backend.data(), static_cast<int>(key.size()), key.data(),
      type.c_str()));
}

}  // namespace

std::string str_arg(py::handle value, const char* what) {
  if (!py::isinstance<py::str>(value)) {
    std::string type = py::str(py::type::handle_of(value).attr("__name__"));
    throw StatusError(
        Status::error(Error::InvalidArgument, "%s must be a str, not a %s", what, type.c_str()));
  }
  return value.cast<std::string>();
}

bool bool_arg(py::handle value, const char* what) {
  if (!py::isinstance<py::bool_>(value)) {
    std::string type = py::str(py::type::handle_of(value).attr("__name__"));
    throw StatusError(
        Status::error(Error::InvalidArgument, "%s must be a bool, not a %s", what, type.c_str()));
  }
  return value.cast<bool>();
}

BackendOption to_option(std::string_view backend, std::string_view key, py::handle value) {
  BackendOption option;
  check(option.set_key(key));
  const OptionSpec* spec = find_spec(backend, key);
  if (py::isinstance<py::bool_>(value)) {
    option.set_bool(value.cast<bool>());
  } else if (PyLong_Check(value.ptr()) ||
             (PyIndex_Check(value.ptr()) && !PyFloat_Check(value.ptr()))) {
    // int, or an integer-like such as numpy.int64.
    long long v = 0;
    int overflow = 0;
    py::object as_int = py::reinterpret_steal<py::object>(PyNumber_Index(value.ptr()));
    if (!as_int) {
      PyErr_Clear();  // such as a NumPy array of floats: not an option value
      not_a_value(backend, key, value);
    }
    v = PyLong_AsLongLongAndOverflow(as_int.ptr(), &overflow);
    if (overflow != 0) {
      throw StatusError(Status::error(
          Error::OptionOutOfRange, "%.*s: option '%.*s': %s does not fit in a 64-bit integer",
          static_cast<int>(backend.size()), backend.data(), static_cast<int>(key.size()),
          key.data(), std::string(py::str(value)).c_str()));
    }
    if (spec != nullptr && spec->type == OptionType::Double) {
      option.set_double(static_cast<double>(v));
    } else {
      option.set_int(v);
    }
  } else if (PyFloat_Check(value.ptr())) {
    option.set_double(PyFloat_AsDouble(value.ptr()));
  } else if (py::isinstance<py::str>(value)) {
    std::string s = value.cast<std::string>();
    if (spec != nullptr && spec->type == OptionType::Enum) {
      Status st = option.set_enum(s, spec->choice_index(s));
      if (!st.is_ok()) throw StatusError(st.with_prefix(backend));
    } else {
      Status st = option.set_string(s);
      if (!st.is_ok()) {
        throw StatusError(Status::error(st.code(), "%.*s: option '%.*s': %s",
                                        static_cast<int>(backend.size()), backend.data(),
                                        static_cast<int>(key.size()), key.data(), st.message()));
      }
    }
  } else {
    not_a_value(backend, key, value);
  }
  check(option.set_origin("python"));
  return option;
}

py::object option_value(const BackendOption& option) {
  switch (option.type()) {
    case OptionType::Bool:
      return py::bool_(option.as_bool());
    case OptionType::Int:
      return py::int_(option.as_int());
    case OptionType::Double:
      return py::float_(option.as_double());
    case OptionType::String:
    case OptionType::Enum:
      return py::str(std::string(option.as_string()));
  }
  return py::none();
}

void for_each_option(py::handle mapping, const char* what,
                     const std::function<void(const std::string&, const BackendOption&)>& add) {
  if (mapping.is_none()) return;
  if (!PyDict_Check(mapping.ptr())) {
    std::string type = py::str(py::type::handle_of(mapping).attr("__name__"));
    throw StatusError(Status::error(Error::OptionParseError,
                                    "%s must be a dict such as {\"xnnpack.num_threads\": 2} or "
                                    "{\"xnnpack\": {\"num_threads\": 2}}, not a %s",
                                    what, type.c_str()));
  }
  for (auto item : py::reinterpret_borrow<py::dict>(mapping)) {
    if (!py::isinstance<py::str>(item.first)) {
      throw StatusError(Status::error(Error::OptionParseError, "%s: key %s is not a str", what,
                                      std::string(py::repr(item.first)).c_str()));
    }
    std::string name = item.first.cast<std::string>();
    if (PyDict_Check(item.second.ptr())) {
      for (auto inner : py::reinterpret_borrow<py::dict>(item.second)) {
        if (!py::isinstance<py::str>(inner.first)) {
          throw StatusError(Status::error(Error::OptionParseError,
                                          "%s[\"%s\"]: key %s is not a str", what, name.c_str(),
                                          std::string(py::repr(inner.first)).c_str()));
        }
        add(name, to_option(name, inner.first.cast<std::string>(), inner.second));
      }
      continue;
    }
    size_t dot = name.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == name.size()) {
      throw StatusError(Status::error(
          Error::OptionParseError,
          "%s: key '%s' is neither 'backend.key' (with a value) nor a backend name (with a dict "
          "of options)",
          what, name.c_str()));
    }
    std::string target = name.substr(0, dot);
    add(target, to_option(target, std::string_view(name).substr(dot + 1), item.second));
  }
}

}  // namespace tessera::python
