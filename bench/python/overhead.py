#!/usr/bin/env python3
"""The cost of calling a Tessera method from Python: tessera.Method.__call__ on a one-op program
against the same work in C++ (python_overhead_native: set_input, execute, copy the outputs),
in the same rounds, interleaved. Median over rounds of each round's mean per call.

    PYTHONPATH=build/python /usr/bin/python3 bench/python/overhead.py [--build-dir build]

The programs: Add of two [1, 256] float32 tensors, once as an XNNPACK delegate and once as a
portable kernel call."""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def make_add_onnx(path, n):
    import onnx
    from onnx import TensorProto, helper

    ins = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, n]) for name in ("x", "y")]
    out = helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, n])
    graph = helper.make_graph([helper.make_node("Add", ["x", "y"], ["out"])], "add", ins, [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def python_round(method, x, y, iterations):
    t0 = time.perf_counter_ns()
    for _ in range(iterations):
        method(x, y)
    return (time.perf_counter_ns() - t0) / iterations


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default=os.path.join(os.path.dirname(__file__), "..", "..", "build"))
    parser.add_argument("--iterations", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--size", type=int, default=256)
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(args.build_dir, "python"))
    import tessera

    native = os.path.join(args.build_dir, "bench", "python", "python_overhead_native")
    if not os.path.exists(native):
        sys.exit(f"{native} is missing: ninja -C {args.build_dir} python_overhead_native")
    x = np.random.default_rng(0).standard_normal((1, args.size)).astype(np.float32)
    y = np.ones((1, args.size), np.float32)
    print(f"one Add of two [1, {args.size}] float32 tensors; {args.rounds} rounds of {args.iterations} calls; "
          "median of round means, ns per call")
    print(f"{'program':<10} {'C++':>9} {'Python':>9} {'overhead':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        onnx_path = os.path.join(tmp, "add.onnx")
        make_add_onnx(onnx_path, args.size)
        for backend in ("xnnpack", "portable"):
            tsr = os.path.join(tmp, f"add_{backend}.tsr")
            tessera.compile(onnx_path, tsr, backends=[backend])
            method = tessera.Program.load(tsr).load_method()  # defaults, as the C++ side
            np.testing.assert_array_equal(method(x, y)[0], x + y)
            for _ in range(args.iterations // 10):
                method(x, y)
            cpp, py = [], []
            for _ in range(args.rounds):  # interleaved: one C++ round (a process), one Python round
                out = subprocess.run([native, tsr, str(args.iterations), "1"], check=True, capture_output=True,
                                     text=True).stdout
                cpp.append(float(out.split()[0]))
                py.append(python_round(method, x, y, args.iterations))
            c, p = statistics.median(cpp), statistics.median(py)
            print(f"{backend:<10} {c:9.0f} {p:9.0f} {p - c:9.0f}")


if __name__ == "__main__":
    main()
