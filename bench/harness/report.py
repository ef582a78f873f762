"""Tables (markdown) and the plot (PNG, python3-matplotlib) of a harness results.json.

Usage: /usr/bin/python3 bench/harness/report.py RESULTS.json [--markdown FILE] [--plot FILE]
"""

import argparse
import json
import math
import statistics
import sys


def _f(v, digits=2):
    return "—" if v is None else f"{v:.{digits}f}"


def paired_ratio(row, peer):
    """Median over the rounds of row's round median / peer's round median in the same round, or
    None without a round median each for every round. Within a round the engines run one after
    the other, so a slow stretch of the host (tens of seconds on the AMD guest) reaches both
    sides of most pairs; a ratio of the overall medians mixes stretches when one engine's
    rounds fell in more slow ones than the other's."""
    a, b = row.get("round_medians_ms") or [], peer.get("round_medians_ms") or []
    if not a or len(a) != len(b) or any(x is None or y is None or y <= 0 for x, y in zip(a, b)):
        return None
    return statistics.median(x / y for x, y in zip(a, b))


def burst_paired_ratio(row, peer):
    """Median over every turn of every round in which both engines ran a burst (--interleave) of
    row's burst median / peer's, or None without such turns. The bursts of one turn are a few
    hundred ms apart for the small models and a few seconds at most for the large ones, where a
    round's are up to a minute: the host's slow stretches, which last seconds to tens of seconds
    on the AMD guest, reach both sides of most pairs."""
    a, b = row.get("burst_medians_ms") or [], peer.get("burst_medians_ms") or []
    ratios = [x / y for ra, rb in zip(a, b) if ra and rb
              for x, y in zip(ra, rb) if x is not None and y is not None and y > 0]
    return statistics.median(ratios) if ratios else None


def is_single_backend(row):
    """Whether a row is one backend's own program (tessera-BACKEND), the portable kernels aside:
    the rows the best single backend is chosen from."""
    return (row["engine"] == f"tessera-{row['backend']}" and
            row["backend"] not in ("default", "portable"))


def configuration(row):
    """What a row's program ran, from its delegates: [(backend, nodes, chosen options)], or None
    when the results do not say."""
    delegates = row.get("delegates")
    if not delegates:
        return None
    out = []
    for d in delegates:
        chosen = (d.get("selection") or {}).get("chosen_options") or [{}]
        out.append((d.get("backend"), d.get("nodes"),
                    tuple(sorted((k, str(v)) for c in chosen for k, v in (c or {}).items()))))
    return out


def runs_best_configuration(default, best):
    """Whether the default engine ran the best single backend's own configuration: the same
    backend for every delegate, as many delegates of as many nodes, and no option the selection
    chose over the load's, and the same thread count for its delegates in every round
    (delegate_threads_per_round, where both rows have it: the default engine's policy may give a
    small model fewer threads than the harness sets for the backend's row). Then a gap between
    the two rows is the host's, not the selection's. None when the results do not say."""
    a, b = configuration(default), configuration(best)
    if a is None or b is None:
        return None
    ta, tb = default.get("delegate_threads_per_round"), best.get("delegate_threads_per_round")
    if ta and tb and set(ta) != set(tb):
        return False
    return len(a) == len(b) and all(
        x[0] == best["backend"] and x[0] == y[0] and x[1] == y[1] and not x[2]
        for x, y in zip(a, b))


def describe_configuration(row):
    """A row's configuration in a few words: "onednn (2 threads)", "onednn
    [conv_algorithm=winograd] (1 thread)", or each distinct one of its delegates', comma-separated,
    then the threads its delegates had; "?" when the results do not say."""
    c = configuration(row)
    if c is None:
        return "?"
    seen = []
    for backend, _, options in c:
        text = backend + (f" [{', '.join(f'{k}={v}' for k, v in options)}]" if options else "")
        if text not in seen:
            seen.append(text)
    threads = sorted(set(row.get("delegate_threads_per_round") or []))
    return ", ".join(seen) + (f" ({'/'.join(map(str, threads))} thread"
                              f"{'' if threads == [1] else 's'})" if threads else "")


def three_ratios(a, b):
    """a over b: the ratio of the medians, round-paired and burst-paired (None where unknown)."""
    return a["median_ms"] / b["median_ms"], paired_ratio(a, b), burst_paired_ratio(a, b)


def geomean(xs):
    xs = [x for x in xs if x is not None]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def summary(res):
    """Per model and thread count: the best single backend (the fastest tessera-BACKEND row by
    median), the default engine over it, each against ONNX Runtime, as ratios of the medians,
    paired by round and paired by burst; then the geometric means over the models."""
    lines = ["### Summary: the default engine, the best single backend, ONNX Runtime", "",
             "| model | threads | best single backend | best / ORT (round-paired, burst-paired) | "
             "default / ORT (round-paired, burst-paired) | default / best (round-paired, "
             "burst-paired) | the default engine ran |", "|---|---:|---|---|---|---|---|"]
    means, above = {}, []  # above: (model and threads, default / best's three ratios)
    for m in res["models"]:
        for t in sorted({r["threads"] for r in m["rows"]}):
            rows = {r["engine"]: r for r in m["rows"] if r["threads"] == t}
            singles = [r for r in rows.values() if is_single_backend(r)]
            ort, default = rows.get("onnxruntime"), rows.get("tessera-default")
            if not singles or ort is None:
                continue
            best = min(singles, key=lambda r: r["median_ms"])
            cells = [three_ratios(best, ort)]
            cells += ([three_ratios(default, ort), three_ratios(default, best)] if default
                      else [None, None])
            for name, c in zip(("best", "default", "default_best"), cells):
                if c:
                    means.setdefault((name, t), []).append(c)
            ran = "—"
            if default:
                same = runs_best_configuration(default, best)
                above.append((f"{m['model']} {t}t" + (" (the best's own configuration)"
                                                       if same else ""), cells[2]))
                ran = "the best's own configuration" if same else describe_configuration(default)
            lines.append(f"| {m['model']} | {t} | {best['backend']} | " + " | ".join(
                "—" if c is None else f"{_f(c[0], 3)} ({_f(c[1], 3)}, {_f(c[2], 3)})"
                for c in cells) + f" | {ran} |")
    lines.append("")
    for t in sorted({k[1] for k in means}):
        parts = []
        for name, label in (("best", "best / ORT"), ("default", "default / ORT")):
            c = means.get((name, t))
            if c:
                parts.append(f"{label} {_f(geomean([x[0] for x in c]), 3)} (round-paired "
                             f"{_f(geomean([x[1] for x in c]), 3)}, burst-paired "
                             f"{_f(geomean([x[2] for x in c]), 3)})")
        lines.append(f"Geometric means at {t} thread(s), {len(means.get(('best', t), []))} "
                     f"models: " + "; ".join(parts) + ".")
    for i, label in enumerate(("medians", "round-paired", "burst-paired")):
        over = [f"{name} {_f(c[i], 3)}" for name, c in above if c[i] is not None and c[i] > 1.03]
        if any(c[i] is not None for _, c in above):
            lines.append(f"Default over the best single backend by more than 3 %, by {label}: "
                         f"{', '.join(over) if over else 'none'}.")
    lines.append("")
    return lines


def paired_vs_ort(model, row):
    """paired_ratio against ORT at the row's thread count, for results written before the
    harness stored it."""
    ort = [p for p in model["rows"] if p["engine"] == "onnxruntime" and p["threads"] == row["threads"]]
    if not row["engine"].startswith("tessera") or not ort:
        return None
    return paired_ratio(row, ort[0])


def markdown(res):
    s = res["settings"]
    roof = res["roofline"]
    lines = []
    lines.append(f"Run {res['date']}: {s['rounds']} rounds x {s['iterations']} timed runs "
                 f"(after {s['warmup']} warm-up runs) per engine per round (an engine slower "
                 f"than {s.get('engine_budget_s', 0):g} s per round gets fewer, at least "
                 f"{s.get('min_iterations', 0)}: see 'timed runs'), threads "
                 f"{', '.join(map(str, s['threads']))}; load average "
                 f"{' / '.join(f'{x:.1f}' for x in res['machine']['loadavg_start'])} at start, "
                 f"{' / '.join(f'{x:.1f}' for x in res['machine'].get('loadavg_end', []))} at end.")
    if s.get("interleave"):
        lines.append(f"Within each round Tessera's engines and ONNX Runtime took turns in bursts "
                     f"of {s['interleave']} timed runs, each after a {s['burst_pause_s']:g} s "
                     f"pause and at least {s['burst_warmup']} untimed run(s) lasting "
                     f"{s['burst_warmup_ms']:g} ms or more; PyTorch ran on its own.")
    if s.get("fresh_ort"):
        lines.append("ONNX Runtime's worker was a new process every round, as Tessera's are.")
    lines.append("")
    lines.append(f"Roofline: peak {roof['peak_gflops']:.1f} GFLOP/s on one core "
                 f"({roof['peak_bits']}-bit FMA, {roof['accumulators']} accumulators; by thread CPU "
                 f"time {roof['peak_cpu_time_gflops']:.1f}); re-measured after the run: "
                 f"{res['roofline_after']['peak_gflops']:.1f}.")
    if roof.get("bf16_dot_gflops"):
        lines.append(f"bf16 dot products (AVX512_BF16 vdpbf16ps, the ceiling of precision=bf16 "
                     f"without AMX): {roof['bf16_dot_gflops']:.1f} GFLOP/s on one core, "
                     f"{roof['bf16_dot_gflops'] / roof['peak_gflops']:.2f}x the float32 peak.")
    lines.append("")
    for m in res["models"]:
        fl = m["flops"]
        lines.append(f"### {m['model']} (1x3x224x224 float32): {fl['macs'] / 1e6:.0f} M MACs, "
                     f"{fl['flops'] / 1e9:.3f} GFLOPs")
        lines.append("")
        best = ", ".join(f"{k.split('t_')[0]} thread(s) {v:.2f} ms"
                         for k, v in m["roofline"].items())
        lines.append(f"Roofline (FLOPs / (peak x threads)): {best}.")
        if m.get("loadavg_1min_per_round"):
            la = m["loadavg_1min_per_round"]
            lines.append(f"1-minute load average at the start of each round: "
                         f"{', '.join(f'{x:.1f}' for x in la)} (the machine has "
                         f"{res['machine'].get('cpu_count')} CPUs).")
        lines.append("")
        lines.append("| engine | threads | median ms | min ms | max ms | vs ORT | vs ORT (min) | "
                     "vs ORT (paired) | vs ORT (burst-paired) | vs PyTorch | % of peak | peak RSS MiB | "
                     "load ms | timed runs | max abs diff |")
        lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        ort_min = {r["threads"]: r["min_ms"] for r in m["rows"] if r["engine"] == "onnxruntime"}
        for r in sorted(m["rows"], key=lambda r: (r["threads"], r["engine"])):
            name = r["engine"]
            ok = "" if r["output_ok"] else " **MISMATCH**"
            lines.append(
                f"| {name} | {r['threads']} | {_f(r['median_ms'])} | {_f(r['min_ms'])} | "
                f"{_f(r['max_ms'])} | {_f(r.get('ratio_vs_onnxruntime'))} | "
                f"{_f(r['min_ms'] / ort_min[r['threads']] if name.startswith('tessera') and r['threads'] in ort_min else None)} | "
                f"{_f(r.get('ratio_vs_onnxruntime_paired', paired_vs_ort(m, r)))} | "
                f"{_f(r.get('ratio_vs_onnxruntime_burst_paired'))} | "
                f"{_f(r.get('ratio_vs_pytorch'))} | {100 * r['fraction_of_peak']:.0f}% | "
                f"{r['peak_rss_mib']:.0f} | {_f(r.get('load_ms'), 0)} | {r.get('timed_runs', '')} | "
                f"{r['max_abs_diff_vs_pytorch']:.1e}"
                f"{' (rel %.1e)' % r['max_rel_diff_vs_pytorch'] if r.get('options') and len(r['options']) > 1 else ''}"
                f"{ok} |")
        lines.append("")
        lines.append("load ms: Tessera's Program::load + load_method (delegate init, weight "
                     "packing; median over the rounds), ONNX Runtime's InferenceSession.create, "
                     "PyTorch's model construction and first call (once per worker). Tessera's "
                     "load ms and peak RSS are those of the timed rounds; the first run of each "
                     "engine is not among them (for tessera-default it is the measuring load, "
                     "given below).")
        lines.append("")
        bounds = [r for r in sorted(m["rows"], key=lambda r: r["threads"])
                  if r.get("first_load_bound_ms")]
        for r in bounds:
            lines.append(
                f"tessera-default {r['threads']} thread(s): first (measuring) load "
                f"{r['first_load_ms']:.0f} ms; bound 3 x fixed load {r['fixed_load_ms']:.0f} ms + "
                f"candidates' init {r['first_load_candidates_init_ms']:.0f} ms = "
                f"{r['first_load_bound_ms']:.0f} ms: "
                f"{'within' if r['first_load_within_bound'] else 'over'} "
                f"({r['first_load_ms'] / r['first_load_bound_ms']:.2f}x the bound); its peak "
                f"RSS {r.get('first_load_peak_rss_mib', 0):.0f} MiB.")
        if bounds:
            lines.append("")
        for r in sorted(m["rows"], key=lambda r: r["threads"]):
            lt = r.get("load_timing")
            if not lt:
                continue
            md = lt["median_ms"]
            lines.append(
                f"tessera-default {r['threads']} thread(s), loads timed on their own (medians of "
                f"{lt['reps']}, alternating): measuring {md['measuring']:.0f} ms against the bound "
                f"3 x fixed {md['fixed']:.0f} + candidates' init {md['candidates_init']:.0f} = "
                f"{lt['measuring_bound_ms']:.0f} ms ({lt['measuring_over_bound']:.2f}x); from the "
                f"cache {md['cached']:.0f} ms, {lt['cached_over_fixed']:.2f}x the fixed load and "
                f"{lt['cached_over_chosen_fixed']:.2f}x {lt['pinned_engine']}'s "
                f"({md['chosen_fixed']:.0f} ms)"
                + (f"; {lt['cached_measured_again']} of the {lt['reps']} loads from the cache "
                   "measured again instead" if lt.get("cached_measured_again") else "")
                + "."
                + (f" Paired (the median over rounds of each round's own ratio): measuring / "
                   f"bound {lt['paired']['measuring_over_bound']:.2f}x, cached / fixed "
                   f"{lt['paired']['cached_over_fixed']:.2f}x, cached / "
                   f"{lt['pinned_engine']} {lt['paired']['cached_over_chosen_fixed']:.2f}x."
                   if lt.get("paired") else ""))
            lines.append("")
        # Rounds of tessera-default whose load derived fewer threads than the row's count.
        for r in sorted(m["rows"], key=lambda r: r["threads"]):
            per_round = r.get("delegate_threads_per_round") or []
            if r["engine"] != "tessera-default" or not per_round:
                continue
            if any(t is not None and t < r["threads"] for t in per_round):
                lines.append(
                    f"tessera-default {r['threads']} thread(s): the rounds' loads derived "
                    f"{', '.join('?' if t is None else str(t) for t in per_round)} thread(s) "
                    f"(round medians {', '.join(_f(x) for x in r['round_medians_ms'])} ms); "
                    f"the policy's reasons: {'; '.join(r.get('policy_threads_reasons', []))}.")
                lines.append("")
        # Thread scaling.
        by = {}
        for r in m["rows"]:
            by.setdefault(r["engine"], {})[r["threads"]] = r["median_ms"]
        sc = [f"{e} {v[1] / v[2]:.2f}x" for e, v in by.items() if 1 in v and 2 in v]
        if sc:
            lines.append("Speed-up of 2 threads over 1 (median / median): " + ", ".join(sc) + ".")
            lines.append("")
    lines += summary(res)
    return "\n".join(lines) + "\n"


def plot(res, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = res["models"]
    fig, axes = plt.subplots(1, len(models), figsize=(6.5 * len(models), 4.6), squeeze=False)
    colors = {"onnxruntime": "#4c72b0", "pytorch": "#dd8452"}
    palette = ["#55a868", "#8172b3", "#c44e52", "#937860"]
    for ax, m in zip(axes[0], models):
        engines = []
        for r in m["rows"]:
            if r["engine"] not in engines:
                engines.append(r["engine"])
        threads = sorted({r["threads"] for r in m["rows"]})
        width = 0.8 / len(engines)
        k = 0
        for i, e in enumerate(engines):
            c = colors.get(e)
            if c is None:
                c = palette[k % len(palette)]
                k += 1
            xs, med, lo, hi = [], [], [], []
            for j, t in enumerate(threads):
                r = next((r for r in m["rows"] if r["engine"] == e and r["threads"] == t), None)
                if r is None:
                    continue
                xs.append(j + (i - (len(engines) - 1) / 2) * width)
                med.append(r["median_ms"])
                lo.append(r["median_ms"] - r["min_ms"])
                hi.append(r["max_ms"] - r["median_ms"])
            ax.bar(xs, med, width, label=e, color=c, yerr=[lo, hi], capsize=3,
                   error_kw={"elinewidth": 0.8})
            for x, v in zip(xs, med):
                ax.text(x, v, f"{v:.1f}", ha="center", va="bottom", fontsize=7,
                        bbox=dict(facecolor="white", edgecolor="none", pad=0.5, alpha=0.7))
        for j, t in enumerate(threads):
            best = m["roofline"].get(f"{t}t_best_ms")
            if best:
                ax.hlines(best, j - 0.45, j + 0.45, colors="black", linestyles="dashed",
                          linewidth=1, label="roofline (FLOPs / peak)" if j == 0 else None)
        ax.set_xticks(range(len(threads)))
        ax.set_xticklabels([f"{t} thread{'s' if t > 1 else ''}" for t in threads])
        ax.set_yscale("log")  # PyTorch eager is an order of magnitude slower than the others
        ax.set_ylabel("latency, ms, log scale (median; whiskers: min..max)")
        ax.set_title(f"{m['model']} ({m['flops']['flops'] / 1e9:.2f} GFLOPs)")
        ax.legend(fontsize=8)
    fig.suptitle(f"Tessera vs ONNX Runtime vs PyTorch, batch 1, {res['date'][:10]} "
                 f"({res['machine'].get('Model name', '')})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("results")
    p.add_argument("--markdown")
    p.add_argument("--plot")
    args = p.parse_args()
    with open(args.results) as f:
        res = json.load(f)
    md = markdown(res)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(md)
    else:
        print(md)
    if args.plot:
        plot(res, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
