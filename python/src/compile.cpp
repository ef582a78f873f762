#include "python/src/compile.h"

#include <pybind11/stl.h>

#include <string>
#include <tuple>
#include <vector>

#include "python/src/errors.h"
#include "python/src/program.h"

#ifdef TESSERA_PYTHON_HAVE_COMPILER
#include "tessera/compiler/backend_targets.h"
#include "tessera/compiler/compiler.h"
#endif

namespace py = pybind11;

namespace tessera::python {

void bind_compile(py::module_& m) {
#ifdef TESSERA_PYTHON_HAVE_COMPILER
  m.attr("has_compiler") = true;
  m.def(
      "compile_onnx",
      [](py::object model, const std::vector<std::tuple<std::string, int64_t, int64_t>>& dims,
         const std::vector<std::string>& backends, const std::vector<std::string>& specs,
         const std::string& method_name) {
        namespace tc = tessera::compiler;
        tc::CompileOptions options;
        options.method_name = method_name;
        for (const auto& [name, lo, hi] : dims)
          options.import.dims.push_back(tc::DimBound{name, lo, hi});
        for (const std::string& s : specs) options.specs.push_back(take(tc::parse_compile_spec(s)));
        options.backends = take(tc::registry_backend_targets(backends));
        // As tessera-compile: backends not named leave the program selectable (see
        // docs/usage.md, "Remembered choices").
        options.selectable = backends.empty();
        const bool from_bytes = py::isinstance<py::bytes>(model);
        std::string data = from_bytes ? model.cast<std::string>() : std::string();
        std::string path = from_bytes ? std::string() : model.cast<std::string>();
        Result<std::vector<uint8_t>> bytes = Status(Error::Internal, "not compiled");
        std::string report;
        {
          py::gil_scoped_release release;
          Result<tc::CompiledProgram> compiled = from_bytes ? [&]() -> Result<tc::CompiledProgram> {
            auto graph = tc::import_onnx(data.data(), data.size(), options.import);
            if (!graph.ok()) return graph.status();
            return tc::compile_graph(std::move(graph).value(), options);
          }()
              : tc::compile_onnx_file(path, options);
          if (compiled.ok()) {
            bytes = compiled->program.build();
            report = tc::report_to_json(compiled->report);
          } else {
            bytes = compiled.status();
          }
        }
        std::vector<uint8_t> program = take(std::move(bytes));
        PyProgram p = PyProgram::from_bytes(program.data(), program.size(), "<compiled>");
        p.compile_report = py::module_::import("json").attr("loads")(report);
        return p;
      },
      py::arg("model"), py::arg("dims"), py::arg("backends"), py::arg("specs"),
      py::arg("method") = "forward",
      "Compiles an ONNX model (a path, or the serialized model as bytes) into a Program. dims: "
      "[(name, min, max)]; backends: names in order of preference ([] = every CPU backend); specs: "
      "[\"backend.key=value\"].");
#else
  m.attr("has_compiler") = false;
  m.def("compile_onnx", [](py::args, py::kwargs) {
    throw StatusError(Status(Error::NotSupported,
                             "this tessera module was built without the compiler (libonnx-dev and "
                             "libprotobuf-dev were missing)"));
  });
#endif
}

}  // namespace tessera::python
