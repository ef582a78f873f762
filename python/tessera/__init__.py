"""Tessera for Python: compile a model (ONNX file or torch.nn.Module) into a Tessera program,
load its methods with runtime-derived backend options, and run them on NumPy arrays.

    import tessera, torch, torchvision
    model = torchvision.models.mobilenet_v2().eval()
    program = tessera.compile(model, example_inputs=torch.randn(1, 3, 224, 224), dims={"batch": (1, 8)})
    method = program.load_method(options={"xnnpack": {"num_threads": 2}})
    (logits,) = method(np.random.rand(4, 3, 224, 224).astype(np.float32))

See docs/python.md.
"""

import json as _json

from tessera._errors import (ArgumentError, DelegateError, DTypeConversionWarning, DTypeError,
                             Error, NotFoundError, NotSupportedError, OptionError, ProgramError,
                             ResourceError, ShapeError, StateError)
from tessera._types import TensorInfo
from tessera import _tessera
from tessera._tessera import (Method, Program, backend_available, get_global_option,
                              list_backends, list_options, reset_global_options,
                              set_global_option, set_global_options)
from tessera._compile import compile

__version__ = _tessera.__version__


def device_info():
    """What Tessera detects on this machine, as a dict: the fields of
    ``tessera-run --device-info --json`` (usable CPUs, clusters, caches, ISA, memory, power,
    thermal state, load, OpenCL devices)."""
    return _json.loads(_tessera.device_info_json())


__all__ = [
    "__version__", "device_info", "list_backends", "list_options", "backend_available",
    "set_global_option", "set_global_options", "get_global_option", "reset_global_options",
    "compile", "Program", "Method", "TensorInfo",
    "Error", "StateError", "ArgumentError", "NotSupportedError", "DTypeError", "ProgramError",
    "ShapeError", "NotFoundError", "ResourceError", "DelegateError", "OptionError",
    "DTypeConversionWarning",
]
