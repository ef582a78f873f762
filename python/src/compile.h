// tessera._tessera.compile_onnx: the ONNX compiler in-process (the Python side exports PyTorch
// modules to ONNX first; see tessera/_compile.py).
#pragma once

#include <pybind11/pybind11.h>

namespace tessera::python {

/// Defines compile_onnx (and has_compiler) in `m`. Without the compiler built, compile_onnx
/// raises NotSupportedError.
void bind_compile(pybind11::module_& m);

}  // namespace tessera::python
