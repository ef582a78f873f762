"""Fixtures of the tessera package tests. The package is imported from the build tree
(TESSERA_BUILD_DIR, default build/, as scripts/test builds it) unless it is already importable.
The slow part, exporting and compiling the PyTorch models, happens once per session."""

import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_build = os.environ.get("TESSERA_BUILD_DIR", os.path.join(ROOT, "build"))
if os.path.isdir(os.path.join(_build, "python", "tessera")):
    sys.path.insert(0, os.path.join(_build, "python"))

import tessera  # noqa: E402


def make_onnx(path, op="Add", dims=("batch", 4), inputs=("x", "y"), dtype=None, out_dtype=None, opset=17):
    """A one-node ONNX model: out = x <op> y, each [batch, 4] (a symbol or int per dim)."""
    import onnx
    from onnx import TensorProto, helper

    dtype = TensorProto.FLOAT if dtype is None else dtype
    ins = [helper.make_tensor_value_info(n, dtype, list(dims)) for n in inputs]
    out = helper.make_tensor_value_info("out", dtype if out_dtype is None else out_dtype, list(dims))
    node = helper.make_node(op, list(inputs), ["out"], name="op")
    graph = helper.make_graph([node], "one_op", ins, [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return str(path)


@pytest.fixture(scope="session")
def add_onnx(tmp_path_factory):
    """Path of a one-Add model with a symbolic batch."""
    return make_onnx(tmp_path_factory.mktemp("onnx") / "add.onnx")


@pytest.fixture(scope="session")
def deep_mlp_onnx(tmp_path_factory):
    """Path of a 150-layer MLP ([batch, 64] through MatMul + Relu), built without PyTorch: a
    model whose compile takes a while (for the GIL tests)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes, weights, prev = [], [], "x"
    for i in range(150):
        weights.append(numpy_helper.from_array((rng.standard_normal((64, 64)) * 0.1).astype(np.float32), f"w{i}"))
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"]))
        nodes.append(helper.make_node("Relu", [f"m{i}"], [f"r{i}"]))
        prev = f"r{i}"
    graph = helper.make_graph(nodes, "deep_mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
                              [helper.make_tensor_value_info(prev, TensorProto.FLOAT, ["batch", 64])], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path_factory.mktemp("onnx") / "deep_mlp.onnx"
    onnx.save(model, str(path))
    return str(path)


@pytest.fixture(scope="session")
def add_program(add_onnx, tmp_path_factory):
    """(Program, path of its .tsr): the Add model compiled for xnnpack with batch in 1..8."""
    path = tmp_path_factory.mktemp("tsr") / "add.tsr"
    program = tessera.compile(add_onnx, path, dims={"batch": (1, 8)}, backends=["xnnpack"])
    return program, str(path)


@pytest.fixture(scope="session")
def mobilenet():
    """(torch model, Program) for torchvision's MobileNetV2 (random weights), batch 1..4."""
    torch = pytest.importorskip("torch")
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    model = torchvision.models.mobilenet_v2(weights=None)
    # Default (fan-in scaled) Linear initialisation: the torchvision head's std 0.01 makes
    # outputs tiny, which would make a relative comparison meaningless.
    for m in model.modules():
        if isinstance(m, torch.nn.Linear):
            m.reset_parameters()
    # Running statistics from a few batches, so BatchNorm is not the identity.
    model.train()
    with torch.no_grad():
        gen = torch.Generator().manual_seed(1)
        for _ in range(2):
            model(torch.randn(4, 3, 224, 224, generator=gen))
    model.eval()
    program = tessera.compile(model, example_inputs=torch.randn(1, 3, 224, 224), dims={"batch": (1, 4)})
    return model, program


@pytest.fixture(scope="session")
def transformer():
    """(torch model, Program) for a TransformerEncoderLayer (d_model 64, 4 heads), with symbolic
    batch (1..4) and seq (1..32)."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0,
                                             batch_first=True)
    model.eval()
    program = tessera.compile(model, example_inputs=torch.randn(1, 16, 64),
                              dims={"batch": (1, 4), "seq": (1, 32)})
    return model, program


def rel_error(got, want):
    """max |got - want| / max |want|."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
