#!/usr/bin/python3
"""Per-operator profile of one model: Tessera (each backend's execute-scope profiling, through
`tessera-run --profile`) next to ONNX Runtime's own profiler (enableProfiling), same thread count.

Where does the time go, and which operators make the difference? For every convolution and
matrix product, in graph order, the two engines' times side by side, grouped by kind (first
convolution, 1x1, depthwise, other kxk, Gemm/MatMul) and the layers with the largest gap.

Caveats printed with the table: ONNX Runtime's profiler adds its own overhead (its profiled
total is compared with an unprofiled run), and its fused nodes (Conv+Clip, NCHWc reorders) are
named after their outputs; the two lists are matched by order and checked by weight shape.

Usage: bench/harness/op_profile.py [--models mobilenet_v2] [--threads 1,2] [--backends onednn]
       [--iterations 30] [--work-dir build-bench/harness] [--build-dir build] [--markdown FILE]
Needs the harness's exported fixtures (bench/harness/run.sh once) or exports them itself.
"""

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import harness  # noqa: E402  (export_fixtures, log)

ORT_PROFILE_JS = r"""
const ort = require(process.argv[2]);
(async () => {
  const [model, threads, iters, prefix, dimsText] = process.argv.slice(3);
  const dims = dimsText.split('x').map((d) => parseInt(d, 10));
  const s = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'], intraOpNumThreads: +threads, interOpNumThreads: 1,
    executionMode: 'sequential', graphOptimizationLevel: 'all',
    enableProfiling: true, profileFilePrefix: prefix});
  const meta = s.inputNames[0];
  const feeds = {};
  const count = dims.reduce((a, b) => a * b, 1);
  feeds[meta] = new ort.Tensor('float32', new Float32Array(count).fill(0.5), dims);
  for (let i = 0; i < 5 + +iters; ++i) await s.run(feeds);
  s.endProfiling();
  process.exit(0);
})();
"""


def onnx_layers(onnx_path):
    """Conv/Gemm/MatMul nodes in graph order: name, kind, weight shape."""
    m = onnx.load(onnx_path)
    shapes = {i.name: list(i.dims) for i in m.graph.initializer}
    layers = []
    for n in m.graph.node:
        if n.op_type not in ("Conv", "Gemm", "MatMul"):
            continue
        w = shapes.get(n.input[1]) if len(n.input) > 1 else None
        group = next((a.i for a in n.attribute if a.name == "group"), 1)
        layers.append({"name": n.name, "op": n.op_type, "w": w, "group": group})
    return layers


def kind_of(op, w, group, first):
    if op != "Conv":
        return "gemm/matmul"
    if first:
        return "first conv"
    if w is None:
        return "conv (other)"
    if group > 1 and w[1] == 1:
        return "depthwise"
    if w[2] == 1 and w[3] == 1:
        return "1x1"
    return f"{w[2]}x{w[3]}"


def tessera_profile(run_exe, program, threads, backend, iterations):
    cmd = [run_exe, program, "--profile", "--json", "--warmup", "5", "--iterations", str(iterations),
           "--global-option", f"{backend}.num_threads={threads}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()}")
    out = json.loads(r.stdout)
    return out["latency_ms"]["median"], out.get("profile", [])


def ort_profile(onnx_path, input_shape, threads, iterations):
    module = os.path.join(HERE, "node_modules", "onnxruntime-node")
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "p.js")
        with open(script, "w") as f:
            f.write(ORT_PROFILE_JS)
        prefix = os.path.join(tmp, "ort")
        subprocess.run(["node", script, module, onnx_path, str(threads), str(iterations), prefix,
                        "x".join(str(d) for d in input_shape)], check=True, capture_output=True)
        path = glob.glob(prefix + "*.json")[0]
        events = json.load(open(path))
    runs = [e["dur"] / 1000 for e in events if e.get("cat") == "Session" and e["name"] == "model_run"]
    runs = runs[-iterations:]
    per = {}
    order = []
    for e in events:
        if e.get("cat") != "Node" or not e["name"].endswith("_kernel_time"):
            continue
        key = e["name"]
        if key not in per:
            per[key] = {"ms": [], "op": e["args"].get("op_name"), "inputs": e["args"].get("input_type_shape")}
            order.append(key)
        per[key]["ms"].append(e["dur"] / 1000)
    nodes = []
    for key in order:
        p = per[key]
        ms = p["ms"][-iterations:]
        w = None
        if p["inputs"] and len(p["inputs"]) > 1:
            w = list(p["inputs"][1].values())[0]
        nodes.append({"name": key[:-len("_kernel_time")], "op": p["op"], "ms": sum(ms) / len(ms), "w": w})
    return statistics.median(runs), nodes


def match(layers, tess_events, ort_nodes):
    """Pairs every ONNX Conv/Gemm/MatMul with its Tessera event (name prefix) and ORT node (order)."""
    # Event names are cut at 47 characters, so one block's events can share a name: keep only
    # those of layers (a oneDNN SiLU, pool or binary step named like its block's Convs would
    # otherwise be taken for the next of them).
    not_layers = {"silu", "pool", "binary", "reorder", "eltwise", "activation", "shuffle",
                  "softmax", "concat"}
    tess = {}
    for e in tess_events:
        kind, _, rest = e["name"].partition(":")
        if rest and kind in not_layers:
            continue
        name = rest if rest else e["name"]
        tess.setdefault(name, []).append(e["mean_ms"])
    ort = [n for n in ort_nodes if n["op"] in ("Conv", "FusedConv", "Gemm", "MatMul", "FusedGemm")]
    def same_weights(o, l):
        return (o["w"] is None or l["w"] is None or
                (o["w"][2:] == l["w"][2:] and o["w"][0] >= l["w"][0] and len(o["w"]) == len(l["w"])))

    rows = []
    used = [False] * len(ort)
    for i, l in enumerate(layers):
        t = None
        for name, ms in tess.items():
            if ms and l["name"].startswith(name):
                t = ms.pop(0)
                break
        # ORT may run a layer a little earlier or later (a residual branch's 1x1 first): the
        # first unused node within a few places whose weights have this layer's shape, else the
        # first unused one.
        free = [k for k in range(len(ort)) if not used[k]]
        pick = next((k for k in free[:4] if same_weights(ort[k], l)), free[0] if free else None)
        o = None
        if pick is not None:
            o = ort[pick]
            used[pick] = True
        ok = o is not None and same_weights(o, l)
        rows.append({"layer": l["name"], "kind": kind_of(l["op"], l["w"], l["group"], i == 0),
                     "w": l["w"], "tessera_ms": t, "ort_ms": o["ms"] if o else None, "matched": ok})
    return rows


def report(model, threads, backend, t_latency, t_events, o_latency, o_nodes, rows):
    lines = [f"### {model}, {threads} thread(s): tessera-{backend} against ONNX Runtime", ""]
    t_sum = sum(e["mean_ms"] for e in t_events)
    o_sum = sum(n["ms"] for n in o_nodes)
    lines.append(f"Tessera: median latency {t_latency:.3f} ms with profiling on, events sum to "
                 f"{t_sum:.3f} ms. ONNX Runtime: median {o_latency:.3f} ms with its profiler on "
                 f"(which adds overhead), nodes sum to {o_sum:.3f} ms.")
    lines.append("")
    kinds = {}
    for r in rows:
        k = kinds.setdefault(r["kind"], [0, 0.0, 0.0])
        k[0] += 1
        k[1] += r["tessera_ms"] or 0
        k[2] += r["ort_ms"] or 0
    t_other = t_sum - sum(k[1] for k in kinds.values())
    o_other = o_sum - sum(k[2] for k in kinds.values())
    lines.append("| kind | layers | tessera ms | ORT ms | tessera / ORT |")
    lines.append("|---|---:|---:|---:|---:|")
    for name, (n, t, o) in sorted(kinds.items(), key=lambda kv: -kv[1][2]):
        lines.append(f"| {name} | {n} | {t:.3f} | {o:.3f} | {t / o:.2f} |" if o else
                     f"| {name} | {n} | {t:.3f} | {o:.3f} | — |")
    lines.append(f"| everything else (reorders, pooling, adds, ...) | | {t_other:.3f} | {o_other:.3f} | "
                 f"{(t_other / o_other) if o_other > 0 else float('nan'):.2f} |")
    lines.append("")
    mism = sum(1 for r in rows if not r["matched"])
    if mism:
        lines.append(f"({mism} layer(s) could not be matched by weight shape; their ORT times may "
                     f"belong to a neighbour.)")
        lines.append("")
    gaps = [r for r in rows if r["tessera_ms"] is not None and r["ort_ms"] is not None]
    gaps.sort(key=lambda r: r["ort_ms"] - r["tessera_ms"])
    lines.append("Layers where Tessera loses most (positive: Tessera slower):")
    lines.append("")
    lines.append("| layer | kind | weights | tessera ms | ORT ms | difference ms |")
    lines.append("|---|---|---|---:|---:|---:|")
    for r in sorted(gaps, key=lambda r: r["ort_ms"] - r["tessera_ms"])[:8]:
        d = r["tessera_ms"] - r["ort_ms"]
        if d <= 0:
            break
        lines.append(f"| {r['layer']} | {r['kind']} | {'x'.join(map(str, r['w'] or []))} | "
                     f"{r['tessera_ms']:.3f} | {r['ort_ms']:.3f} | {d:+.3f} |")
    lines.append("")
    return lines


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="mobilenet_v2")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--backends", default="onednn")
    p.add_argument("--iterations", type=int, default=30)
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    p.add_argument("--work-dir", default=os.path.join(ROOT, "build-bench", "harness"))
    p.add_argument("--markdown", default=None)
    args = p.parse_args()
    compile_exe = os.path.join(args.build_dir, "tools", "tessera-compile", "tessera-compile")
    run_exe = os.path.join(args.build_dir, "tools", "tessera-run", "tessera-run")
    fixtures_dir = os.path.join(args.work_dir, "fixtures")
    models = args.models.split(",")
    harness.export_fixtures(models, fixtures_dir)
    lines = []
    for model in models:
        onnx_path = os.path.join(fixtures_dir, model, "model.onnx")
        layers = onnx_layers(onnx_path)
        input_shape = np.load(os.path.join(fixtures_dir, model, "input.npy"), mmap_mode="r").shape
        for be in args.backends.split(","):
            prog = os.path.join(args.work_dir, model, f"{model}.{be}.tsr")
            os.makedirs(os.path.dirname(prog), exist_ok=True)
            subprocess.run([compile_exe, onnx_path, "-o", prog, "--backends", be, "--dim", "batch=1:1",
                            "-q"], check=True)
            for t in (int(x) for x in args.threads.split(",")):
                harness.log(f"{model}: tessera-{be} and onnxruntime, {t} thread(s)")
                t_lat, t_events = tessera_profile(run_exe, prog, t, be, args.iterations)
                o_lat, o_nodes = ort_profile(onnx_path, input_shape, t, args.iterations)
                rows = match(layers, t_events, o_nodes)
                lines += report(model, t, be, t_lat, t_events, o_lat, o_nodes, rows)
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
