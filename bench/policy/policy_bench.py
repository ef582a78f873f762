#!/usr/bin/env python3
"""Does the default (policy auto) pay off? Two measurements, each as ratios within one run.

threads:    every fixture model compiled without --backends (so mixed xnnpack/onednn/portable
            programs too), run with Tessera's defaults against the same program with every CPU
            backend fixed at 1 thread. On a machine with 2 usable CPUs the default should never be
            slower (ratio default / one-thread <= 1).
neighbour:  ResNet-18 while another process keeps one CPU busy (pinned to the last usable CPU):
            the default against num_threads=2 and num_threads=1 fixed; the default should be no
            slower than the better of the two.

Rounds alternate the variants so drift in the machine's speed hits them alike; each figure is
the median over rounds of each round's median latency.

Usage (after building and exporting the fixtures, `ninja -C build model_fixtures`):
  /usr/bin/python3 bench/policy/policy_bench.py --build build [--models a,b] [--rounds 3]
      [--iterations 30] [--min-run-ms 300] [--part threads|neighbour|both] [--extra] [--json OUT] [--fixtures DIR]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BASE_MODELS = ["mlp", "transformer", "ops_mix", "mobilenet_v2", "resnet18"]
EXTRA_MODELS = ["squeezenet1_0", "shufflenet_v2_x0_5", "mnasnet0_5", "efficientnet_b0",
                "regnet_y_400mf", "mobilenet_v3_small", "googlenet", "densenet121",
                "resnext50_32x4d"]
ONE_THREAD = ["--global-option", "xnnpack.num_threads=1", "--global-option", "onednn.num_threads=1"]
TWO_THREADS = ["--global-option", "xnnpack.num_threads=2", "--global-option", "onednn.num_threads=2"]


def compile_model(args, name):
    src = os.path.join(args.fixtures, name, "model.onnx")
    out = os.path.join(args.work, name + ".tsr")
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(src):
        subprocess.run([args.compile, src, "-o", out, "--dim", "batch=1:8"], check=True,
                       stdout=subprocess.DEVNULL)
    return out


def run_once(args, program, extra, prefix=(), iterations=None):
    cmd = list(prefix) + [args.run, program, "--json", "--dim", "batch=1", "--iterations",
                          str(iterations or args.iterations), "--warmup", str(args.warmup)] + list(extra)
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    report = json.loads(done.stdout)
    threads = sorted({o.get("resolved", o["value"]) for d in report["delegates"]
                      for o in d["options"] if o["key"] == "num_threads"})
    return report["latency_ms"]["median"], report["policy"], threads


def iterations_for(args, program):
    """Enough iterations for each run to last about --min-run-ms (a model of 1 ms needs a few
    hundred for its median to settle on a shared VM), at least --iterations."""
    probe_ms, _, _ = run_once(args, program, [], iterations=5)
    return max(args.iterations, min(5000, int(args.min_run_ms / max(probe_ms, 1e-3))))


def alternate(args, program, variants):
    """variants: {name: extra args}; returns {name: (median of round medians, policy, threads)}."""
    results = {name: [] for name in variants}
    info = {}
    iterations = iterations_for(args, program)
    for _ in range(args.rounds):
        for name, extra in variants.items():
            ms, policy, threads = run_once(args, program, extra, iterations=iterations)
            results[name].append(ms)
            info[name] = (policy, threads)
    return {name: (statistics.median(v), info[name][0], info[name][1])
            for name, v in results.items()}


def part_threads(args, models):
    rows = []
    for name in models:
        if not os.path.exists(os.path.join(args.fixtures, name, "model.onnx")):
            print(f"  {name}: no fixture (skipped)", file=sys.stderr)
            continue
        program = compile_model(args, name)
        r = alternate(args, program, {"default": [], "one_thread": ONE_THREAD})
        ratio = r["default"][0] / r["one_thread"][0]
        rows.append({"model": name, "default_ms": r["default"][0],
                     "one_thread_ms": r["one_thread"][0], "ratio": ratio,
                     "default_threads": r["default"][2],
                     "policy": r["default"][1]["effective"]})
        print(f"  {name:22s} default {r['default'][0]:8.3f} ms (threads {','.join(r['default'][2]) or '-'})"
              f"  1 thread {r['one_thread'][0]:8.3f} ms  ratio {ratio:5.2f}", flush=True)
    return rows


def part_neighbour(args):
    program = compile_model(args, "resnet18")
    cpus = sorted(os.sched_getaffinity(0))
    pin = str(cpus[-1])
    busy = subprocess.Popen(["taskset", "-c", pin, sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(1.0)
        r = alternate(args, program, {"default": [], "two_threads": TWO_THREADS,
                                      "one_thread": ONE_THREAD})
    finally:
        busy.kill()
        busy.wait()
    best = min(r["two_threads"][0], r["one_thread"][0])
    row = {"model": "resnet18", "neighbour_cpu": int(pin), "default_ms": r["default"][0],
           "two_threads_ms": r["two_threads"][0], "one_thread_ms": r["one_thread"][0],
           "ratio_to_best_fixed": r["default"][0] / best, "default_threads": r["default"][2],
           "policy_reason": r["default"][1]["reason"]}
    print(f"  resnet18 with a busy neighbour on CPU {pin}: default {row['default_ms']:.2f} ms "
          f"(threads {','.join(row['default_threads'])}; {row['policy_reason']}), 2 threads "
          f"{row['two_threads_ms']:.2f} ms, 1 thread {row['one_thread_ms']:.2f} ms, default / best "
          f"fixed {row['ratio_to_best_fixed']:.2f}", flush=True)
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--models", default="")
    p.add_argument("--extra", action="store_true", help="also the slow torchvision set")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--iterations", type=int, default=30, help="at least this many per run")
    p.add_argument("--min-run-ms", type=float, default=300.0,
                   help="more iterations for fast models, so that each run lasts this long")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--part", choices=["threads", "neighbour", "both"], default="both")
    p.add_argument("--json", default="")
    p.add_argument("--fixtures", default="", help="default: BUILD/fixtures")
    args = p.parse_args()
    args.run = os.path.join(args.build, "tools/tessera-run/tessera-run")
    args.compile = os.path.join(args.build, "tools/tessera-compile/tessera-compile")
    args.fixtures = args.fixtures or os.path.join(args.build, "fixtures")
    args.work = os.path.join(args.build, "bench-policy")
    os.makedirs(args.work, exist_ok=True)
    models = args.models.split(",") if args.models else BASE_MODELS + (EXTRA_MODELS if args.extra else [])
    out = {"cpus": len(os.sched_getaffinity(0)), "rounds": args.rounds,
           "iterations": args.iterations}
    if args.part in ("threads", "both"):
        print("default settings against 1 thread (ratio <= 1 is the goal):")
        out["threads"] = part_threads(args, models)
    if args.part in ("neighbour", "both"):
        print("busy neighbour:")
        out["neighbour"] = part_neighbour(args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
