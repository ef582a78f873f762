#include "python/src/errors.h"

#include <pybind11/pybind11.h>

namespace py = pybind11;

namespace tessera::python {

void register_errors() {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      // tessera._errors.from_status picks the subclass; the module is imported by the package
      // before this extension, so this lookup cannot recurse into a failing import.
      const Status& st = e.status();
      py::object make = py::module_::import("tessera._errors").attr("from_status");
      py::object family = e.family() ? py::object(py::str(e.family())) : py::object(py::none());
      py::object exc =
          make(static_cast<unsigned>(st.code()), error_name(st.code()), st.message(), family);
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
    }
  });
}

}  // namespace tessera::python
