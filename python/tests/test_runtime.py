"""Program.load, load_method with options, running on NumPy arrays, and the error families."""

import os
import platform
import warnings

import numpy as np
import pytest

import tessera
from conftest import make_onnx


def xy(batch=2, dtype=np.float32):
    x = np.arange(batch * 4, dtype=dtype).reshape(batch, 4)
    return x, np.full((batch, 4), 0.5, dtype=dtype)


# --- Program ---------------------------------------------------------------------------------

def test_load_from_path_pathlike_and_bytes(add_program):
    _, path = add_program
    for source in (path, os.fspath(path), __import__("pathlib").Path(path)):
        assert tessera.Program.load(source).method_names == ["forward"]
    with open(path, "rb") as f:
        data = f.read()
    for source in (data, bytearray(data), memoryview(data)):
        program = tessera.Program.load(source)
        (out,) = program.load_method()(*xy())
        np.testing.assert_array_equal(out, xy()[0] + 0.5)


def test_load_rejects_an_onnx_file_with_program_error(add_onnx):
    with pytest.raises(tessera.ProgramError, match="not a Tessera program") as e:
        tessera.Program.load(add_onnx)
    assert e.value.code == "InvalidProgram"
    assert isinstance(e.value, tessera.Error)


def test_load_rejects_garbage_truncated_and_missing_files(add_program, tmp_path):
    _, path = add_program
    with pytest.raises(tessera.ProgramError):
        tessera.Program.load(b"\0" * 100)
    with pytest.raises(tessera.ProgramError):
        tessera.Program.load(b"")
    data = open(path, "rb").read()
    with pytest.raises(tessera.ProgramError):
        tessera.Program.load(data[: len(data) // 2])
    with pytest.raises(tessera.NotFoundError) as e:
        tessera.Program.load(tmp_path / "missing.tsr")
    assert e.value.code == "NotFound"
    with pytest.raises(tessera.ArgumentError):
        tessera.Program.load(42)
    with pytest.raises(tessera.ResourceError) as e:
        tessera.Program.load(tmp_path)  # a directory
    assert e.value.code == "AccessFailed"


def test_save_round_trips(add_program, tmp_path):
    program, path = add_program
    program.save(tmp_path / "copy.tsr")
    assert open(tmp_path / "copy.tsr", "rb").read() == open(path, "rb").read()


def test_closed_program_raises_state_error_for_it_and_its_methods(add_program):
    _, path = add_program
    program = tessera.Program.load(path)
    method = program.load_method()
    program.close()
    assert program.closed and method.closed
    with pytest.raises(tessera.StateError, match="closed"):
        program.load_method()
    with pytest.raises(tessera.StateError):
        program.method_names
    with pytest.raises(tessera.StateError):
        method(*xy())
    with tessera.Program.load(path) as p2:
        with p2.load_method() as m2:
            m2(*xy())
        with pytest.raises(tessera.StateError):
            m2(*xy())
    with pytest.raises(tessera.StateError):
        p2.load_method()


def test_unknown_method_is_not_found(add_program):
    program, _ = add_program
    with pytest.raises(tessera.ArgumentError, match="name must be a str"):
        program.load_method(0)
    with pytest.raises(tessera.ArgumentError, match="lenient must be a bool"):
        program.load_method(lenient="yes")
    with pytest.raises(tessera.NotFoundError, match="no method 'forwrd'.*'forward'"):
        program.load_method("forwrd")


# --- method description ---------------------------------------------------------------------

def test_inputs_outputs_name_symbolic_dims(add_program):
    program, _ = add_program
    method = program.load_method()
    assert [i.name for i in method.inputs] == ["x", "y"]
    assert method.inputs[0] == tessera.TensorInfo("x", np.dtype(np.float32), ("batch", 4))
    assert method.outputs == [tessera.TensorInfo("out", np.dtype(np.float32), ("batch", 4))]
    assert method.symbols == {"batch": (1, 8)}
    assert method.name == "forward"


# --- running ---------------------------------------------------------------------------------

def test_call_forms_positional_named_and_run(add_program):
    program, _ = add_program
    method = program.load_method()
    x, y = xy()
    want = x + y
    for out in (method(x, y), method(x, y=y), method(y=y, x=x), method.run([x, y]),
                method.run((x, y)), method.run({"x": x, "y": y})):
        assert isinstance(out, list) and len(out) == 1
        np.testing.assert_array_equal(out[0], want)


def test_symbolic_batch_follows_the_inputs(add_program):
    program, _ = add_program
    method = program.load_method()
    assert method.dims == {"batch": 1}
    for batch in (3, 8, 1, 3, 5, 2, 7):
        x, y = xy(batch)
        (out,) = method(x, y)
        assert out.shape == (batch, 4)
        assert method.dims == {"batch": batch}
        np.testing.assert_array_equal(out, x + y)


def test_outputs_own_their_memory(add_program):
    program, _ = add_program
    method = program.load_method()
    x, y = xy()
    (first,) = method(x, y)
    (second,) = method(x * 2, y)
    assert first.flags.owndata or first.base is not None and first.base.flags.owndata
    assert not np.shares_memory(first, second)
    np.testing.assert_array_equal(first, x + y)
    first[...] = -1  # writable, and writing it changes nothing the runtime sees
    (third,) = method(x, y)
    np.testing.assert_array_equal(third, x + y)


def test_non_contiguous_and_list_inputs_are_accepted(add_program):
    program, _ = add_program
    method = program.load_method()
    big = np.arange(32, dtype=np.float32).reshape(4, 8)
    x = big[:, ::2]  # strided view
    assert not x.flags.c_contiguous
    with pytest.warns(tessera.DTypeConversionWarning, match="int64"):
        (out,) = method(x, [[1, 1, 1, 1]] * 4)  # a nested list of ints: int64, converted
    np.testing.assert_array_equal(out, x + 1)


def test_other_dtypes_convert_with_a_warning(add_program):
    program, _ = add_program
    method = program.load_method()
    x, y = xy(dtype=np.float64)
    with pytest.warns(tessera.DTypeConversionWarning, match="'x' takes float32"):
        (out,) = method(x, y.astype(np.float32))
    np.testing.assert_array_equal(out, (x + y).astype(np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        method(*xy())  # the matching dtype: no warning


def test_big_endian_float32_is_converted(add_program):
    program, _ = add_program
    method = program.load_method()
    x, y = xy()
    with pytest.warns(tessera.DTypeConversionWarning, match=">f4"):
        (out,) = method(x.astype(">f4"), y)
    np.testing.assert_array_equal(out, x + y)


@pytest.mark.parametrize("bad", [np.array([["a"] * 4] * 2), np.array([[object()] * 4] * 2),
                                 np.ones((2, 4), np.complex64), "text", None, {"a": 1}])
def test_unconvertible_inputs_raise_dtype_error(add_program, bad):
    program, _ = add_program
    method = program.load_method()
    with pytest.raises(tessera.DTypeError) as e:
        method(bad, xy()[1])
    assert e.value.code == "InvalidType"


def test_wrong_rank_and_size_raise_shape_error(add_program):
    program, _ = add_program
    method = program.load_method()
    x, y = xy()
    with pytest.raises(tessera.ShapeError):
        method(x.reshape(8), y)
    with pytest.raises(tessera.ShapeError):
        method(np.ones((2, 5), np.float32), np.ones((2, 5), np.float32))
    with pytest.raises(tessera.ShapeError):
        method(np.ones((2, 4, 1), np.float32), y)
    with pytest.raises(tessera.ShapeError, match="rank 9"):
        method(np.ones((1,) * 9, np.float32), y)
    with pytest.raises(tessera.ShapeError):
        method(np.ones((0, 4), np.float32), np.ones((0, 4), np.float32))
    with pytest.raises(tessera.ShapeError, match="outside the bounds"):
        method(*xy(9))
    with pytest.raises(tessera.ShapeError):
        method(*xy(3)[:1], xy(2)[1])  # the two inputs disagree on batch
    # Still usable afterwards.
    (out,) = method(x, y)
    np.testing.assert_array_equal(out, x + y)


def test_fixed_dims_do_not_follow_the_inputs(add_program):
    program, _ = add_program
    method = program.load_method(dims={"batch": 4})
    assert method.dims == {"batch": 4}
    (out,) = method(*xy(4))
    assert out.shape == (4, 4)
    with pytest.raises(tessera.ShapeError) as e:
        method(*xy(2))
    assert e.value.code == "ShapeMismatch"
    with pytest.raises(tessera.ArgumentError, match="outside"):
        program.load_method(dims={"batch": 9})
    with pytest.raises(tessera.ArgumentError):
        program.load_method(dims={"batch": "four"})
    with pytest.raises(tessera.ArgumentError):
        program.load_method(dims={"seq": 2})


def test_wrong_number_or_names_of_inputs(add_program):
    program, _ = add_program
    method = program.load_method()
    x, y = xy()
    with pytest.raises(tessera.ArgumentError, match="'y'.*missing"):
        method(x)
    with pytest.raises(tessera.ArgumentError, match="takes 2 input"):
        method(x, y, x)
    with pytest.raises(tessera.NotFoundError, match="no input 'z'"):
        method(x, z=y)
    with pytest.raises(tessera.ArgumentError, match="twice"):
        method(x, y, x=x)


def test_other_input_dtypes_run(tmp_path):
    from onnx import TensorProto

    path = make_onnx(tmp_path / "less_i64.onnx", op="Less", dims=(2, 3), dtype=TensorProto.INT64,
                     out_dtype=TensorProto.BOOL)
    method = tessera.compile(path, backends=["portable"]).load_method()
    assert method.inputs[0].dtype == np.int64 and method.outputs[0].dtype == np.bool_
    a = np.arange(6, dtype=np.int64).reshape(2, 3)
    b = np.full((2, 3), 2, dtype=np.int64)
    (out,) = method(a, b)
    assert out.dtype == np.bool_
    np.testing.assert_array_equal(out, a < b)
    with pytest.warns(tessera.DTypeConversionWarning):
        (out,) = method(a.astype(np.int32), b)  # int32 -> int64: safe
    np.testing.assert_array_equal(out, a < b)
    with pytest.raises(tessera.DTypeError, match="int64"):
        method(a.astype(np.float32), b)  # float -> int is not a same-kind cast


# --- options ---------------------------------------------------------------------------------

def delegate_options(method, key):
    (d,) = method.delegates
    return {o["key"]: o for o in d["options"]}[key]


def test_load_options_in_both_dict_forms(add_program):
    program, _ = add_program
    for options in ({"xnnpack.num_threads": 2}, {"xnnpack": {"num_threads": 2}}):
        method = program.load_method(options=options)
        opt = delegate_options(method, "num_threads")
        assert (opt["value"], opt["source"]) == (2, "load")
        (d,) = method.delegates
        # Set for the load: the method's own pool, a derived value that is not an option.
        assert [(v["key"], v["value"]) for v in d["derived"]] == [("thread_pool", "method")]
        np.testing.assert_array_equal(method(*xy())[0], sum(xy()))


def test_delegate_report(add_program):
    program, _ = add_program
    method = program.load_method()
    (d,) = method.delegates
    assert d["id"] == "xnnpack#0"
    assert d["backend"] == d["requested_backend"] == "xnnpack"
    assert d["reason"] == ""
    for o in d["options"]:
        assert set(o) >= {"key", "value", "source", "resolved", "reason"}
    opt = delegate_options(method, "num_threads")
    assert opt["source"] == "default" and opt["value"] == 0
    assert opt["resolved"] is not None and opt["reason"]  # num_threads=0 is derived at load


def test_delegate_options_in_both_forms_and_precedence(add_program):
    program, _ = add_program
    for delegate in ({"xnnpack#0.num_threads": 1}, {"xnnpack#0": {"num_threads": 1}}):
        method = program.load_method(options={"xnnpack": {"num_threads": 2}}, delegate_options=delegate)
        opt = delegate_options(method, "num_threads")
        assert (opt["value"], opt["source"]) == (1, "delegate")
    method = program.load_method(options={"xnnpack#0.num_threads": 3})
    assert delegate_options(method, "num_threads")["source"] == "delegate"


def test_option_errors_at_load(add_program):
    program, _ = add_program
    with pytest.raises(tessera.OptionError, match="did you mean 'num_threads'") as e:
        program.load_method(options={"xnnpack.num_thread": 2})
    assert e.value.code == "OptionUnknownKey"
    with pytest.raises(tessera.OptionError) as e:
        program.load_method(options={"xnnpack.num_threads": "two"})
    assert e.value.code == "OptionTypeMismatch"
    with pytest.raises(tessera.OptionError) as e:
        program.load_method(options={"xnnpack.num_threads": 2.5})
    assert e.value.code == "OptionTypeMismatch"
    with pytest.raises(tessera.OptionError) as e:
        program.load_method(options={"xnnpack.num_threads": True})
    assert e.value.code == "OptionTypeMismatch"
    with pytest.raises(tessera.OptionError) as e:
        program.load_method(options={"xnnpack.num_threads": [2]})
    assert e.value.code == "OptionTypeMismatch"
    with pytest.raises(tessera.OptionError) as e:
        program.load_method(options={"xnnpack.num_threads": 100000})
    assert e.value.code == "OptionOutOfRange"
    with pytest.raises(tessera.OptionError) as e:
        program.load_method(options={"xnnpak.num_threads": 2})
    assert e.value.code == "OptionUnknownBackend"
    with pytest.raises(tessera.OptionError) as e:
        program.load_method(options={"num_threads": 2})
    assert e.value.code == "OptionParseError"
    with pytest.raises(tessera.OptionError):
        program.load_method(options=[("xnnpack.num_threads", 2)])
    with pytest.raises(tessera.OptionError):
        program.load_method(options={"xnnpack": {3: 2}})


def test_lenient_skips_unknown_keys(add_program):
    program, _ = add_program
    method = program.load_method(options={"xnnpack.no_such_key": 1, "xnnpack.num_threads": 1}, lenient=True)
    assert delegate_options(method, "num_threads")["value"] == 1


def test_execute_options(add_program):
    program, _ = add_program
    method = program.load_method()
    x, y = xy()
    for ex in ({"xnnpack.profile": True}, {"xnnpack": {"profile": True}}):
        np.testing.assert_array_equal(method.run([x, y], execute_options=ex)[0], x + y)
    with pytest.raises(tessera.OptionError) as e:
        method.run([x, y], execute_options={"xnnpack.num_threads": 1})
    assert e.value.code == "OptionWrongScope"
    with pytest.raises(tessera.OptionError) as e:
        method.run([x, y], execute_options={"xnnpack.profil": True})
    assert e.value.code == "OptionUnknownKey"


def test_retarget_fallback_and_policy(add_program):
    program, _ = add_program
    for retarget in ({"xnnpack": "portable"}, "xnnpack=portable"):
        method = program.load_method(retarget=retarget)
        (d,) = method.delegates
        assert (d["backend"], d["requested_backend"]) == ("portable", "xnnpack")
        assert d["reason"]
        np.testing.assert_array_equal(method(*xy())[0], sum(xy()))
    method = program.load_method(fallback=["xnnpack", "portable"], policy="power_saver")
    assert method.policy["effective"] == "power_saver"
    method = program.load_method(fallback="xnnpack,portable")
    assert method.delegates[0]["backend"] == "xnnpack"
    with pytest.raises(tessera.ArgumentError, match="latency"):
        program.load_method(policy="fastest")
    with pytest.raises(tessera.ArgumentError):
        program.load_method(retarget="xnnpack")
    with pytest.raises(tessera.ArgumentError):
        program.load_method(fallback=3)


def test_on_execute_failure(add_program):
    program, _ = add_program
    method = program.load_method(fallback="xnnpack,portable", on_execute_failure="fallback")
    np.testing.assert_array_equal(method(*xy())[0], sum(xy()))
    (d,) = method.delegates
    assert (d["execute_fallbacks"], d["execute_fallback_reason"]) == (0, "")
    assert program.load_method(on_execute_failure="fail").delegates[0]["execute_fallbacks"] == 0
    with pytest.raises(tessera.ArgumentError, match="fallback"):
        program.load_method(on_execute_failure="retry")
    with pytest.raises(tessera.ArgumentError, match="on_execute_failure must be a str"):
        program.load_method(on_execute_failure=1)


def test_selection_auto_measures_once_then_remembers(add_onnx, tmp_path):
    # Compiled without backends: each delegate may run on xnnpack or onednn; auto measures at
    # the first load and the second load reads the choice from the cache directory.
    program = tessera.compile(add_onnx, dims={"batch": (1, 8)})
    cache = str(tmp_path / "selection")
    # The selection is remembered per policy; under policy "auto" that follows how busy this
    # machine's CPUs are from one load to the next, so the test names one.
    first = program.load_method(selection_cache_dir=cache, policy="latency").delegates[0]
    if first["selection"]["disturbed_measurements"] == 1:
        # Every timed run of a candidate was disturbed (a busy machine): the next load measures
        # once more, and that measurement stands.
        first = program.load_method(selection_cache_dir=cache, policy="latency").delegates[0]
        assert first["selection"]["disturbed_measurements"] in (0, 2)
    assert first["selection"]["mode"] == "measure"
    assert first["selection"]["cached"] is False
    # Each backend as resolved, and option values on top (e.g. num_threads=1, oneDNN's
    # conv_algorithm): the recorded candidates are xnnpack and onednn.
    assert sorted({c["backend"] for c in first["selection"]["candidates"]}) == ["onednn", "xnnpack"]
    assert any(c["options"] == "" for c in first["selection"]["candidates"])
    assert all(c["init_ms"] >= 0 and c["alone_init_ms"] >= 0
               for c in first["selection"]["candidates"])
    assert all(c["disturbed_runs"] >= 0 for c in first["selection"]["candidates"])
    assert first["selection"]["method"] is None  # one delegate: no whole-method check
    second = program.load_method(selection_cache_dir=cache, policy="latency").delegates[0]
    assert second["selection"]["cached"] is True
    assert second["backend"] == first["backend"]
    fixed = program.load_method(selection="fixed", selection_cache_dir=cache).delegates[0]
    assert fixed["selection"]["mode"] == "fixed"
    # The program's own backend: the compiler's first preference (oneDNN on x86).
    own = "onednn" if platform.machine() in ("x86_64", "AMD64", "i686") else "xnnpack"
    assert fixed["backend"] == fixed["requested_backend"] == own
    x = np.ones((2, 4), np.float32)
    out = program.load_method(selection_cache_dir=cache)(x, x)
    np.testing.assert_array_equal(out[0], 2 * x)


def test_selection_arguments_are_checked(add_program):
    program, _ = add_program
    with pytest.raises(tessera.ArgumentError, match="auto, fixed or measure"):
        program.load_method(selection="fastest")
    with pytest.raises(tessera.ArgumentError, match="selection must be a str"):
        program.load_method(selection=1)
    with pytest.raises(tessera.ArgumentError, match="selection_cache_dir must be a str"):
        program.load_method(selection_cache_dir=3)
    with pytest.raises(tessera.ArgumentError, match="selection tolerance -1 must be a finite"):
        program.load_method(selection_tolerance=-1)
    with pytest.raises(tessera.ArgumentError, match="selection budget inf ms"):
        program.load_method(selection_budget_ms=float("inf"))
    with pytest.raises(tessera.ArgumentError, match="selection_tolerance must be a number"):
        program.load_method(selection_tolerance="1e-3")
    with pytest.raises(tessera.ArgumentError, match="selection_budget_ms must be a number"):
        program.load_method(selection_budget_ms=True)
    with pytest.raises(tessera.ArgumentError,
                       match='selection_budget_ms must be a number of ms >= 0 or "auto", not "fast"'):
        program.load_method(selection_budget_ms="fast")
    with pytest.raises(tessera.ArgumentError,
                       match='selection_budget_ms must be a number of ms >= 0 or "auto", not -1'):
        program.load_method(selection_budget_ms=-1)
    with pytest.raises(tessera.ArgumentError, match="selection_lower_precision must be a bool"):
        program.load_method(selection_lower_precision=1)
    with pytest.raises(tessera.ArgumentError, match="selection_cache_max_kb must be an int"):
        program.load_method(selection_cache_max_kb=1.5)
    with pytest.raises(tessera.ArgumentError, match="selection_cache_max_kb must be an int"):
        program.load_method(selection_cache_max_kb=True)
    with pytest.raises(tessera.ArgumentError,
                       match=r"selection cache bound -1 KiB must be 0 \(none\) to 1073741824 KiB"):
        program.load_method(selection_cache_max_kb=-1)
    with pytest.raises(tessera.ArgumentError, match=r"selection cache bound 1(0{30}) KiB"):
        program.load_method(selection_cache_max_kb=10**30)
    with pytest.raises(tessera.ArgumentError, match="selection_runs_per_load must be an int >= 1"):
        program.load_method(selection_runs_per_load=100.0)
    with pytest.raises(tessera.ArgumentError, match="selection_runs_per_load must be an int >= 1"):
        program.load_method(selection_runs_per_load=True)
    with pytest.raises(tessera.ArgumentError,
                       match="selection runs per load 0 must be 1 to 1099511627776"):
        program.load_method(selection_runs_per_load=0)
    with pytest.raises(tessera.ArgumentError, match=r"selection runs per load 1(0{30}) must be"):
        program.load_method(selection_runs_per_load=10**30)


def test_selection_budget_and_tolerance_reach_the_measurement(add_onnx, tmp_path):
    # With no budget, each backend the compiler recorded still gets its runs (it is listed), and
    # option variants on top are skipped for the budget.
    program = tessera.compile(add_onnx, dims={"batch": (1, 8)})
    (d,) = program.load_method(selection="measure", selection_cache_dir=str(tmp_path),
                               selection_tolerance=1e-3, selection_budget_ms=0,
                               selection_runs_per_load=1000, selection_lower_precision=True,
                               policy="latency").delegates
    candidates = d["selection"]["candidates"]
    assert sorted({c["backend"] for c in candidates}) == ["onednn", "xnnpack"]
    for c in candidates:
        if c["options"] == "":
            assert c["accepted"] and c["runs"] >= 1
        else:
            # Skipped: for the budget, or before it as what was just measured.
            assert not c["accepted"] and c["reason"].startswith("skipped"), c
    assert any(c["reason"].startswith("skipped (budget: 0 ms spent)") for c in candidates), candidates


def test_selection_budget_auto_is_the_default_and_can_be_asked_for(add_onnx, tmp_path):
    # The auto budget: the runs may take twice the first candidate's init. Asked for by name or
    # left at the default, the load measures the same way and shares the remembered choice.
    program = tessera.compile(add_onnx, dims={"batch": (1, 8)})
    first = program.load_method(selection="auto", selection_cache_dir=str(tmp_path),
                                selection_budget_ms="auto", policy="latency").delegates[0]
    assert first["selection"]["mode"] == "measure" and not first["selection"]["cached"]
    second = program.load_method(selection="auto", selection_cache_dir=str(tmp_path),
                                 policy="latency").delegates[0]
    assert second["selection"]["cached"], second["selection"]
    assert second["backend"] == first["backend"]


# --- startup_backend -------------------------------------------------------------------------

def test_startup_backend_serves_on_the_cpu_then_moves_to_opencl(add_onnx, tmp_path):
    """A cold OpenCL program cache: the first executes run on the startup backend while the
    kernels build in the background, then the delegate moves to OpenCL; the next load finds
    the cache warm and starts on OpenCL."""
    if not tessera.backend_available("opencl")["available"]:
        pytest.skip("no OpenCL device")
    program = tessera.compile(add_onnx, dims={"batch": (1, 8)}, backends=["opencl"])
    cache = tmp_path / "clcache"
    options = {"opencl": {"cache_dir": str(cache)}}
    method = program.load_method(options=options, startup_backend="portable")
    (d,) = method.delegates
    assert d["startup"]["backend"] == "portable"
    assert d["startup"]["target"] == "opencl"
    x, y = xy()
    for _ in range(3):
        np.testing.assert_array_equal(method(x, y)[0], x + y)
    assert method.wait_for_startup(60000)
    np.testing.assert_array_equal(method(x, y)[0], x + y)
    (d,) = method.delegates
    assert d["startup"]["state"] == "switched", d["startup"]["failure"]
    assert d["backend"] == "opencl"
    assert d["startup"]["executes"]["opencl"] >= 1
    assert sum(d["startup"]["executes"].values()) == 4
    assert d["startup"]["build_ms"] > 0
    assert any(p.suffix == ".clbin" for p in cache.iterdir())

    warm = program.load_method(options=options, startup_backend="portable")
    (d,) = warm.delegates
    assert d["backend"] == "opencl"
    assert d["startup"] is None


def test_startup_backend_rejects_a_wrong_type_and_an_unknown_backend(add_program):
    program, _ = add_program
    with pytest.raises(tessera.ArgumentError, match="startup_backend must be a str"):
        program.load_method(startup_backend=3)
    with pytest.raises(tessera.OptionError, match="unknown backend 'nope'"):
        program.load_method(startup_backend="nope")
    # Nothing to build on a CPU backend: no startup backend is used.
    (d,) = program.load_method(startup_backend="auto").delegates
    assert d["startup"] is None
