#!/usr/bin/python3
"""Writes the seed corpora of the fuzz targets into fuzz/corpus/<target>/.

Usage: /usr/bin/python3 fuzz/make_seeds.py TESSERA_COMPILE

TESSERA_COMPILE is a built tools/tessera-compile; it turns the small ONNX models made here into
the program_load seeds. The seeds are committed; rerun this only to change them (then merge what
long runs grew with `build-fuzz/fuzz/TARGET -merge=1 fuzz/corpus/TARGET GROWN_DIR`, see
docs/reliability.md). Each seed is kept small: a few channels, a few hundred bytes to a few KB.
"""

import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(ROOT, "corpus")


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def model(nodes, inputs, outputs, inits=(), opset=13):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def vi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def models():
    rng = np.random.default_rng(1)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)
    out = {}
    out["mlp"] = model(
        [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1),
         helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("Gemm", ["r", "w2", "b2"], ["y"], transB=1)],
        [vi("x", ["batch", 4])], [vi("y", ["batch", 3])],
        [const("w1", f(5, 4)), const("b1", f(5)), const("w2", f(3, 5)), const("b2", f(3))])
    out["conv"] = model(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["n"]),
         helper.make_node("Relu", ["n"], ["r"]),
         helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("GlobalAveragePool", ["p"], ["g"]),
         helper.make_node("Flatten", ["g"], ["y"])],
        [vi("x", [1, 2, 4, 4])], [vi("y", [1, 3])],
        [const("w", f(3, 2, 3, 3)), const("b", f(3)), const("s", np.ones(3, np.float32)),
         const("bb", f(3)), const("m", f(3)), const("v", np.ones(3, np.float32))])
    out["shapes"] = model(
        [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1]),
         helper.make_node("Shape", ["t"], ["s"]),
         helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
         helper.make_node("Concat", ["b", "rest"], ["shape"], axis=0),
         helper.make_node("Reshape", ["t", "shape"], ["r"]),
         helper.make_node("Softmax", ["r"], ["y"], axis=-1)],
        [vi("x", ["batch", 2, 3])], [vi("y", ["batch", 6])],
        [const("zero", np.array([0], np.int64)), const("rest", np.array([6], np.int64))])
    out["elementwise"] = model(
        [helper.make_node("Add", ["x", "a"], ["s"]),
         helper.make_node("Mul", ["s", "x"], ["m"]),
         helper.make_node("Sigmoid", ["m"], ["g"]),
         helper.make_node("Sub", ["g", "a"], ["d"]),
         helper.make_node("ReduceMean", ["d"], ["y"], axes=[1], keepdims=1)],
        [vi("x", [2, 4])], [vi("y", [2, 1])], [const("a", f(4))])
    out["pool_resize"] = model(
        [helper.make_node("AveragePool", ["x"], ["p"], kernel_shape=[2, 2]),
         helper.make_node("Resize", ["p", "", "scales"], ["r"], mode="nearest"),
         helper.make_node("Clip", ["r", "lo", "hi"], ["y"])],
        [vi("x", [1, 1, 3, 3])], [vi("y", [1, 1, 4, 4])],
        [const("scales", np.array([1, 1, 2, 2], np.float32)),
         const("lo", np.array(0, np.float32)), const("hi", np.array(6, np.float32))])
    return out


def onnx_seeds(ms):
    for name, m in ms.items():
        data = m.SerializeToString()
        mode = b"\x01" if name in ("mlp", "shapes") else b"\x00"  # bit 0: bounds for "batch"
        write("onnx_compile", name, mode + data)


def program_seeds(ms, compiler):
    with tempfile.TemporaryDirectory() as tmp:
        for name, m in ms.items():
            src = os.path.join(tmp, name + ".onnx")
            onnx.save(m, src)
            dims = ["--dim", "batch=1:4"] if name in ("mlp", "shapes") else []
            for backends in ("portable", ""):
                dst = os.path.join(tmp, "out.tsr")
                cmd = [compiler, src, "-o", dst, "-q"] + dims
                if backends:
                    cmd += ["--backends", backends]
                subprocess.run(cmd, check=True)
                with open(dst, "rb") as f:
                    write("program_load", name + ("_" + backends if backends else "_delegates"),
                          f.read())


def npy_seeds():
    import io
    cases = {
        "f32_2x3": np.arange(6, dtype=np.float32).reshape(2, 3),
        "f16": np.array([1.5, -2], dtype=np.float16),
        "i64_scalar": np.array(7, dtype=np.int64),
        "i32_empty": np.zeros((0, 3), dtype=np.int32),
        "u8": np.array([1, 2, 3], dtype=np.uint8),
        "i8": np.array([-1, 2], dtype=np.int8),
        "bool": np.array([True, False]),
    }
    for name, a in cases.items():
        b = io.BytesIO()
        np.save(b, a)
        write("npy_reader", name, b.getvalue())
    b = io.BytesIO()
    np.lib.format.write_array(b, np.ones(2, np.float32), version=(2, 0))
    write("npy_reader", "f32_v2", b.getvalue())


def option_seeds():
    # First byte: bits 0-2 front end (0 assignment, 1 list, 2 TESSERA_OPTIONS, 3-4 TOML, 5 value,
    # 6-7 load option strings), bits 3-4 scope (global, load, delegate, execute), bit 7 lenient.
    seeds = {
        "assign_load": (0x08, "xnnpack.num_threads=4"),
        "assign_global": (0x00, "opencl.device_type=gpu"),
        "assign_delegate": (0x08, "xnnpack#0.num_threads=1"),
        "assign_execute": (0x18, "portable.profile=true"),
        "list": (0x09, 'opencl.cache_dir="/a;b";xnnpack.num_threads=1;onednn.cache_mode=read'),
        "env": (0x02, "xnnpack.num_threads=2;opencl.tuning_level=rapid ; ;"),
        "env_lenient": (0x82, "xnnpak.num_thread=2;opencl.device_index=3"),
        "toml": (0x03, '# options\n[global.xnnpack]\nnum_threads = 4\n\n[load.opencl]\n'
                       'device_type = "gpu"\ncache_dir = "/data/cl"\nspecialize_shapes = true\n\n'
                       '[delegate."xnnpack#1"]\nnum_threads = 1\n\n[execute.portable]\n'
                       'profile = false\n'),
        "toml_errors": (0x84, '[load.onednn]\ncache_mode = 3\n[load.nobody]\nx = 1.5e3\n'),
        "value": (0x05, "2.5e-3"),
        "fallback": (0x06, "opencl,xnnpack,portable"),
        "retarget": (0x07, "xnnpack=onednn"),
    }
    for name, (mode, text) in seeds.items():
        write("option_strings", name, bytes([mode]) + text.encode())


def cache_seeds():
    # First byte: bit 0 tuning file (else program cache entry), bit 1 repair size and checksum,
    # bit 2 repair the whole header.
    records = b"".join(struct.pack("<QII", k, l, 0) for k, l in ((5, 16), (9, 64), (1, 0)))
    write("cache_files", "tuning_repaired", b"\x05" + b"\0" * 48 + records)
    write("cache_files", "tuning_partial", b"\x05" + b"\0" * 48 + records[:-4])
    write("cache_files", "entry_repaired", b"\x04" + b"\0" * 48 + b"\x7fELF binary")
    header = b"TSCLBIN1" + struct.pack("<IIQQQQ", 2, 0, 1, 2, 4, 3)
    write("cache_files", "entry_raw", b"\x00" + header + b"abcd")
    write("cache_files", "tuning_raw", b"\x01" + b"TSCLTUN1" + struct.pack("<II", 1, 0) + b"\0" * 8)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    ms = models()
    onnx_seeds(ms)
    program_seeds(ms, sys.argv[1])
    npy_seeds()
    option_seeds()
    cache_seeds()


if __name__ == "__main__":
    main()
