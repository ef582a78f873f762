#!/usr/bin/python3
"""Peer benchmark: the same ONNX model and input through Tessera (each CPU backend built),
ONNX Runtime's CPU provider (onnxruntime-node) and PyTorch (eager), alternating in one run.

Design
- Each engine runs in its own process. ONNX Runtime and PyTorch are long-lived workers (one per
  thread count) that load the model once and then time W warm-up + N timed runs per command;
  Tessera is `tessera-run --warmup W --iterations N --json`, one process per round (it reports
  min/median/max of its timed runs; load is reported separately). So for every engine process
  start-up and model load are outside the measured latency, and every engine gets the same W and N.
- Rounds: every round runs every (engine, threads) pair once, in an order rotated from round to
  round, so machine noise (a shared, loaded machine) hits all engines alike.
  Per engine: median = median of the per-round medians, min/max = over all timed runs.
- Bursts within a round (--interleave K, default 5): Tessera's engines and ORT take turns in
  bursts of K timed runs (each after a --burst-pause and at least --burst-warmup-ms of untimed
  runs), the order rotating each burst; Tessera's engines are then `tessera-run --serve`, one
  process per round that loads once and answers the bursts. On the 2-vCPU AMD guest the
  medians of consecutive 25 ms bursts of one ORT process correlate (0.63 one burst apart, 0.15
  twenty apart; blocks of 20 bursts ranged 4.94-6.08 ms for MobileNetV2 at 1 thread): a slow
  stretch lasts longer than a burst but shorter than an engine's whole round, so whole-round
  turns let it fall on one engine. PyTorch, the portable kernels and engines --engine-budget slows run on their own
  after the bursts. --interleave 0: every engine's round in one go, as before.
- ORT's worker is a new process every round (--fresh-ort 1, the default), as Tessera's rounds
  are: MobileNetV2 at one thread, eight fresh ORT processes pinned to one CPU (150 runs each
  after 25 untimed) had medians from 5.10 to 6.17 ms (Tessera's, alternating with them, 4.17 to
  4.98), so one ORT process for the whole run set every ratio of the run a few percent one way.
  PyTorch's worker (a reference only, and slow to start) lives through the run.
- One-thread rounds on one CPU (--pin, default auto): in each round every engine at 1 thread
  runs pinned to the same CPU, the CPU rotating over the usable ones from round to round (the
  first pass, where tessera-default measures, on the first of them). On these 2-vCPU guests one
  vCPU ran 20-25 % slower than the other for minutes at a time (docs/performance.md, seventeenth
  and twenty-fourth sessions), so an unpinned 1-thread process landed on a fast or a slow one by
  chance and the ratio of two engines moved with it. Pinned, Tessera sees one usable CPU (its
  policy and selection key say so; each engine at 1 thread is told num_threads=1 anyway).
  Engines at 2 or more threads are not pinned.
- Peak RSS: of each engine's own process (/usr/bin/time's %M: the child's ru_maxrss), which
  includes the interpreter for ORT (node) and PyTorch (python); the workers also report their RSS
  before loading the model (the interpreter and library alone). For Tessera, the peak and the
  load time are those of the timed rounds: the first run of each engine (the output pass) is
  kept apart, because for the default engine it is the load that measures the candidates
  (reported as first_load_ms and first_load_peak_rss_mib) and the rounds load from the cache.
- Outputs: every engine's output for the same input is compared with PyTorch's reference (max abs
  diff), so a fast wrong answer cannot win.
- Roofline: FLOPs of the model (2 x MACs of Conv/Gemm/MatMul, counted from the ONNX graph after
  shape inference) over the peak single-core FLOP/s of bench/roofline's FMA loop.

Usage: bench/harness/run.sh [--models mobilenet_v2,resnet18] [--threads 1,2] [--iterations N]
       [--rounds R] [--warmup W] [--build-dir build] [--work-dir build-bench/harness]
       [--markdown FILE] [--plot FILE]
"""

import argparse
import datetime
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import report  # bench/harness/report.py, beside this file

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
PY = "/usr/bin/python3"
TOLERANCE = 1e-3  # max abs diff allowed against PyTorch (outputs are O(1))


def log(msg):
    print(msg, file=sys.stderr, flush=True)


TIME = "/usr/bin/time"  # Debian package "time"


def with_rss(argv, rss_file):
    """argv run under /usr/bin/time, which writes the child's peak RSS (KiB) to rss_file.

    The ru_maxrss that wait4 gives for a direct child of this (large) Python process is useless:
    Linux carries the high-water mark of the forked copy of the parent across exec, so every
    child would report at least the harness's own RSS. /usr/bin/time is small."""
    if os.path.exists(TIME):
        return [TIME, "-f", "%M", "-o", rss_file] + argv
    return argv


def pin_tree(pid, cpus):
    """Every thread of `pid` and of its descendants (the workers run under /usr/bin/time) on
    `cpus`."""
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            tids = os.listdir(f"/proc/{p}/task")
        except FileNotFoundError:
            continue
        for tid in tids:
            try:
                os.sched_setaffinity(int(tid), cpus)
                with open(f"/proc/{p}/task/{tid}/children") as f:
                    todo += [int(c) for c in f.read().split()]
            except (ProcessLookupError, FileNotFoundError):
                pass


def wait_child(proc, rss_file):
    """Reaps proc and returns (exit code, peak RSS in KiB)."""
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    rss = ru.ru_maxrss  # upper bound (includes the harness's RSS at fork): fallback only
    try:
        with open(rss_file) as f:
            rss = int(f.read().split()[-1])
    except (OSError, ValueError, IndexError):
        pass
    return proc.returncode, rss


# ---------------------------------------------------------------------------------------------
# FLOPs from the ONNX graph


def count_flops(onnx_path, batch=1):
    import onnx
    from onnx import numpy_helper, shape_inference
    model = onnx.load(onnx_path)
    for inp in model.graph.input:
        for d in inp.type.tensor_type.shape.dim:
            if d.dim_param:
                d.ClearField("dim_param")
                d.dim_value = batch
    for out in model.graph.output:
        for d in out.type.tensor_type.shape.dim:
            if d.dim_param:
                d.ClearField("dim_param")
                d.dim_value = batch
    model = shape_inference.infer_shapes(model)
    shapes = {}
    for vi in list(model.graph.value_info) + list(model.graph.input) + list(model.graph.output):
        shapes[vi.name] = [d.dim_value for d in vi.type.tensor_type.shape.dim]
    for init in model.graph.initializer:
        shapes[init.name] = list(init.dims)
    macs = {"Conv": 0, "Gemm": 0, "MatMul": 0}
    for node in model.graph.node:
        if node.op_type == "Conv":
            w = shapes[node.input[1]]  # [Cout, Cin/group, kh, kw]
            y = shapes[node.output[0]]  # [N, Cout, Ho, Wo]
            per_out = int(np.prod(w[1:]))
            macs["Conv"] += int(np.prod(y)) * per_out
        elif node.op_type in ("Gemm", "MatMul"):
            a = shapes.get(node.input[0], [])
            y = shapes.get(node.output[0], [])
            if not a or not y:  # a shape inference could not give (symbolic dims)
                continue
            trans_a = any(at.name == "transA" and at.i for at in node.attribute)
            k = a[-2] if trans_a else a[-1]
            macs[node.op_type] += int(np.prod(y)) * k
    total = sum(macs.values())
    return {"macs": total, "flops": 2 * total, "macs_by_op": macs}


# ---------------------------------------------------------------------------------------------
# Tools


def roofline(work_dir, build_dir, seconds):
    exe = os.path.join(build_dir, "bench", "roofline", "tessera_roofline")
    if not os.path.exists(exe):
        exe = os.path.join(work_dir, "tessera_roofline")
        src = os.path.join(ROOT, "bench", "roofline", "fma_peak.cpp")
        cxx = os.environ.get("CXX", "c++")
        if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
            log(f"building {exe}")
            subprocess.run([cxx, "-O3", "-march=native", "-ffp-contract=fast", "-std=c++20", src,
                            "-o", exe], check=True)
    out = subprocess.run([exe, "--json", "--seconds", str(seconds)], check=True,
                         capture_output=True, text=True).stdout
    r = json.loads(out)
    r["binary"] = os.path.relpath(exe, ROOT)
    return r


def tessera_backends(compile_exe, run_exe):
    listed = subprocess.run([compile_exe, "--list-backends"], check=True, capture_output=True,
                            text=True).stdout.split()
    # The runtime's registry (tessera-run --list-options) tells which can run and their options.
    opts = subprocess.run([run_exe, "--list-options", "--json"], check=True, capture_output=True,
                          text=True).stdout
    schemas = {b["name"]: [o["key"] for o in b["options"]] for b in json.loads(opts)["backends"]}
    return [b for b in listed if b != "portable"], schemas


def export_fixtures(models, fixtures_dir):
    cmd = [PY, os.path.join(ROOT, "tests", "models", "make_fixtures.py"), fixtures_dir,
           "--only", ",".join(models)]
    log("exporting: " + " ".join(cmd))
    subprocess.run(cmd, check=True)


# ---------------------------------------------------------------------------------------------
# Engines


# The worker protocol, one JSON object a line, spoken by ort_worker.js, torch_worker.py and
# `tessera-run --json --serve`.

def read_reply(proc, name, err):
    """The next line from `proc` as JSON; raises with its stderr (`err`) if it ended, or with
    the error it answered."""
    line = proc.stdout.readline()
    if not line:
        err.seek(0)
        raise RuntimeError(f"{name}: the process ended: {err.read().decode()[-2000:]}")
    msg = json.loads(line)
    if "error" in msg:
        raise RuntimeError(f"{name}: {msg['error']}")
    return msg


def ask_runs(proc, name, err, warmup, iterations):
    """`warmup` untimed and `iterations` timed runs; returns the timed runs' milliseconds."""
    proc.stdin.write(json.dumps({"cmd": "run", "warmup": warmup, "iterations": iterations}) + "\n")
    return read_reply(proc, name, err)["times_ms"]


def send_quit(proc):
    proc.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
    proc.stdin.close()


class Worker:
    """An ORT or PyTorch process answering JSON commands: one for the whole run, or with
    `fresh` a new one for every round (ORT with --fresh-ort), as each Tessera round is a process
    of its own."""

    def __init__(self, name, backend, threads, argv, output_bin, fresh=False):
        self.name, self.backend, self.threads = name, backend, threads
        self.argv, self.output_bin, self.fresh = argv, output_bin, fresh
        self.err = tempfile.TemporaryFile()
        self.rss_file = output_bin + ".rss"
        self.peak_rss_kb = None
        self.processes = 0  # started so far
        self.proc = None
        self._spawn()

    def _spawn(self):
        if os.path.exists(self.rss_file):
            os.remove(self.rss_file)
        self.proc = subprocess.Popen(with_rss(self.argv, self.rss_file), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.err, text=True, bufsize=1)
        ready = read_reply(self.proc, self.name, self.err)
        if self.processes == 0:
            self.ready = ready  # the row's load and baseline RSS: the first process's
        self.processes += 1

    def _retire(self):
        send_quit(self.proc)
        rc, rss = wait_child(self.proc, self.rss_file)
        self.proc = None
        if rc != 0:
            raise RuntimeError(f"{self.name}: exited {rc}")
        self.peak_rss_kb = rss if self.peak_rss_kb is None else max(self.peak_rss_kb, rss)

    def run(self, warmup, iterations, cpus=None):
        self.start(cpus)
        times = self.burst(warmup, iterations)
        self.stop()
        return {"median": statistics.median(times), "min": min(times), "max": max(times),
                "times": times}

    # --interleave: a round pins the worker (started for it when fresh) and ends it when fresh.
    def start(self, cpus=None):
        if self.proc is None:
            self._spawn()
        if cpus is not None:
            pin_tree(self.proc.pid, cpus)

    def burst(self, warmup, iterations):
        return ask_runs(self.proc, self.name, self.err, warmup, iterations)

    def stop(self):
        if self.fresh:
            self._retire()

    def close(self):
        if self.proc is not None:
            self._retire()

    def output(self):
        return np.fromfile(self.output_bin, dtype=np.float32)


def candidates_init_ms(run_json):
    """What a load's selection spent initialising candidates: every candidate and option variant
    of every delegate it measured (not those served from the cache), each one's init made again
    alone (alone_init_ms) included, plus the whole-method check's re-inits; 0 for a load that did
    not measure."""
    sels = [d.get("selection") or {} for d in run_json.get("delegates", [])]
    measured = [s for s in sels if not s.get("cached")]
    methods = [s["method"] for s in measured if s.get("method")]
    return (sum((c.get("init_ms") or 0) + (c.get("alone_init_ms") or 0)
                for s in measured for c in s.get("candidates", [])) +
            (methods[0].get("reinit_ms") or 0 if methods else 0))


class TesseraEngine:
    """tessera-run, one process per round."""

    def __init__(self, name, backend, threads, run_exe, program, input_npy, out_dir, options,
                 extra_args=()):
        self.name, self.backend, self.threads = name, backend, threads
        self.run_exe, self.program, self.input_npy = run_exe, program, input_npy
        self.out_dir, self.options = out_dir, options
        self.extra_args = list(extra_args)
        self.peak_rss_kb = 0
        # Per run, the first being the output pass (for tessera-default the load that measured;
        # the timed rounds load from the selection cache).
        self.rss_kb = []
        self.load_ms = []
        # Per run: the sum of every selection candidate's init_ms (each delegate, each option
        # variant) and the whole-method check's re-inits; 0 for a load that did not measure.
        self.init_ms = []
        self.delegates = None
        self.ready = {}
        # Per run: the threads the load's policy derived (its `policy.threads`), the reason it
        # gave, and the largest thread count a delegate resolved (an option may set it).
        self.policy_threads = []
        self.policy_reasons = []
        self.delegate_threads = []

    def _argv(self, warmup, iterations, extra=()):
        argv = [self.run_exe, self.program, "--input", f"0={self.input_npy}", "--dim", "batch=1",
                "--warmup", str(warmup), "--iterations", str(iterations), "--json"]
        for o in self.options:
            argv += ["--option", o]
        return argv + self.extra_args + list(extra)

    def _spawn(self, argv, cpus, stdin=None):
        self.err = tempfile.TemporaryFile()
        self.rss_file = os.path.join(self.out_dir, "rss")
        if os.path.exists(self.rss_file):
            os.remove(self.rss_file)
        return subprocess.Popen(with_rss(argv, self.rss_file), stdin=stdin, stdout=subprocess.PIPE,
                                stderr=self.err, text=True, bufsize=1,
                                preexec_fn=None if cpus is None else
                                (lambda: os.sched_setaffinity(0, cpus)))

    def _reap(self, proc, argv):
        rc, rss = wait_child(proc, self.rss_file)
        if rc != 0:
            self.err.seek(0)
            raise RuntimeError(f"{self.name}: {' '.join(argv)} exited {rc}: "
                               f"{self.err.read().decode()[-2000:]}")
        self.peak_rss_kb = max(self.peak_rss_kb, rss)
        self.rss_kb.append(rss)

    def run(self, warmup, iterations, write_output=False, cpus=None):
        argv = self._argv(warmup, iterations, ["--output-dir", self.out_dir] if write_output else [])
        proc = self._spawn(argv, cpus)
        out = proc.stdout.read()
        self._reap(proc, argv)
        return self._record(json.loads(out))

    # --interleave: one `tessera-run --serve` process per round, which loads (its report is the
    # round's load and thread counts), then answers bursts of runs until stop().
    def start(self, cpus=None):
        self.serve_argv = self._argv(0, 1, ["--serve"])
        self.proc = self._spawn(self.serve_argv, cpus, stdin=subprocess.PIPE)
        self._record(read_reply(self.proc, self.name, self.err))

    def burst(self, warmup, iterations):
        return ask_runs(self.proc, self.name, self.err, warmup, iterations)

    def stop(self):
        send_quit(self.proc)
        self.proc.stdout.read()
        self._reap(self.proc, self.serve_argv)

    def _record(self, r):
        """Keeps what a report says of its load; returns its latency."""
        self.load_ms.append(r["load_ms"])
        self.init_ms.append(candidates_init_ms(r))
        self.delegates = [{"id": d["id"], "backend": d["backend"], "nodes": d["nodes"],
                           "selection": {"mode": d.get("selection", {}).get("mode"),
                                         "cached": d.get("selection", {}).get("cached"),
                                         "chosen_options": [c.get("options") for c in
                                                            d.get("selection", {}).get("candidates", [])
                                                            if c.get("chosen")],
                                         "method": d.get("selection", {}).get("method")}}
                          for d in r.get("delegates", [])]
        policy = r.get("policy") or {}
        self.policy_threads.append(policy.get("threads"))
        self.policy_reasons.append(policy.get("threads_reason"))
        resolved = [int(o.get("resolved", o["value"])) for d in r.get("delegates", [])
                    for o in d.get("options", []) if o.get("key") == "num_threads" and
                    str(o.get("resolved", o["value"])).isdigit()]
        self.delegate_threads.append(max(resolved) if resolved else None)
        lat = r["latency_ms"]
        return {"median": lat["median"], "min": lat["min"], "max": lat["max"]}

    def close(self):
        pass

    def output(self):
        files = [f for f in os.listdir(self.out_dir) if f.endswith(".npy")]
        return np.load(os.path.join(self.out_dir, files[0])).astype(np.float32).ravel()


def time_loads(e, pinned, reps, pause, work):
    """Issue 13's load bounds, measured on their own: `reps` rounds, each of four loads of one run
    (the order rotating): tessera-default measuring (an empty selection cache), tessera-default
    from that cache, the default program with `--select fixed` (its own backends, no cache), and
    `pinned`'s program (the backend the selection chose, pinned at compile time). Each a process
    of its own, output to a file. Returns per-load lists, their medians and the ratios of the
    medians, and `paired`: the same ratios per round (each load against the others of its own
    round, seconds apart), their median over the rounds. On a host whose speed changes for
    seconds at a time, a ratio of medians can compare a fast stretch with a slow one (ShuffleNetV2's
    fixed loads once read 24, 25, 25, 33, 32 ms and its cached ones 25, 26, 35, 31, 33: 1.25x
    by medians, 1.04x paired)."""
    os.makedirs(work, exist_ok=True)
    # Rotated as three units: the cached load reads what the measuring one just wrote.
    units = [["measuring", "cached"], ["fixed"], ["chosen_fixed"]]
    got = {k: [] for u in units for k in u}
    init = []
    measured_again = 0  # "cached" loads that measured instead of reading the cache
    for rep in range(reps):
        cache = os.path.join(work, f"load-cache-{rep}")
        shutil.rmtree(cache, ignore_errors=True)
        order = [k for u in units[rep % 3:] + units[:rep % 3] for k in u]
        for kind in order:
            engine = pinned if kind == "chosen_fixed" else e
            argv = [engine.run_exe, engine.program]
            if kind in ("measuring", "cached"):
                argv += ["--select-cache", cache]
            elif kind == "fixed":
                argv += ["--select", "fixed"]
            argv += [a for o in engine.options for a in ("--option", o)]
            argv += ["--input", f"0={e.input_npy}", "--dim", "batch=1", "--warmup", "0",
                     "--iterations", "1", "--json"]
            out_path = os.path.join(work, "load.json")
            with open(out_path, "w") as out:
                r = subprocess.run(argv, stdout=out, stderr=subprocess.DEVNULL)
            if r.returncode != 0:
                raise RuntimeError(f"{' '.join(argv)} exited {r.returncode}")
            j = json.load(open(out_path))
            got[kind].append(j["load_ms"])
            if kind == "measuring":
                init.append(candidates_init_ms(j))
            if kind == "cached" and any(
                    (d.get("selection") or {}).get("mode") == "measure"
                    and not d["selection"].get("cached") for d in j.get("delegates", [])):
                measured_again += 1
            time.sleep(pause)
        shutil.rmtree(cache, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in got.items()}
    med["candidates_init"] = statistics.median(init)
    bound = 3 * med["fixed"] + med["candidates_init"]
    paired = {
        "measuring_over_bound": statistics.median(
            m / (3 * f + i) for m, f, i in zip(got["measuring"], got["fixed"], init)),
        "cached_over_fixed": statistics.median(
            c / f for c, f in zip(got["cached"], got["fixed"])),
        "cached_over_chosen_fixed": statistics.median(
            c / f for c, f in zip(got["cached"], got["chosen_fixed"]))}
    return {"reps": reps, "pinned_engine": pinned.name,
            "load_ms": got, "candidates_init_ms": init, "cached_measured_again": measured_again,
            "median_ms": med,
            "measuring_bound_ms": bound,
            "measuring_over_bound": med["measuring"] / bound,
            "cached_over_fixed": med["cached"] / med["fixed"],
            "cached_over_chosen_fixed": med["cached"] / med["chosen_fixed"],
            "paired": paired}


# ---------------------------------------------------------------------------------------------


def bench_model(model, args, fixtures_dir, work_dir, compile_exe, run_exe, backends, schemas):
    fx = os.path.join(fixtures_dir, model)
    onnx_path = os.path.join(fx, "model.onnx")
    input_npy = os.path.join(fx, "input.npy")
    x = np.load(input_npy).astype(np.float32)
    mdir = os.path.join(work_dir, model)
    os.makedirs(mdir, exist_ok=True)
    input_bin = os.path.join(mdir, "input.bin")
    x.tofile(input_bin)
    dims = "x".join(str(d) for d in x.shape)
    flops = count_flops(onnx_path)
    log(f"{model}: {flops['macs'] / 1e6:.1f} M MACs ({flops['flops'] / 1e9:.3f} GFLOPs)")

    engines = []
    compiled = {}
    compiled_default = None
    for be in backends + (["portable"] if args.portable else []):
        prog = os.path.join(mdir, f"{model}.{be}.tsr")
        cmd = [compile_exe, onnx_path, "-o", prog, "--backends", be, "--dim", "batch=1:1",
               "--json", "-q"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            log(f"{model}: tessera-compile --backends {be} failed: {r.stderr.strip()[-500:]}")
            continue
        summary = json.loads(r.stdout)
        compiled[be] = {"command": " ".join(os.path.relpath(c, ROOT) if os.path.isabs(c) else c
                                            for c in cmd),
                        "ops_by_backend": summary.get("ops_by_backend"),
                        "delegates": len(summary.get("delegates", []))}
    if args.default_engine:
        # Default settings everywhere: compiled without --backends (selectable), run without
        # backend or selection flags (selection=auto), its selection cache empty before the
        # first (untimed) pass, which measures and remembers; the timed rounds read the cache.
        prog = os.path.join(mdir, f"{model}.default.tsr")
        cmd = [compile_exe, onnx_path, "-o", prog, "--dim", "batch=1:1", "--json", "-q"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            log(f"{model}: tessera-compile (default backends) failed: {r.stderr.strip()[-500:]}")
        else:
            summary = json.loads(r.stdout)
            compiled_default = {"command": " ".join(os.path.relpath(c, ROOT) if os.path.isabs(c)
                                                    else c for c in cmd),
                                "ops_by_backend": summary.get("ops_by_backend"),
                                "delegates": len(summary.get("delegates", []))}
    for threads in args.threads:
        if args.default_engine and compiled_default is not None:
            cache = os.path.join(mdir, f"selection-cache.t{threads}")
            shutil.rmtree(cache, ignore_errors=True)
            out_dir = os.path.join(mdir, f"out.tessera-default.t{threads}")
            os.makedirs(out_dir, exist_ok=True)
            # 1 thread: each thread-pool backend pinned to one (as the other engines); 2 or
            # more: the policy's count, which the selection may lower per delegate.
            opts = ([f"{b}.num_threads=1" for b in backends if "num_threads" in schemas.get(b, [])]
                    if threads == 1 else [])
            engines.append(TesseraEngine("tessera-default", "default", threads, run_exe,
                                         os.path.join(mdir, f"{model}.default.tsr"), input_npy,
                                         out_dir, opts, ["--select-cache", cache]))
        for be in compiled:
            if be == "portable":
                if threads != 1:
                    continue
                opts = []
            else:
                opts = [f"{be}.num_threads={threads}"] if "num_threads" in schemas.get(be, []) else []
            out_dir = os.path.join(mdir, f"out.tessera-{be}.t{threads}")
            os.makedirs(out_dir, exist_ok=True)
            engines.append(TesseraEngine(f"tessera-{be}", be, threads, run_exe,
                                         os.path.join(mdir, f"{model}.{be}.tsr"), input_npy,
                                         out_dir, opts))
        for spec in args.variant:
            # NAME:BACKEND:KEY=VALUE[,KEY=VALUE...]: the BACKEND program with extra load options.
            vname, be, kv = spec.split(":", 2)
            if be not in compiled:
                log(f"{model}: variant {vname}: backend {be} not compiled, skipped")
                continue
            opts = [f"{be}.num_threads={threads}"] if "num_threads" in schemas.get(be, []) else []
            opts += [f"{be}.{o}" for o in kv.split(",") if o]
            out_dir = os.path.join(mdir, f"out.tessera-{vname}.t{threads}")
            os.makedirs(out_dir, exist_ok=True)
            e = TesseraEngine(f"tessera-{vname}", be, threads, run_exe,
                              os.path.join(mdir, f"{model}.{be}.tsr"), input_npy, out_dir, opts)
            e.tolerance = args.variant_rel_tolerance
            engines.append(e)
        for spec in args.retarget:
            # FROM=TO: the FROM program, its delegates run on TO (chosen at load time).
            src, dst = spec.split("=", 1)
            if src not in compiled:
                log(f"{model}: retarget {spec}: backend {src} not compiled, skipped")
                continue
            opts = [f"{dst}.num_threads={threads}"] if "num_threads" in schemas.get(dst, []) else []
            vname = f"{src}-retargeted-{dst}"
            out_dir = os.path.join(mdir, f"out.tessera-{vname}.t{threads}")
            os.makedirs(out_dir, exist_ok=True)
            engines.append(TesseraEngine(f"tessera-{vname}", dst, threads, run_exe,
                                         os.path.join(mdir, f"{model}.{src}.tsr"), input_npy,
                                         out_dir, opts, ["--retarget", spec]))
        engines.append(Worker("onnxruntime", "cpu", threads,
                              ["node", os.path.join(HERE, "ort_worker.js"), onnx_path, input_bin,
                               dims, str(threads), os.path.join(mdir, f"out.ort.t{threads}.bin")],
                              os.path.join(mdir, f"out.ort.t{threads}.bin"),
                              fresh=args.fresh_ort))
        engines.append(Worker("pytorch", "eager", threads,
                              [PY, os.path.join(HERE, "torch_worker.py"), model, input_npy,
                               str(threads), os.path.join(mdir, f"out.torch.t{threads}.bin")],
                              os.path.join(mdir, f"out.torch.t{threads}.bin")))

    # First pass: outputs (tessera writes its output; the workers did on start) and a one-run
    # latency estimate, from which slow engines get fewer runs per round (--engine-budget).
    # For tessera-default this is the load that measures the candidates, once: it gets the same
    # pause before it as every engine in the rounds.
    estimate = {}
    usable = sorted(os.sched_getaffinity(0))

    def cpus_for(e, rnd):
        """--pin auto: an engine at 1 thread on the round's CPU (round -1: the first pass)."""
        if args.pin == "off" or e.threads != 1 or len(usable) < 2:
            return None
        return {usable[max(rnd, 0) % len(usable)]}

    for e in engines:
        time.sleep(args.pause)
        cpus = cpus_for(e, -1)
        r = (e.run(0, 1, write_output=True, cpus=cpus) if isinstance(e, TesseraEngine)
             else e.run(0, 1, cpus=cpus))
        estimate[id(e)] = r["median"]

    def plan(e):
        if e.backend == "portable":
            return 1, args.portable_iterations
        fit = int(args.engine_budget * 1e3 / max(estimate[id(e)], 1e-3))
        iters = min(args.iterations, max(args.min_iterations, fit))
        warm = args.warmup if iters == args.iterations else max(1, args.warmup * iters // args.iterations)
        return warm, iters

    def interleaved(e):
        """--interleave: Tessera's engines and ORT, when their plan is the full count (PyTorch,
        the portable kernels and engines slowed by --engine-budget run on their own)."""
        return ((e.name.startswith("tessera") and e.backend != "portable") or
                e.name == "onnxruntime") and plan(e)[1] == args.iterations

    def run_interleaved(together, rnd):
        """One round of `together` in bursts of --interleave timed runs, the engines taking
        turns (order rotated each burst), each burst after a --burst-pause and its untimed runs
        (--burst-warmup, --burst-warmup-ms). Returns each engine's round result."""
        for e in together:
            time.sleep(args.pause)
            e.start(cpus_for(e, rnd))
        times = {id(e): [] for e in together}
        # Each burst's median, by turn: the engines' bursts of one turn are a few seconds apart
        # at most, so report.burst_paired_ratio can pair them (None: no burst in that turn).
        bursts = {id(e): [] for e in together}
        warm = {id(e): plan(e)[0] for e in together}
        # Untimed runs before each burst: at least --burst-warmup, and enough to fill
        # --burst-warmup-ms at the engine's running median.
        again = {id(e): max(args.burst_warmup,
                            math.ceil(args.burst_warmup_ms / max(estimate[id(e)], 1e-3)))
                 for e in together}
        left = {id(e): plan(e)[1] for e in together}
        b = 0
        while any(left.values()):
            turn = together[b % len(together):] + together[:b % len(together)]
            for e in turn:
                n = min(args.interleave, left[id(e)])
                if n == 0:
                    bursts[id(e)].append(None)
                    continue
                time.sleep(args.burst_pause)
                burst = e.burst(warm[id(e)] + again[id(e)], n)
                times[id(e)] += burst
                bursts[id(e)].append(statistics.median(burst))
                warm[id(e)] = 0
                left[id(e)] -= n
            b += 1
        for e in together:
            e.stop()
        return {e: {"median": statistics.median(times[id(e)]), "min": min(times[id(e)]),
                    "max": max(times[id(e)]), "iterations": len(times[id(e)]),
                    "warmup": plan(e)[0], "bursts": b, "burst_medians": bursts[id(e)]}
                for e in together}

    results = {id(e): [] for e in engines}
    pinned_cpu = {id(e): [] for e in engines}  # per round: the CPU, or None

    def keep(e, r, cpus):
        pinned_cpu[id(e)].append(None if cpus is None else min(cpus))
        results[id(e)].append(r)
        # The running median of this engine refines the plan of later rounds.
        estimate[id(e)] = statistics.median(x["median"] for x in results[id(e)])

    loadavg = []
    for rnd in range(args.rounds):
        loadavg.append(os.getloadavg()[0])
        t_round = time.time()
        shift = rnd % len(engines)
        order = engines[shift:] + engines[:shift]
        together = [e for e in order if interleaved(e)] if args.interleave > 0 else []
        if together:
            for e, r in run_interleaved(together, rnd).items():
                keep(e, r, cpus_for(e, rnd))
        for e in order:
            if e in together:
                continue
            warm, iters = plan(e)
            cpus = cpus_for(e, rnd)
            r = e.run(warm, iters, cpus=cpus)
            r["iterations"], r["warmup"] = iters, warm
            keep(e, r, cpus)
            time.sleep(args.pause)  # lets spinning worker threads of the last engine go idle
        log(f"{model}: round {rnd + 1}/{args.rounds} in {time.time() - t_round:.1f}s: " +
            ", ".join(f"{e.name}/{e.threads}t {results[id(e)][-1]['median']:.2f}"
                      for e in engines))
    for e in engines:
        e.close()

    # The loads of tessera-default against fixed ones, alternately (--load-reps).
    load_timing = {}
    if args.load_reps > 0:
        for e in engines:
            if e.name != "tessera-default" or e.delegates is None:
                continue
            chosen = [d["backend"] for d in e.delegates]
            main = max(set(chosen), key=chosen.count)  # the backend most delegates run on
            pinned = next((p for p in engines if p.name == f"tessera-{main}" and
                           p.threads == e.threads), None)
            if pinned is None:
                continue
            load_timing[e.threads] = time_loads(e, pinned, args.load_reps, args.pause,
                                                os.path.join(mdir, f"loads.t{e.threads}"))
            lt = load_timing[e.threads]
            log(f"{model}/{e.threads}t loads (median of {args.load_reps}): measuring "
                f"{lt['median_ms']['measuring']:.0f}, cached {lt['median_ms']['cached']:.0f}, "
                f"fixed {lt['median_ms']['fixed']:.0f}, {pinned.name} "
                f"{lt['median_ms']['chosen_fixed']:.0f} ms; measuring / bound "
                f"{lt['measuring_over_bound']:.2f} (paired "
                f"{lt['paired']['measuring_over_bound']:.2f}), cached / fixed "
                f"{lt['cached_over_fixed']:.2f} (paired {lt['paired']['cached_over_fixed']:.2f})")

    ref = np.fromfile(os.path.join(mdir, "out.torch.t1.bin"), dtype=np.float32)
    fixture_ref = np.load(os.path.join(fx, "output.npy")).astype(np.float32).ravel()
    rows = []
    for e in engines:
        rs = results[id(e)]
        out = e.output()
        diff = float(np.max(np.abs(out - ref))) if out.shape == ref.shape else float("inf")
        row = {
            "engine": e.name, "backend": e.backend, "threads": e.threads,
            "median_ms": statistics.median(r["median"] for r in rs),
            "min_ms": min(r["min"] for r in rs), "max_ms": max(r["max"] for r in rs),
            "round_medians_ms": [r["median"] for r in rs],
            "round_cpus": pinned_cpu[id(e)],  # the CPU each round was pinned to (None: not)
            # --interleave: per round, each turn's burst median (None: none in that turn);
            # None for a round the engine ran on its own.
            "burst_medians_ms": [r.get("burst_medians") for r in rs],
            "iterations_per_round": [r["iterations"] for r in rs],
            "timed_runs": sum(r["iterations"] for r in rs),
            "rounds": len(rs),
            "peak_rss_mib": e.peak_rss_kb / 1024.0,
            "max_abs_diff_vs_pytorch": diff,
            "tolerance": (e.tolerance * float(np.max(np.abs(ref)))
                          if getattr(e, "tolerance", None) else TOLERANCE),
            "max_rel_diff_vs_pytorch": diff / float(np.max(np.abs(ref))),
        }
        row["output_ok"] = diff <= row["tolerance"]
        if isinstance(e, TesseraEngine):
            row["options"] = e.options
        if isinstance(e, Worker):
            row["baseline_rss_mib"] = e.ready["baseline_rss_kb"] / 1024.0
            row["load_ms"] = e.ready["load_ms"]
            row["version"] = e.ready.get("version")
        else:
            # Load time and peak RSS of the timed rounds; the first run (the output pass, which
            # for tessera-default is the load that measured) is reported on its own, for every
            # engine alike: its file reads are cold and, measuring, it holds candidates.
            def timed(per_run):  # the timed rounds' values (all when there was only one run)
                return per_run[1:] or per_run
            row["load_ms"] = statistics.median(timed(e.load_ms))
            row["peak_rss_mib"] = max(timed(e.rss_kb)) / 1024.0
            row["first_load_ms"] = e.load_ms[0]  # tessera-default: the load that measured
            row["first_load_peak_rss_mib"] = e.rss_kb[0] / 1024.0
            row["first_load_candidates_init_ms"] = e.init_ms[0]
            row["delegates"] = e.delegates
            # The timed rounds' derived thread counts (the first run is the output pass): a
            # load that saw other processes busy derives fewer threads, and its round is slower.
            row["policy_threads_per_round"] = timed(e.policy_threads)
            row["delegate_threads_per_round"] = timed(e.delegate_threads)
            row["policy_threads_reasons"] = sorted(set(x for x in timed(e.policy_reasons) if x))
            if e.name == "tessera-default" and e.threads in load_timing:
                row["load_timing"] = load_timing[e.threads]
        rows.append(row)
    # Issue 13's bound on the first, measuring load of tessera-default: 3 x a fixed load (the
    # fastest of the pinned-backend engines' median loads at the same thread count) plus the
    # candidates' own inits (every candidate and option variant of every delegate, and the
    # whole-method check's re-inits).
    for row in rows:
        if row["engine"] != "tessera-default":
            continue
        fixed = [p["load_ms"] for p in rows
                 if p["threads"] == row["threads"] and report.is_single_backend(p)]
        if fixed:
            row["fixed_load_ms"] = min(fixed)
            row["first_load_bound_ms"] = 3 * min(fixed) + row["first_load_candidates_init_ms"]
            row["first_load_within_bound"] = row["first_load_ms"] <= row["first_load_bound_ms"]
            log(f"{model}/{row['threads']}t: first (measuring) load {row['first_load_ms']:.0f} ms, "
                f"bound 3 x fixed {row['fixed_load_ms']:.0f} + candidates' init "
                f"{row['first_load_candidates_init_ms']:.0f} = {row['first_load_bound_ms']:.0f} ms"
                f" ({row['first_load_ms'] / row['first_load_bound_ms']:.2f}x)")
    # Ratios and roofline figures.
    for row in rows:
        peers = {p["engine"]: p for p in rows if p["threads"] == row["threads"]}
        if row["engine"].startswith("tessera"):
            for peer in ("onnxruntime", "pytorch"):
                if peer in peers:
                    row[f"ratio_vs_{peer}"] = row["median_ms"] / peers[peer]["median_ms"]
                    paired = report.paired_ratio(row, peers[peer])
                    if paired is not None:
                        row[f"ratio_vs_{peer}_paired"] = paired
                    bursts = report.burst_paired_ratio(row, peers[peer])
                    if bursts is not None:
                        row[f"ratio_vs_{peer}_burst_paired"] = bursts
        row["gflops_per_s"] = flops["flops"] / (row["median_ms"] * 1e-3) / 1e9
    if compiled_default is not None:
        compiled["default"] = compiled_default
    return {"model": model, "flops": flops, "compiled": compiled, "rows": rows,
            "loadavg_1min_per_round": loadavg,
            "pytorch_vs_fixture_max_abs_diff": float(np.max(np.abs(ref - fixture_ref)))}


def machine_info():
    info = {"platform": platform.platform(), "cpu_count": os.cpu_count()}
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in lscpu.splitlines():
            k, _, v = line.partition(":")
            k, v = k.strip(), v.strip()
            if k in ("Model name", "CPU(s)", "Thread(s) per core", "Core(s) per socket",
                     "L1d cache", "L2 cache", "L3 cache", "Hypervisor vendor", "CPU max MHz"):
                info[k] = v
            if k == "Flags":
                flags = v.split()
                info["simd_flags"] = [f for f in flags if f.startswith(("avx", "fma", "amx", "sse4"))]
    except OSError:
        pass
    info["loadavg_start"] = os.getloadavg()
    return info


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--models", default="mobilenet_v2,resnet18")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--iterations", type=int, default=30, help="timed runs per engine per round")
    p.add_argument("--warmup", type=int, default=5, help="untimed runs per engine per round")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--engine-budget", type=float, default=4.0,
                   help="seconds per engine per round: an engine slower than "
                        "budget/iterations gets fewer timed runs (at least --min-iterations)")
    p.add_argument("--min-iterations", type=int, default=5)
    p.add_argument("--pause", type=float, default=0.2, help="seconds between engines")
    p.add_argument("--fresh-ort", type=int, default=1,
                   help="1 (default): a new ORT worker process for every round, as every Tessera "
                        "round is a process of its own (its load timed), so that what one "
                        "process's placement costs or gains is spread over the rounds on both "
                        "sides; 0: one ORT worker per thread count for the whole run")
    p.add_argument("--interleave", type=int, default=5,
                   help="timed runs per burst: in each round Tessera's engines and ORT take turns "
                        "in bursts of this many runs, so a slow stretch of the host reaches all "
                        "of them (see Design); 0: each engine's runs of a round in one go")
    p.add_argument("--burst-warmup", type=int, default=1,
                   help="untimed runs before each burst, at least (the other engines' bursts "
                        "evicted the caches, and the CPU idled through the pause)")
    p.add_argument("--burst-warmup-ms", type=float, default=10.0,
                   help="and at least this many milliseconds of them, at the engine's running "
                        "median (MnasNet at 1 thread: one untimed 2 ms run left the first two "
                        "timed runs of a burst 5-10 %% slower, five did not)")
    p.add_argument("--burst-pause", type=float, default=0.1,
                   help="seconds before each burst (the last engine's spinning threads go idle)")
    p.add_argument("--pin", choices=("auto", "off"), default="auto",
                   help="auto: in each round, every engine at 1 thread pinned to the same CPU, "
                        "the CPU rotating from round to round (see Design); off: none pinned")
    p.add_argument("--backends", default="xnnpack,onednn",
                   help="Tessera delegate backends to time, those of them that are built "
                        "('all': every one, e.g. opencl on PoCL's CPU device)")
    p.add_argument("--variant", action="append", default=[],
                   help="NAME:BACKEND:KEY=VALUE[,...]: also time BACKEND's program with these "
                        "load options as engine tessera-NAME, e.g. onednn-bf16:onednn:precision=bf16 "
                        "(checked against PyTorch with --variant-rel-tolerance)")
    p.add_argument("--retarget", action="append", default=[],
                   help="FROM=TO: also time the program compiled for FROM with its delegates "
                        "retargeted to TO at load time (engine tessera-FROM-retargeted-TO), e.g. "
                        "xnnpack=onednn: one program file, the CPU backend chosen at run time")
    p.add_argument("--variant-rel-tolerance", type=float, default=2e-2,
                   help="max abs diff / max |reference| allowed for --variant engines")
    p.add_argument("--load-reps", type=int, default=5,
                   help="with --default-engine: rounds of alternating measuring, cached and "
                        "fixed loads timed on their own (0: none)")
    p.add_argument("--default-engine", action="store_true",
                   help="also time the program compiled without --backends, run with default "
                        "settings (selection=auto, a fresh selection cache filled by the first "
                        "untimed pass) as engine tessera-default")
    p.add_argument("--portable", action="store_true",
                   help="also time Tessera's portable kernels alone (slow; 1 thread)")
    p.add_argument("--portable-iterations", type=int, default=3)
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    p.add_argument("--work-dir", default=os.path.join(ROOT, "build-bench", "harness"))
    p.add_argument("--roofline-seconds", type=float, default=1.0)
    p.add_argument("--json-out", default=None, help="default: WORK_DIR/results.json")
    p.add_argument("--markdown", default=None, help="also write the tables here")
    p.add_argument("--plot", default=None, help="also write a PNG plot here")
    args = p.parse_args()
    args.threads = [int(t) for t in args.threads.split(",")]
    models = args.models.split(",")
    work_dir = os.path.abspath(args.work_dir)
    os.makedirs(work_dir, exist_ok=True)
    build_dir = os.path.abspath(args.build_dir)
    compile_exe = os.path.join(build_dir, "tools", "tessera-compile", "tessera-compile")
    run_exe = os.path.join(build_dir, "tools", "tessera-run", "tessera-run")
    for exe in (compile_exe, run_exe):
        if not os.path.exists(exe):
            sys.exit(f"missing {exe}: build the project first (scripts/setup)")
    # Snapshot the tools and the libraries: a rebuild of the build tree during the run (a shared
    # machine) must not swap the binaries under the benchmark. The tools need libtessera by its
    # soname (libtessera.so.MAJOR.MINOR), found through their RUNPATH, which LD_LIBRARY_PATH
    # overrides; libtessera loads the backend libraries (libtessera_NAME.so) beside itself. So
    # each library is copied under every name the build tree gives it. (Until the fifteenth
    # session only "libtessera.so" was copied, under which nothing looks it up: the tools ran the
    # build tree's library and backends.)
    bin_dir = os.path.join(work_dir, "bin")
    os.makedirs(bin_dir, exist_ok=True)
    for old in os.listdir(bin_dir):
        if old.startswith("libtessera"):
            os.remove(os.path.join(bin_dir, old))
    libraries = sorted(f for f in os.listdir(build_dir)
                       if f.startswith("libtessera") and ".so" in f)
    snap = {}
    for src in [compile_exe, run_exe] + [os.path.join(build_dir, f) for f in libraries]:
        if os.path.exists(src):
            dst = os.path.join(bin_dir, os.path.basename(src))
            shutil.copy2(src, dst + ".tmp")  # follows symbolic links: each name gets the file
            os.replace(dst + ".tmp", dst)
            snap[os.path.basename(src)] = time.strftime(
                "%Y-%m-%dT%H:%M:%S", time.localtime(os.path.getmtime(src)))
    compile_exe = os.path.join(bin_dir, "tessera-compile")
    run_exe = os.path.join(bin_dir, "tessera-run")
    os.environ["LD_LIBRARY_PATH"] = bin_dir + (
        ":" + os.environ["LD_LIBRARY_PATH"] if os.environ.get("LD_LIBRARY_PATH") else "")
    try:
        git_rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                                 capture_output=True, text=True).stdout.strip()
    except OSError:
        git_rev = ""
    if not os.path.exists(os.path.join(HERE, "node_modules", "onnxruntime-node")):
        sys.exit("onnxruntime-node missing: (cd bench/harness && npm install --ignore-scripts)")

    info = machine_info()
    started = datetime.datetime.now().astimezone()
    fixtures_dir = os.path.join(work_dir, "fixtures")
    export_fixtures(models, fixtures_dir)
    built, schemas = tessera_backends(compile_exe, run_exe)
    wanted = built if args.backends == "all" else args.backends.split(",")
    backends = [b for b in built if b in wanted]
    log(f"tessera backends built: {', '.join(built)}; benchmarked: {', '.join(backends)}")
    roof = roofline(work_dir, build_dir, args.roofline_seconds)
    log(f"roofline: {roof['peak_gflops']:.1f} GFLOP/s per core ({roof['peak_bits']}-bit FMA)")

    out = {"date": started.isoformat(timespec="seconds"), "machine": info,
           "command": "bench/harness/run.sh " + " ".join(sys.argv[1:]),
           "settings": {"iterations": args.iterations, "warmup": args.warmup,
                        "rounds": args.rounds, "threads": args.threads,
                        "engine_budget_s": args.engine_budget,
                        "min_iterations": args.min_iterations, "pin": args.pin,
                        "interleave": args.interleave, "fresh_ort": bool(args.fresh_ort),
                        "burst_warmup": args.burst_warmup,
                        "burst_warmup_ms": args.burst_warmup_ms,
                        "burst_pause_s": args.burst_pause},
           "tessera_backends": backends, "tessera_backends_built": built, "roofline": roof, "models": [],
           "tessera_build": {"dir": build_dir, "git_head": git_rev, "binary_mtimes": snap}}
    json_out = args.json_out or os.path.join(work_dir, "results.json")
    for model in models:
        out["models"].append(bench_model(model, args, fixtures_dir, work_dir, compile_exe,
                                         run_exe, backends, schemas))
        with open(json_out + ".partial", "w") as f:  # survives a failure in a later model
            json.dump(out, f, indent=1)
        for m in out["models"]:
            peak = roof["peak_gflops"] * 1e9
            m["roofline"] = {
                f"{t}t_best_ms": m["flops"]["flops"] / (peak * t) * 1e3 for t in args.threads}
            for row in m["rows"]:
                row["fraction_of_peak"] = row["gflops_per_s"] * 1e9 / (peak * row["threads"])
    roofline_rerun = roofline(work_dir, build_dir, args.roofline_seconds)
    out["roofline_after"] = roofline_rerun
    info["loadavg_end"] = os.getloadavg()
    with open(json_out, "w") as f:
        json.dump(out, f, indent=1)
    if os.path.exists(json_out + ".partial"):  # the complete file replaces it
        os.remove(json_out + ".partial")
    log(f"wrote {json_out}")
    md = report.markdown(out)
    print(md)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(md)
    if args.plot:
        report.plot(out, args.plot)
    bad = [(m["model"], r["engine"], r["threads"]) for m in out["models"] for r in m["rows"]
           if not r["output_ok"]]
    if bad:
        log(f"OUTPUT MISMATCH (max abs diff over the tolerance vs PyTorch): {bad}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
