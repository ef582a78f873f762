// tessera.Program and tessera.Method: a verified program file and its loaded methods, run on
// NumPy arrays. The Python objects own what the C++ API borrows (the file mapping or bytes,
// the option maps of a load), so no Python reference order can leave a dangling pointer.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tessera::python {

struct ProgramState;

/// What tessera.Program wraps.
class PyProgram {
 public:
  /// A program file, memory-mapped.
  static PyProgram from_path(const std::string& path);
  /// A copy of `bytes` (in 64-byte aligned memory, so constants are used in place).
  static PyProgram from_bytes(const void* data, size_t size, std::string source);

  std::shared_ptr<ProgramState> state;
  /// The compiler's report (a dict) for programs made by tessera.compile; None otherwise.
  pybind11::object compile_report = pybind11::none();
};

/// Defines tessera.Program, tessera.Method and their methods in `m`.
void bind_program(pybind11::module_& m);

}  // namespace tessera::python
