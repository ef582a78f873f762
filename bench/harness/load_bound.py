"""Issue 13's bound on the first, measuring load, for two builds of tessera-run side by side.

For each model and thread count, `--reps` rounds of four loads, the order rotating: the default
program measuring with BEFORE's tessera-run, measuring with AFTER's (each from an empty selection
cache), and each one's fixed load (`--select fixed`, the program's own backends). Each load is a
process of its own, `--warmup 0 --iterations 1`, stdout to a file (a pipe makes the load sampler
wait). The bound of a measuring load is 3 x the same build's fixed load + the candidates' inits
that load reported (every candidate and variant of every delegate it measured, and the
whole-method check's re-inits), as bench/harness/harness.py's --load-reps computes it; the
medians of each kind are compared. (Until the twentieth session both bounds used AFTER's fixed
load; a change that speeds up fixed loads then read as BEFORE being over its bound.)

The programs and fixtures are the harness's (build-bench/harness/<model>/<model>.default.tsr,
build-bench/harness/fixtures/<model>/input.npy): run bench/harness/run.sh once first.

Usage: /usr/bin/python3 bench/harness/load_bound.py --before OLD/tessera-run --after NEW/tessera-run
       [--models a,b] [--threads 1,2] [--reps 3] [--json-out FILE]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from harness import candidates_init_ms  # bench/harness/harness.py, beside this file

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODELS = ("squeezenet1_1,shufflenet_v2_x1_0,mnasnet0_5,efficientnet_b0,regnet_y_400mf,"
          "mobilenet_v3_small,googlenet,densenet121,resnext50_32x4d,mobilenet_v2,resnet18,"
          "transformer")


def env_for(exe):
    """The environment to run `exe` in: beside a harness snapshot of the libraries (harness.py's
    bin/), LD_LIBRARY_PATH names that directory. The tools find libtessera through a RUNPATH into
    the build tree, so without it a snapshot's tessera-run runs the build tree's library and
    backends: before the twentieth session, a "before" here ran the "after" build's selection."""
    env = dict(os.environ)
    here = os.path.dirname(os.path.abspath(exe))
    if any(f.startswith("libtessera.so.") for f in os.listdir(here)):
        env["LD_LIBRARY_PATH"] = here + (":" + env["LD_LIBRARY_PATH"]
                                         if env.get("LD_LIBRARY_PATH") else "")
    return env


def load(exe, program, input_npy, threads, fixed, cache, out_path):
    """One load: its load_ms, its candidates' inits, and how many candidates the budget cut."""
    argv = [exe, program, "--option", f"onednn.num_threads={threads}", "--option",
            f"xnnpack.num_threads={threads}", "--input", f"0={input_npy}", "--dim", "batch=1",
            "--warmup", "0", "--iterations", "1", "--json"]
    argv += ["--select", "fixed"] if fixed else ["--select-cache", cache]
    with open(out_path, "w") as out:
        subprocess.run(argv, stdout=out, stderr=subprocess.DEVNULL, check=True, env=env_for(exe))
    j = json.load(open(out_path))
    candidates = [c for d in j.get("delegates", [])
                  for c in (d.get("selection") or {}).get("candidates") or []]
    cut = sum(1 for c in candidates if (c.get("reason") or "").startswith("skipped (budget"))
    return j["load_ms"], candidates_init_ms(j), cut


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--before", required=True, help="tessera-run of the build to compare with")
    p.add_argument("--after", required=True, help="tessera-run of the build measured")
    p.add_argument("--models", default=MODELS)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--pause", type=float, default=0.3, help="seconds between loads")
    p.add_argument("--work-dir", default=os.path.join(ROOT, "build-bench", "harness"))
    p.add_argument("--json-out")
    args = p.parse_args()

    rows = []
    scratch = tempfile.mkdtemp(prefix="tessera-load-bound-")
    cache = os.path.join(scratch, "cache")
    out_path = os.path.join(scratch, "load.json")
    for model in args.models.split(","):
        program = os.path.join(args.work_dir, model, f"{model}.default.tsr")
        input_npy = os.path.join(args.work_dir, "fixtures", model, "input.npy")
        for threads in (int(t) for t in args.threads.split(",")):
            kinds = [("before", args.before, False), ("after", args.after, False),
                     ("before_fixed", args.before, True), ("after_fixed", args.after, True)]
            got = {k: {"load_ms": [], "inits_ms": [], "budget_cut": []} for k, _, _ in kinds}
            for rep in range(args.reps):
                shift = rep % len(kinds)
                for kind, exe, fixed in kinds[shift:] + kinds[:shift]:
                    shutil.rmtree(cache, ignore_errors=True)
                    ms, inits, cut = load(exe, program, input_npy, threads, fixed, cache, out_path)
                    got[kind]["load_ms"].append(ms)
                    got[kind]["inits_ms"].append(inits)
                    got[kind]["budget_cut"].append(cut)
                    time.sleep(args.pause)
            med = {k: {f: statistics.median(v) for f, v in got[k].items()} for k in got}
            row = {"model": model, "threads": threads, "loads": got, "median": med}
            for kind in ("before", "after"):
                bound = 3 * med[f"{kind}_fixed"]["load_ms"] + med[kind]["inits_ms"]
                row[f"{kind}_bound_ms"] = bound
                row[f"{kind}_over_bound"] = med[kind]["load_ms"] / bound
            rows.append(row)
            print(f"{model} {threads}t: before: fixed {med['before_fixed']['load_ms']:.0f} ms, "
                  f"measuring {med['before']['load_ms']:.0f} ms ({row['before_over_bound']:.2f} x "
                  f"its bound, {med['before']['budget_cut']:.0f} cut); after: fixed "
                  f"{med['after_fixed']['load_ms']:.0f} ms, measuring "
                  f"{med['after']['load_ms']:.0f} ms ({row['after_over_bound']:.2f} x, "
                  f"{med['after']['budget_cut']:.0f} cut)", flush=True)
    shutil.rmtree(scratch, ignore_errors=True)
    for kind in ("before", "after"):
        over = [r for r in rows if r[f"{kind}_over_bound"] > 1.0]
        print(f"{kind}: over the bound in {len(over)} of {len(rows)} rows" +
              (": " + ", ".join(f"{r['model']} {r['threads']}t {r[f'{kind}_over_bound']:.2f}"
                                for r in over) if over else ""))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                       "command": " ".join(["bench/harness/load_bound.py"] + sys.argv[1:]),
                       "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
