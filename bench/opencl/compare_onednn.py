#!/usr/bin/env python3
"""OpenCL backend against the oneDNN backend on the same models, same run, same machine.

Compiles each fixture model once per backend (tessera-compile --backends B --dim batch=1:1),
then in every round runs tessera-run on the OpenCL program and on the oneDNN program
(num_threads=2), alternating, and keeps each run's min and median latency. Finally runs each
backend once more with --profile and prints the per-kernel (OpenCL) and per-primitive (oneDNN)
times side by side, layer by layer. Standard library only; prints Markdown.

  bench/opencl/compare_onednn.py --build-dir build --models resnet18,mobilenet_v2 \\
      --rounds 5 --iterations 20 [--nice -10]

The OpenCL runs use a program cache under --work-dir, so only the first load compiles.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys


def run(cmd, nice):
    if nice:
        cmd = ["nice", "-n", str(nice)] + cmd
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if out.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), out.stdout))
    return out.stdout


def backend_options(backend, work_dir):
    if backend == "opencl":
        return ["--option", "opencl.cache_dir=" + os.path.join(work_dir, "opencl-cache")]
    return ["--option", "onednn.num_threads=2"]


PROFILE_ROW = re.compile(r"\s+([\d.]+) ms\s+[\d.]+%\s+(.*)$")


def profile(runner, program, inputs, backend, work_dir, iterations, nice):
    text = run([runner, program, "--input", inputs, "--warmup", "2", "--iterations",
                str(iterations), "--profile"] + backend_options(backend, work_dir), nice)
    rows = []
    for line in text.splitlines():
        m = PROFILE_ROW.match(line)
        if m:
            rows.append((m.group(2).strip(), float(m.group(1))))
    return rows


def layer_of(event, backend):
    """(layer name, kind) of one profile event."""
    if backend == "opencl":
        op, _, rest = event.partition(" ")
        return rest, ("im2col" if op == "Conv:im2col" else op)
    kind, _, name = event.partition(":")
    return name, kind


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--fixtures", default=None, help="default: BUILD/fixtures")
    ap.add_argument("--work-dir", default="build-bench/opencl")
    ap.add_argument("--models", default="resnet18,mobilenet_v2")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--nice", type=int, default=0, help="run the timed processes at this niceness")
    args = ap.parse_args()
    fixtures = args.fixtures or os.path.join(args.build_dir, "fixtures")
    compiler = os.path.join(args.build_dir, "tools/tessera-compile/tessera-compile")
    runner = os.path.join(args.build_dir, "tools/tessera-run/tessera-run")
    os.makedirs(args.work_dir, exist_ok=True)
    backends = ["opencl", "onednn"]
    for model in args.models.split(","):
        inputs = "0=" + os.path.join(fixtures, model, "input.npy")
        programs = {}
        for b in backends:
            programs[b] = os.path.join(args.work_dir, "%s.%s.tsr" % (model, b))
            run([compiler, os.path.join(fixtures, model, "model.onnx"), "-o", programs[b],
                 "--backends", b, "--dim", "batch=1:1", "-q"], 0)
        # One untimed load of the OpenCL program fills its cache.
        run([runner, programs["opencl"], "--input", inputs] + backend_options("opencl", args.work_dir), 0)
        lat = {b: {"min": [], "median": []} for b in backends}
        for r in range(args.rounds):
            order = backends if r % 2 == 0 else backends[::-1]
            for b in order:
                out = run([runner, programs[b], "--input", inputs, "--warmup", "3", "--iterations",
                           str(args.iterations), "--json"] + backend_options(b, args.work_dir), args.nice)
                l = json.loads(out[out.index("{"):])["latency_ms"]
                lat[b]["min"].append(l["min"])
                lat[b]["median"].append(l["median"])
        print("### %s\n" % model)
        print("| backend | median of run medians (ms) | min (ms) | runs |")
        print("|---|---:|---:|---:|")
        for b in backends:
            print("| %s | %.2f | %.2f | %d x %d |" % (b, statistics.median(lat[b]["median"]),
                                                    min(lat[b]["min"]), args.rounds, args.iterations))
        ratio_med = statistics.median(lat["opencl"]["median"]) / statistics.median(lat["onednn"]["median"])
        ratio_min = min(lat["opencl"]["min"]) / min(lat["onednn"]["min"])
        print("\nopencl / onednn: %.2fx (medians), %.2fx (mins)\n" % (ratio_med, ratio_min))
        # Per layer.
        layers = {}
        order = []
        for b in backends:
            for event, ms in profile(runner, programs[b], inputs, b, args.work_dir, args.iterations, args.nice):
                name, kind = layer_of(event, b)
                key = name[:34]  # OpenCL labels are cut at 47 characters
                if key not in layers:
                    layers[key] = {"opencl": {}, "onednn": {}}
                    order.append(key)
                layers[key][b][kind] = layers[key][b].get(kind, 0.0) + ms
        print("| layer | opencl kernels (ms) | onednn primitives (ms) |")
        print("|---|---|---|")
        totals = {b: 0.0 for b in backends}
        for key in order:
            cells = []
            for b in backends:
                parts = layers[key][b]
                totals[b] += sum(parts.values())
                cells.append(", ".join("%s %.2f" % (k, v) for k, v in parts.items()) or "-")
            print("| %s | %s | %s |" % (key or "(unnamed)", cells[0], cells[1]))
        print("| **total reported** | %.2f | %.2f |\n" % (totals["opencl"], totals["onednn"]))


if __name__ == "__main__":
    main()
