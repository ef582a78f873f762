#!/usr/bin/env python3
"""Load time and first execute with a startup backend (LoadOptions::startup_backend).

For each model, compiles the fixture for OpenCL (tessera-compile --backends opencl --dim
batch=1:1), then in every round runs tessera-run --json, each in a fresh process, in this order:

  cpu        the program retargeted to the startup backend (opencl=B): a CPU-only load
  cold       OpenCL with an empty program cache and no startup backend
  startup    OpenCL with an empty program cache and --startup-backend B
  warm       OpenCL with the cache the startup run filled, and --startup-backend B (unused)

with PoCL's own kernel cache off (POCL_KERNEL_CACHE=0; --pocl-cache keeps it), so that a cold
Tessera cache is a cold build; and prints per model the median over the rounds of load_method's time and of the first
execute (one cold run, --iterations 1), and for the startup runs how many of --iterations
executes each backend served. Standard library only; prints Markdown.

  bench/opencl/startup_bench.py --build-dir build --fixtures build/fixtures \\
      --models mobilenet_v2,resnet18 --startup-backend xnnpack --rounds 3
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys


def run(cmd):
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if out.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (" ".join(cmd), out.stdout, out.stderr))
    return out.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--fixtures", default=None, help="default: BUILD_DIR/fixtures")
    ap.add_argument("--models", default="mobilenet_v2,resnet18")
    ap.add_argument("--startup-backend", default="xnnpack")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=1,
                    help="executes per startup run (the first is the one timed)")
    ap.add_argument("--work-dir", default="/tmp/tessera-startup-bench")
    ap.add_argument("--pocl-cache", action="store_true",
                    help="leave PoCL's own kernel cache on (then 'cold' builds are PoCL-warm)")
    args = ap.parse_args()
    if not args.pocl_cache:
        os.environ["POCL_KERNEL_CACHE"] = "0"
    fixtures = args.fixtures or os.path.join(args.build_dir, "fixtures")
    compiler = os.path.join(args.build_dir, "tools/tessera-compile/tessera-compile")
    runner = os.path.join(args.build_dir, "tools/tessera-run/tessera-run")
    os.makedirs(args.work_dir, exist_ok=True)
    b = args.startup_backend

    print("| model | CPU-only load (%s) | cold OpenCL load | load with startup backend | ratio "
          "to CPU-only | first execute: CPU-only / startup | warm load (startup unused) |" % b)
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for model in args.models.split(","):
        program = os.path.join(args.work_dir, model + ".opencl.tsr")
        run([compiler, os.path.join(fixtures, model, "model.onnx"), "-o", program,
             "--backends", "opencl", "--dim", "batch=1:1", "-q"])
        cache = os.path.join(args.work_dir, model + "-cache")
        res = {k: {"load": [], "first": []} for k in ("cpu", "cold", "startup", "warm")}
        notes = []
        for _ in range(args.rounds):
            def one(kind, extra, iterations=1):
                r = json.loads(run([runner, program, "--json", "--iterations", str(iterations)] +
                                   extra))
                res[kind]["load"].append(r["load_ms"])
                res[kind]["first"].append(r["latency_ms"]["max"] if iterations > 1
                                          else r["latency_ms"]["min"])
                return r
            one("cpu", ["--retarget", "opencl=" + b])
            shutil.rmtree(cache, ignore_errors=True)
            one("cold", ["--option", "opencl.cache_dir=" + cache])
            shutil.rmtree(cache, ignore_errors=True)
            r = one("startup", ["--option", "opencl.cache_dir=" + cache, "--startup-backend", b],
                    args.iterations)
            st = r["delegates"][0]["startup"]
            notes.append("%s: %s" % (st["state"], st["executes"]) if st else "not used")
            r = one("warm", ["--option", "opencl.cache_dir=" + cache, "--startup-backend", b])
            if r["delegates"][0]["startup"] is not None:
                notes.append("warm load used the startup backend")
        med = {k: {m: statistics.median(v[m]) for m in v} for k, v in res.items()}
        print("| %s | %.0f ms | %.0f ms | %.0f ms | %.2fx | %.1f / %.1f ms | %.0f ms |" % (
            model, med["cpu"]["load"], med["cold"]["load"], med["startup"]["load"],
            med["startup"]["load"] / med["cpu"]["load"], med["cpu"]["first"],
            med["startup"]["first"], med["warm"]["load"]))
        print("\n%s startup runs: %s\n" % (model, "; ".join(notes)), file=sys.stderr)
        for k in res:
            print("%s %s load %s first %s" % (model, k, ["%.0f" % x for x in res[k]["load"]],
                                              ["%.1f" % x for x in res[k]["first"]]),
                  file=sys.stderr)


if __name__ == "__main__":
    main()
