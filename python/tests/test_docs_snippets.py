"""The Python blocks of README.md and docs/python.md run here, as written (the C, C++ and CMake
blocks are compiled by tests/docs). A block that shows an error message (`>>>` lines) is
checked for the error it names."""

import os
import re

import numpy as np
import pytest

import tessera
from conftest import ROOT

BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)


def blocks(doc):
    with open(os.path.join(ROOT, doc), encoding="utf-8") as f:
        return BLOCK.findall(f.read())


def test_the_documents_have_the_blocks_this_file_runs():
    assert len(blocks("README.md")) == 1
    assert len(blocks("docs/python.md")) == 4
    # The README's block is the guide's first: running one runs both.
    assert blocks("README.md")[0] == blocks("docs/python.md")[0]


def test_readme_block_compiles_and_runs_mobilenet(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    pytest.importorskip("torchvision")
    monkeypatch.chdir(tmp_path)  # it writes mobilenet_v2.tsr into the working directory
    scope = {}
    exec(compile(blocks("README.md")[0], "README.md", "exec"), scope)
    assert (tmp_path / "mobilenet_v2.tsr").is_file()
    assert scope["logits"].shape == (4, 1000)
    assert np.isfinite(scope["logits"]).all()


def test_global_options_block():
    block = blocks("docs/python.md")[1]
    if "onednn" not in tessera.list_backends():
        pytest.skip("onednn backend not built")
    try:
        exec(compile(block, "docs/python.md", "exec"), {"tessera": tessera})
        assert tessera.get_global_option("onednn", "cache_mode") == "readwrite"
    finally:
        tessera.reset_global_options("xnnpack")
        tessera.reset_global_options("onednn")


def test_call_forms_block(add_program):
    program, _ = add_program
    x = np.ones((2, 4), np.float32)
    y = np.full((2, 4), 2.0, np.float32)
    scope = {"method": program.load_method(), "x": x, "y": y}
    exec(compile(blocks("docs/python.md")[2], "docs/python.md", "exec"), scope)
    np.testing.assert_array_equal(scope["outputs"][0], x + y)


def test_error_block_shows_the_real_message():
    block = blocks("docs/python.md")[3]
    call, shown = re.match(r">>> (.*)\n(.*)\n", block).groups()
    with pytest.raises(tessera.OptionError) as e:
        exec(call, {"tessera": tessera})
    assert shown == f"tessera.OptionError: {e.value}"
