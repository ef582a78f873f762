"""PyTorch models compiled from the module object and run through Tessera match PyTorch."""

import numpy as np
import pytest

import tessera
from conftest import rel_error

torch = pytest.importorskip("torch")


def test_mobilenet_v2_matches_torch_at_two_batch_sizes(mobilenet):
    model, program = mobilenet
    method = program.load_method()
    assert method.inputs[0].shape == ("batch", 3, 224, 224)
    gen = torch.Generator().manual_seed(7)
    for batch in (1, 3):
        x = torch.randn(batch, 3, 224, 224, generator=gen)
        with torch.no_grad():
            want = model(x).numpy()
        (got,) = method(x.numpy())
        assert got.shape == (batch, 1000)
        assert method.dims == {"batch": batch}
        assert rel_error(got, want) < 1e-4


def test_mobilenet_v2_delegates_report_backends_and_sources(mobilenet):
    _, program = mobilenet
    method = program.load_method(options={"xnnpack": {"num_threads": 1}})
    delegates = method.delegates
    assert delegates, "the CPU backends should take MobileNetV2's convolutions"
    for d in delegates:
        assert set(d) >= {"id", "backend", "requested_backend", "reason", "options"}
        if d["backend"] == "xnnpack":
            opt = {o["key"]: o for o in d["options"]}
            assert opt["num_threads"]["value"] == 1
            assert opt["num_threads"]["source"] == "load"


def test_transformer_encoder_layer_matches_torch_with_symbolic_batch_and_seq(transformer):
    model, program = transformer
    method = program.load_method()
    assert method.inputs[0].shape == ("batch", "seq", 64)
    gen = torch.Generator().manual_seed(3)
    for shape in [(1, 16, 64), (2, 7, 64), (4, 32, 64)]:
        x = torch.randn(*shape, generator=gen)
        with torch.no_grad():
            want = model(x).numpy()
        (got,) = method(x.numpy())
        assert got.shape == shape
        assert method.dims == {"batch": shape[0], "seq": shape[1]}
        assert rel_error(got, want) < 1e-4


def test_compile_writes_output_that_loads_to_the_same_results(transformer, tmp_path):
    model, _ = transformer
    path = tmp_path / "enc.tsr"
    program = tessera.compile(model, path, example_inputs=torch.randn(1, 16, 64),
                              dims={"batch": (1, 4), "seq": (1, 32)}, backends=["portable"])
    assert program.compile_report["delegates"] == []
    loaded = tessera.Program.load(path)
    x = np.random.default_rng(0).standard_normal((2, 5, 64)).astype(np.float32)
    (a,) = program.load_method()(x)
    (b,) = loaded.load_method()(x)
    np.testing.assert_array_equal(a, b)
    with torch.no_grad():
        want = model(torch.from_numpy(x)).numpy()
    assert rel_error(a, want) < 1e-4


def test_compile_needs_example_inputs_for_a_module(transformer):
    model, _ = transformer
    with pytest.raises(tessera.ArgumentError, match="example_inputs"):
        tessera.compile(model)
