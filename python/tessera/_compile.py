"""tessera.compile: an ONNX file (or its bytes) or a torch.nn.Module into a Tessera Program. The
compiler runs in-process (the extension module); a module is first exported to ONNX with
torch.onnx.export into a temporary directory."""

import inspect
import os
import tempfile

from tessera import _tessera
from tessera._errors import ArgumentError


def _dim_bounds(dims):
    if dims is None:
        return []
    if not isinstance(dims, dict):
        raise ArgumentError(f"dims must be a dict such as {{'batch': (1, 8)}}, not a {type(dims).__name__}",
                            "InvalidArgument", 0x12)
    out = []
    for name, bound in dims.items():
        if not isinstance(name, str) or not name:
            raise ArgumentError(f"dims: key {name!r} is not a dim name", "InvalidArgument", 0x12)
        if isinstance(bound, int) and not isinstance(bound, bool):
            lo = hi = bound
        elif (isinstance(bound, (tuple, list)) and len(bound) == 2
              and all(isinstance(b, int) and not isinstance(b, bool) for b in bound)):
            lo, hi = bound
        else:
            raise ArgumentError(f"dims['{name}'] must be (min, max) or an int, not {bound!r}",
                                "InvalidArgument", 0x12)
        if not 1 <= lo <= hi:
            raise ArgumentError(f"dims['{name}'] = ({lo}, {hi}): need 1 <= min <= max",
                                "InvalidArgument", 0x12)
        out.append((name, lo, hi))
    return out


def _backend_list(backends):
    if backends is None:
        return []
    if isinstance(backends, str):
        return [b for b in backends.split(",") if b]
    if isinstance(backends, (list, tuple)) and all(isinstance(b, str) for b in backends):
        return list(backends)
    raise ArgumentError(f"backends must be a list of backend names or a comma-separated str, not {backends!r}",
                        "InvalidArgument", 0x12)


def _spec_list(specs):
    if specs is None:
        return []
    if isinstance(specs, dict):
        out = []
        for target, value in specs.items():
            if isinstance(value, dict):
                out += [f"{target}.{k}={_spec_text(v)}" for k, v in value.items()]
            else:
                out.append(f"{target}={_spec_text(value)}")
        return out
    raise ArgumentError(f"specs must be a dict such as {{'xnnpack.num_threads': 2}}, not {specs!r}",
                        "InvalidArgument", 0x12)


def _spec_text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _export_torch(model, example_inputs, dims, opset, path, dynamic_axes):
    import torch

    if example_inputs is None:
        raise ArgumentError("compiling a torch.nn.Module needs example_inputs (a tensor or a tuple of tensors)",
                            "InvalidArgument", 0x12)
    if not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    args = tuple(torch.from_numpy(x) if not isinstance(x, torch.Tensor) and hasattr(x, "__array__")
                 else x for x in example_inputs)
    params = [p for p in inspect.signature(model.forward).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    input_names = [p.name for p in params[:len(args)]]
    input_names += [f"input_{i}" for i in range(len(input_names), len(args))]
    with torch.no_grad():
        result = model(*args)
    results = result if isinstance(result, (tuple, list)) else (result,)
    output_names = ["output"] if len(results) == 1 else [f"output_{i}" for i in range(len(results))]
    if dynamic_axes is None and dims:
        # The i-th dim named in `dims` is axis i of every input and output (batch, then seq, ...).
        dynamic_axes = {}
        for name, tensor in list(zip(input_names, args)) + list(zip(output_names, results)):
            rank = tensor.dim() if isinstance(tensor, torch.Tensor) else 0
            axes = {axis: sym for axis, (sym, _, _) in enumerate(dims) if axis < rank}
            if axes:
                dynamic_axes[name] = axes
    # With autograd on, modules such as TransformerEncoderLayer stay off fused fast paths that
    # have no ONNX form.
    with torch.enable_grad():
        torch.onnx.export(model, args, path, input_names=input_names, output_names=output_names,
                          opset_version=opset, do_constant_folding=True,
                          dynamic_axes=dynamic_axes or None)


def compile(model, output=None, *, dims=None, backends=None, example_inputs=None, opset=17,
            specs=None, dynamic_axes=None, method="forward"):
    """Compiles a model into a Program.

    model: a path to an .onnx file, the serialized ONNX model as bytes, or a torch.nn.Module
        (exported with torch.onnx.export on ``example_inputs`` at ``opset``).
    output: when given, the program file (.tsr) is also written there.
    dims: bounds of symbolic dims, {"batch": (1, 8)} (or {"batch": 4} for one value). For an
        ONNX model they bound the model's named dims; for a module, the i-th name becomes axis i
        of every input and output unless ``dynamic_axes`` (torch.onnx.export's form) says
        otherwise.
    backends: delegate backends in order of preference ("xnnpack,onednn" or a list); None: every
        CPU backend built; ["portable"]: kernels only.
    specs: compile specs baked into the program, {"xnnpack.num_threads": 2} or
        {"xnnpack": {"num_threads": 2}}.

    The compiler runs in this process with the GIL released. Raises ProgramError (invalid
    model), NotSupportedError (an op outside the IR), ArgumentError (dims), NotFoundError.
    """
    bounds = _dim_bounds(dims)
    backend_names = _backend_list(backends)
    spec_texts = _spec_list(specs)
    if isinstance(model, (bytes, bytearray, memoryview)):
        program = _tessera.compile_onnx(bytes(model), bounds, backend_names, spec_texts, method)
    elif isinstance(model, (str, os.PathLike)):
        program = _tessera.compile_onnx(os.fspath(model), bounds, backend_names, spec_texts, method)
    else:
        try:
            import torch
        except ImportError:  # pragma: no cover - torch is optional
            torch = None
        if torch is None or not isinstance(model, torch.nn.Module):
            raise ArgumentError("model must be a path to an .onnx file, ONNX bytes or a torch.nn.Module, "
                                f"not a {type(model).__name__}", "InvalidArgument", 0x12)
        with tempfile.TemporaryDirectory(prefix="tessera-") as tmp:
            path = os.path.join(tmp, "model.onnx")
            _export_torch(model, example_inputs, bounds, opset, path, dynamic_axes)
            program = _tessera.compile_onnx(path, bounds, backend_names, spec_texts, method)
    if output is not None:
        program.save(os.fspath(output))
    return program
