# Options that take entries (ArmNN's backend_option): one typed entry per key from Python.
import pytest

import tessera


@pytest.fixture
def armnn():
    if "armnn" not in tessera.list_backends():
        pytest.skip("armnn backend not built")
    yield
    tessera.reset_global_options("armnn")


def test_entry_keys_merge_into_the_list(armnn):
    try:
        tessera.set_global_option("armnn", "backend_option.GpuAcc.TuningLevel", 2)
    except tessera.StateError as e:  # init-only: refused once this process made the runtime
        if "before the first" in str(e):
            pytest.skip("the armnn runtime already exists in this process")
        raise
    tessera.set_global_option("armnn", "backend_option.GpuAcc.KernelProfilingEnabled", True)
    tessera.set_global_options({"armnn": {"backend_option.GpuAcc.TuningLevel": 1}})
    assert (tessera.get_global_option("armnn", "backend_option")
            == "GpuAcc.KernelProfilingEnabled=true;GpuAcc.TuningLevel=1")
    with pytest.raises(tessera.OptionError) as e:
        tessera.set_global_option("armnn", "backend_option.GpuAcc.TuningLevl", 1)
    assert e.value.code == "OptionInvalidChoice" and "TuningLevel" in str(e.value)
    with pytest.raises(tessera.OptionError):  # a complex is no option value
        tessera.set_global_option("armnn", "backend_option.GpuAcc.TuningLevel", 1.5j)
    # Nothing changed by the refused ones.
    assert (tessera.get_global_option("armnn", "backend_option")
            == "GpuAcc.KernelProfilingEnabled=true;GpuAcc.TuningLevel=1")
