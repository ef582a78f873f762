// The tessera._tessera extension module: the C++ runtime (and, when built, the ONNX compiler)
// for Python. The tessera package (python/tessera) re-exports it with the Pythonic parts.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "python/src/compile.h"
#include "python/src/errors.h"
#include "python/src/options.h"
#include "python/src/program.h"
#include "tessera/backend/device_info.h"
#include "tessera/backend/global_options.h"
#include "tessera/backend/option_schema.h"
#include "tessera/backend/registry.h"

namespace py = pybind11;

namespace tessera::python {
namespace {

BackendInterface* backend_or_throw(const std::string& name) {
  Result<BackendInterface*> b = get_backend(name);
  if (!b.ok()) {
    // The registry says NotFound; for options it is the option family's unknown backend.
    throw StatusError(Status(Error::OptionUnknownBackend, b.status().message()));
  }
  return *b;
}

py::list schema_list(BackendInterface* b) {
  py::list out;
  for (const OptionSpec& s : b->option_schema()) {
    py::dict e;
    e["key"] = std::string(s.key);
    e["type"] = std::string(option_type_name(s.type));
    e["default"] = option_value(s.default_option());
    e["min"] = py::none();
    e["max"] = py::none();
    e["choices"] = py::none();
    e["max_length"] = py::none();
    switch (s.type) {
      case OptionType::Int:
        e["min"] = s.min_int;
        e["max"] = s.max_int;
        break;
      case OptionType::Double:
        e["min"] = s.min_double;
        e["max"] = s.max_double;
        break;
      case OptionType::Enum: {
        py::list choices;
        for (const char* c : s.choices) choices.append(std::string(c));
        e["choices"] = choices;
        break;
      }
      case OptionType::String:
        e["max_length"] = s.max_length;
        break;
      case OptionType::Bool:
        break;
    }
    py::list scopes;
    for (OptionLevel scope : kScopeLevels) {
      if (s.allows(scope)) scopes.append(std::string(option_level_name(scope)));
    }
    e["scopes"] = scopes;
    e["init_only"] = s.is_init_only;
    e["doc"] = std::string(s.doc);
    out.append(e);
  }
  return out;
}

}  // namespace
}  // namespace tessera::python

PYBIND11_MODULE(_tessera, m) {
  using namespace tessera;
  using namespace tessera::python;
  m.doc() = "Tessera's C++ runtime and compiler (use the tessera package).";
  register_errors();
  m.attr("__version__") = TESSERA_VERSION_STRING;

  m.def(
      "device_info_json",
      [] {
        std::string json;
        {
          py::gil_scoped_release release;
          json = DeviceInfo::get().to_json(/*with_opencl=*/true);
        }
        return json;
      },
      "DeviceInfo of this machine as JSON (the fields of tessera-run --device-info --json).");

  m.def(
      "list_backends",
      [](py::handle available_only_arg) {
        const bool available_only = bool_arg(available_only_arg, "available_only");
        std::vector<std::string> out;
        for (const std::string& name : registered_backends()) {
          if (!available_only || (*get_backend(name))->is_available()) out.push_back(name);
        }
        return out;
      },
      py::kw_only(), py::arg("available_only") = py::bool_(false),
      "Names of the registered backends, sorted (with available_only: those that can run on this "
      "machine).");

  m.def(
      "backend_available",
      [](py::handle name) {
        BackendInterface* b = backend_or_throw(str_arg(name, "backend"));
        py::dict out;
        out["available"] = b->is_available();
        const char* why = b->is_available() ? "" : b->unavailable_reason();
        out["reason"] = std::string(why ? why : "");
        return out;
      },
      py::arg("backend"));

  m.def(
      "list_options",
      [](py::object backend) -> py::object {
        if (!backend.is_none()) return schema_list(backend_or_throw(str_arg(backend, "backend")));
        py::dict out;
        for (const std::string& name : registered_backends())
          out[py::str(name)] = schema_list(*get_backend(name));
        return out;
      },
      py::arg("backend") = py::none(),
      "Option schemas: for one backend a list of dicts (key, type, default, min, max, choices, "
      "max_length, scopes, init_only, doc); for None a dict of them by backend.");

  m.def(
      "set_global_option",
      [](py::handle backend_arg, py::handle key_arg, py::handle value) {
        const std::string backend = str_arg(backend_arg, "backend");
        const std::string key = str_arg(key_arg, "key");
        backend_or_throw(backend);
        BackendOption option = to_option(backend, key, value);
        check(set_option(backend, Span<const BackendOption>(&option, 1)));
      },
      py::arg("backend"), py::arg("key"), py::arg("value"),
      "Sets a global (per backend) option; validated against the backend's schema. Init-only "
      "options fail with StateError once the backend has started.");

  m.def(
      "set_global_options",
      [](py::handle options) {
        // All validated before any is set, as the runtime's set_option does per backend.
        std::vector<std::pair<std::string, std::vector<BackendOption>>> by_backend;
        for_each_option(options, "options", [&](const std::string& target, const BackendOption& o) {
          backend_or_throw(target);
          for (auto& entry : by_backend) {
            if (entry.first == target) {
              entry.second.push_back(o);
              return;
            }
          }
          by_backend.push_back({target, {o}});
        });
        for (auto& [backend, opts] : by_backend) {
          Result<BackendInterface*> b = get_backend(backend);
          for (const BackendOption& o : opts)
            check(validate_option(backend, (*b)->option_schema(), o, OptionLevel::Global));
        }
        for (auto& [backend, opts] : by_backend) {
          check(set_option(backend, Span<const BackendOption>(opts.data(), opts.size())));
        }
      },
      py::arg("options"), "Sets global options given in either dict form.");

  m.def(
      "get_global_option",
      [](py::handle backend_arg, py::handle key_arg) {
        const std::string backend = str_arg(backend_arg, "backend");
        const std::string key = str_arg(key_arg, "key");
        backend_or_throw(backend);
        BackendOption option;
        check(option.set_key(key));
        check(get_option(backend, Span<BackendOption>(&option, 1)));
        return option_value(option);
      },
      py::arg("backend"), py::arg("key"),
      "The global value of an option: the one set, else the schema default.");

  m.def(
      "reset_global_options",
      [](py::handle backend_arg) {
        const std::string backend = str_arg(backend_arg, "backend");
        backend_or_throw(backend);
        check(reset_backend_options(backend));
      },
      py::arg("backend"), "Forgets the global options of `backend` (back to the schema defaults).");

  bind_program(m);
  bind_compile(m);
}
