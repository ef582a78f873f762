"""tessera.compile from ONNX files and bytes, its errors, and the delegate failure family."""

import numpy as np
import pytest

import tessera


def test_compile_from_path_and_from_bytes_agree(add_onnx, tmp_path):
    out = tmp_path / "add.tsr"
    from_path = tessera.compile(add_onnx, out, dims={"batch": (1, 8)}, backends="xnnpack")
    with open(add_onnx, "rb") as f:
        from_bytes = tessera.compile(f.read(), dims={"batch": (1, 8)}, backends=["xnnpack"])
    assert out.exists() and tessera.Program.load(out).method_names == ["forward"]
    report = from_path.compile_report
    assert [d["backend"] for d in report["delegates"]] == ["xnnpack"]
    assert report["symbols"] and report["arena_bytes"] > 0
    x = np.ones((5, 4), np.float32)
    for program in (from_path, from_bytes):
        (y,) = program.load_method()(x, x)
        np.testing.assert_array_equal(y, 2 * x)


def test_compile_backends_and_specs(add_onnx):
    portable = tessera.compile(add_onnx, dims={"batch": 2}, backends=["portable"])
    assert portable.compile_report["delegates"] == []
    assert portable.load_method().symbols == {"batch": (2, 2)}
    for specs in ({"xnnpack.num_threads": 1}, {"xnnpack": {"num_threads": 1}}):
        program = tessera.compile(add_onnx, dims={"batch": (1, 8)}, backends=["xnnpack"], specs=specs)
        (d,) = program.load_method().delegates
        opt = {o["key"]: o for o in d["options"]}["num_threads"]
        assert (opt["value"], opt["source"]) == (1, "compile_spec")


def test_compile_errors(add_onnx, tmp_path):
    with pytest.raises(tessera.ArgumentError, match="batch"):
        tessera.compile(add_onnx)  # the symbolic dim needs bounds
    with pytest.raises(tessera.ArgumentError, match="seq"):
        tessera.compile(add_onnx, dims={"batch": (1, 8), "seq": (1, 4)})
    for dims in ({"batch": (8, 1)}, {"batch": "many"}, {"batch": (0, 2)}, [("batch", 1, 8)]):
        with pytest.raises(tessera.ArgumentError):
            tessera.compile(add_onnx, dims=dims)
    with pytest.raises(tessera.NotFoundError, match="did you mean|registered"):
        tessera.compile(add_onnx, dims={"batch": (1, 8)}, backends=["xnnpak"])
    with pytest.raises(tessera.NotFoundError):
        tessera.compile(tmp_path / "missing.onnx")
    with pytest.raises(tessera.ProgramError, match="not an ONNX model"):
        tessera.compile(b"not a model")
    with pytest.raises(tessera.ArgumentError):
        tessera.compile(3.5)
    with pytest.raises(tessera.ArgumentError):
        tessera.compile(add_onnx, dims={"batch": (1, 8)}, specs=["xnnpack.num_threads=1"])


def test_unsupported_op_is_not_supported_error(tmp_path):
    from conftest import make_onnx

    from onnx import TensorProto

    path = make_onnx(tmp_path / "xor.onnx", op="Xor", dims=(2, 2), dtype=TensorProto.BOOL)
    with pytest.raises(tessera.NotSupportedError, match="Xor"):
        tessera.compile(path)


def test_delegate_failure_is_delegate_error_and_fallback_reports_it(add_onnx):
    if not tessera.backend_available("opencl")["available"]:
        pytest.skip("no OpenCL device")
    program = tessera.compile(add_onnx, dims={"batch": (1, 8)}, backends=["opencl"])
    try:
        tessera.set_global_option("opencl", "device_type", "accelerator")
    except tessera.StateError:
        pytest.skip("the opencl backend already started in this process")
    try:
        with pytest.raises(tessera.DelegateError) as e:
            program.load_method()
        assert e.value.code == "DelegateUnavailable" and "accelerator" in str(e.value)
        method = program.load_method(fallback=["opencl", "portable"])
        (d,) = method.delegates
        assert (d["backend"], d["requested_backend"]) == ("portable", "opencl")
        assert "init failed" in d["reason"]
        x = np.ones((2, 4), np.float32)
        np.testing.assert_array_equal(method(x, x)[0], 2 * x)
    finally:
        tessera.reset_global_options("opencl")
