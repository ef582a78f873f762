"""Module-level functions: version, device_info, backends, option schemas, global options."""

import json
import os
import subprocess

import numpy as np
import pytest

import tessera
from conftest import ROOT, _build


def test_version():
    assert isinstance(tessera.__version__, str)
    assert tessera.__version__.count(".") == 2


def test_device_info_has_the_fields_of_tessera_run():
    info = tessera.device_info()
    assert isinstance(info, dict)
    for key in ("usable_cpus", "clusters", "caches", "isa", "memory", "opencl", "recommended_threads"):
        assert key in info
    assert info["usable_cpus"] >= 1
    tool = os.path.join(_build, "tools", "tessera-run", "tessera-run")
    if os.path.exists(tool):
        cli = json.loads(subprocess.run([tool, "--device-info", "--json"], check=True, capture_output=True,
                                        text=True).stdout)
        assert set(cli) == set(info)
        for key in ("usable_cpus", "isa", "cpu_name", "online_cpus", "caches"):
            assert cli[key] == info[key]


def test_list_backends():
    names = tessera.list_backends()
    assert names == sorted(names)
    assert "portable" in names and "xnnpack" in names
    assert set(tessera.list_backends(available_only=True)) <= set(names)
    assert "portable" in tessera.list_backends(available_only=True)
    assert tessera.backend_available("portable") == {"available": True, "reason": ""}


def test_list_options_schema_entries():
    every = tessera.list_options()
    assert set(every) == set(tessera.list_backends())
    schema = tessera.list_options("xnnpack")
    assert schema == every["xnnpack"]
    by_key = {s["key"]: s for s in schema}
    nt = by_key["num_threads"]
    assert nt["type"] == "int" and nt["default"] == 0 and nt["min"] == 0 and nt["max"] >= 1
    assert "global" in nt["scopes"] and "load" in nt["scopes"] and not nt["init_only"]
    assert nt["doc"]
    assert by_key["profile"]["scopes"] == ["execute"]
    for backend, entries in every.items():
        for s in entries:
            assert set(s) == {"key", "type", "default", "min", "max", "choices", "max_length", "scopes",
                              "init_only", "doc"}
            if s["type"] == "enum":
                assert s["default"] in s["choices"]
    if "onednn" in every:
        isa = {s["key"]: s for s in every["onednn"]}["max_cpu_isa"]
        assert isa["init_only"] and isa["type"] == "enum" and "avx2" in isa["choices"]
    with pytest.raises(tessera.OptionError, match="did you mean 'xnnpack'") as e:
        tessera.list_options("xnnpak")
    assert e.value.code == "OptionUnknownBackend"


@pytest.fixture
def restore_xnnpack():
    yield
    tessera.reset_global_options("xnnpack")


@pytest.fixture
def restore_onednn():
    yield
    tessera.reset_global_options("onednn")


def test_global_options_round_trip_and_reach_loads(add_program, restore_xnnpack):
    assert tessera.get_global_option("xnnpack", "num_threads") == 0
    assert tessera.get_global_option("xnnpack", "yield_workers") is False
    tessera.set_global_option("xnnpack", "num_threads", 2)
    tessera.set_global_option("xnnpack", "yield_workers", True)
    tessera.set_global_option("xnnpack", "num_threads", np.int64(3))  # NumPy integers are ints
    assert tessera.get_global_option("xnnpack", "num_threads") == 3
    assert tessera.get_global_option("xnnpack", "yield_workers") is True
    program, _ = add_program
    (d,) = program.load_method().delegates
    opt = {o["key"]: o for o in d["options"]}
    assert (opt["num_threads"]["value"], opt["num_threads"]["source"]) == (3, "global")
    # Load scope wins over global.
    (d,) = program.load_method(options={"xnnpack": {"num_threads": 1}}).delegates
    assert {o["key"]: o for o in d["options"]}["num_threads"]["source"] == "load"
    tessera.reset_global_options("xnnpack")
    assert tessera.get_global_option("xnnpack", "num_threads") == 0


def test_global_string_and_enum_options(restore_onednn):
    if "onednn" not in tessera.list_backends():
        pytest.skip("onednn backend not built")
    tessera.set_global_option("onednn", "cache_mode", "read")
    assert tessera.get_global_option("onednn", "cache_mode") == "read"
    tessera.set_global_option("onednn", "cache_dir", "/tmp/tessera-python-test")
    assert tessera.get_global_option("onednn", "cache_dir") == "/tmp/tessera-python-test"
    tessera.set_global_options({"onednn.cache_mode": "off", "onednn": {"cache_dir": ""}})
    assert tessera.get_global_option("onednn", "cache_mode") == "off"
    with pytest.raises(tessera.OptionError) as e:
        tessera.set_global_option("onednn", "cache_mode", "sometimes")
    assert e.value.code == "OptionInvalidChoice" and "readwrite" in str(e.value)
    with pytest.raises(tessera.OptionError) as e:
        tessera.set_global_option("onednn", "cache_dir", "x" * 300)
    assert e.value.code == "OptionTooLong"


def test_global_option_errors_change_nothing(restore_xnnpack):
    tessera.set_global_option("xnnpack", "num_threads", 2)
    cases = [
        (("xnnpak", "num_threads", 1), "OptionUnknownBackend", "did you mean 'xnnpack'"),
        (("xnnpack", "num_thread", 1), "OptionUnknownKey", "did you mean 'num_threads'"),
        (("xnnpack", "num_threads", "1"), "OptionTypeMismatch", "num_threads"),
        (("xnnpack", "num_threads", 1.5), "OptionTypeMismatch", "num_threads"),
        (("xnnpack", "num_threads", None), "OptionTypeMismatch", "NoneType"),
        (("xnnpack", "num_threads", 2 ** 70), "OptionOutOfRange", "64-bit"),
        (("xnnpack", "num_threads", -1), "OptionOutOfRange", "num_threads"),
        (("xnnpack", "profile", True), "OptionWrongScope", "profile"),
    ]
    for args, code, text in cases:
        with pytest.raises(tessera.OptionError) as e:
            tessera.set_global_option(*args)
        assert e.value.code == code, (args, e.value)
        assert text in str(e.value)
    with pytest.raises(tessera.OptionError):
        tessera.set_global_options({"xnnpack.num_threads": 1, "xnnpack.num_thread": 1})
    assert tessera.get_global_option("xnnpack", "num_threads") == 2
    with pytest.raises(tessera.OptionError) as e:
        tessera.get_global_option("xnnpack", "num_thread")
    assert e.value.code == "OptionUnknownKey"


def test_init_only_option_after_the_backend_started_is_a_state_error(add_onnx, restore_onednn):
    if "onednn" not in tessera.list_backends(available_only=True):
        pytest.skip("onednn backend not available")
    program = tessera.compile(add_onnx, dims={"batch": (1, 8)}, backends=["onednn"])
    method = program.load_method()
    assert method.delegates[0]["backend"] == "onednn"
    locked = tessera.get_global_option("onednn", "max_cpu_isa")
    other = "sse41" if locked != "sse41" else "avx2"
    with pytest.raises(tessera.StateError, match="max_cpu_isa") as e:
        tessera.set_global_option("onednn", "max_cpu_isa", other)
    assert e.value.code == "InvalidState"


def test_error_classes_carry_code_and_message():
    assert issubclass(tessera.OptionError, tessera.Error)
    assert issubclass(tessera.ShapeError, ValueError)
    assert issubclass(tessera.NotFoundError, LookupError)
    assert issubclass(tessera.DTypeError, TypeError)
    try:
        tessera.set_global_option("xnnpack", "num_thread", 1)
    except tessera.Error as e:
        assert e.code == "OptionUnknownKey" and e.code_value == 0x41
        assert str(e) == "xnnpack: unknown option 'num_thread' (did you mean 'num_threads'?)"
        assert "OptionError" in repr(e)


@pytest.mark.parametrize("call", [
    lambda: tessera.set_global_option(1, "num_threads", 1),
    lambda: tessera.set_global_option("xnnpack", None, 1),
    lambda: tessera.get_global_option("xnnpack", 3),
    lambda: tessera.reset_global_options(b"xnnpack"),
    lambda: tessera.list_options(7),
    lambda: tessera.backend_available(None),
    lambda: tessera.list_backends(available_only="yes"),
])
def test_arguments_of_the_wrong_python_type_are_argument_errors(call):
    with pytest.raises(tessera.ArgumentError, match="must be a"):
        call()


def test_numpy_arrays_are_not_option_values(restore_xnnpack):
    with pytest.raises(tessera.OptionError) as e:
        tessera.set_global_option("xnnpack", "num_threads", np.array([1.5]))
    assert e.value.code == "OptionTypeMismatch"
