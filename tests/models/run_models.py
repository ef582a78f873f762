#!/usr/bin/python3
"""End to end through the command-line tools: tessera-compile each fixture, run it with
tessera-run at batch 1 (and 4 for dynamic-batch models), and compare with PyTorch's outputs:
max |diff| <= 1e-4 * max |ref|.

Usage: run_models.py --compile TOOL --run TOOL --fixtures DIR --work DIR
                     [--backends LIST|default] [--models a,b,...]
--backends is passed to tessera-compile ("portable" for kernels only; "default" for every
backend built; "each" runs once per backend built, alone). Prints one line per model and batch;
exits 1 if any fails.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

DEFAULT_MODELS = ["mlp", "mlp_op11", "mlp_op17", "transformer", "transformer_op17", "transformer_seq",
                  "ops_mix", "ops_mix_op11",
                  "mobilenet_v2", "resnet18"]
TOLERANCE = 1e-4


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}\n  exit {p.returncode}\n  {p.stderr.strip()}")
    return p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--compile", required=True)
    ap.add_argument("--run", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--backends", default="default")
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS))
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    if args.backends == "each":
        built = run([args.compile, "--list-backends"]).split()
        print(f"backends built: {', '.join(built) or 'none'}", flush=True)
        failures = 0
        for b in built:
            failures += run_all(args, b)
    else:
        failures = run_all(args, args.backends)
    if failures:
        print(f"run_models: {failures} failure(s)", file=sys.stderr)
        return 1
    return 0


def run_all(args, backends):
    failures = 0
    for name in args.models.split(","):
        d = os.path.join(args.fixtures, name)
        if not os.path.exists(os.path.join(d, "model.onnx")):
            print(f"{name}: fixture missing in {args.fixtures}", flush=True)
            failures += 1
            continue
        meta = json.load(open(os.path.join(d, "meta.json")))
        tag = backends.replace(",", "+")
        program = os.path.join(args.work, f"{name}.{tag}.tsr")
        cmd = [args.compile, os.path.join(d, "model.onnx"), "-o", program, "--json", "-q"]
        for sym, (lo, hi) in meta["dims"].items():
            cmd += ["--dim", f"{sym}={lo}:{hi}"]
        if backends != "default":
            cmd += ["--backends", backends]
        try:
            t0 = time.time()
            report = json.loads(run(cmd))
            compile_s = time.time() - t0
        except Exception as e:  # noqa: BLE001 - report and go on
            print(f"{name}: compile FAILED: {e}", flush=True)
            failures += 1
            continue
        delegates = ", ".join(sorted({x["backend"] for x in report["delegates"]})) or "none"
        if "cases" in meta:
            cases = [(c["suffix"], c["dims"]) for c in meta["cases"]]
        else:  # fixtures from an older make_fixtures.py: batch 1, and 4 when dynamic
            cases = [("", {"batch": 1} if meta["dims"] else {})] + ([("_b4", {"batch": 4})] if meta["dims"] else [])
        if backends == "armnn":
            # ArmNN's device on x86 is CpuRef, a reference implementation (MobileNetV2 takes 7 s
            # per batch-1 inference): the first case only, which already checks every op.
            cases = cases[:1]
        for suffix, dims in cases:
            batch = ",".join(f"{k}={v}" for k, v in dims.items()) or "static"
            out_dir = os.path.join(args.work, f"{name}.{tag}.case{suffix or '1'}")
            os.makedirs(out_dir, exist_ok=True)
            cmd = [args.run, program, "--input", f"{meta['input']}={os.path.join(d, 'input' + suffix + '.npy')}",
                   "--output-dir", out_dir]
            for k, v in dims.items():
                cmd += ["--dim", f"{k}={v}"]
            try:
                run(cmd)
                got = np.load(os.path.join(out_dir, meta["output"] + ".npy"))
            except Exception as e:  # noqa: BLE001
                print(f"{name} {batch}: run FAILED: {e}", flush=True)
                failures += 1
                continue
            ref = np.load(os.path.join(d, "output" + suffix + ".npy"))
            max_ref = float(np.abs(ref).max())
            if got.shape != ref.shape:
                print(f"{name} {batch}: FAILED: shape {got.shape}, want {ref.shape}", flush=True)
                failures += 1
                continue
            diff = float(np.abs(got.astype(np.float64) - ref).max())
            ok = max_ref > 0.05 and diff <= TOLERANCE * max_ref and np.isfinite(got).all()
            failures += 0 if ok else 1
            print(f"[{backends}] {name} {batch}: {'ok' if ok else 'FAILED'}  max|diff| {diff:.3g}  max|ref| "
                  f"{max_ref:.3g}  ratio {diff / max_ref:.2g}  delegates: {delegates} ({len(report['delegates'])})"
                  f"  compile {compile_s:.1f}s", flush=True)
    return failures


if __name__ == "__main__":
    sys.exit(main())
