#!/bin/sh
# Whether the default engine (the program compiled without --backends, loaded from a warm
# selection cache) runs as fast as the same program compiled for oneDNN and loaded with
# `--select fixed`, measured paired: one process of each, alternately, PAIRS times; prints both
# medians and the median of the per-pair ratios default / oneDNN, with the backends the default
# loads ran. Reads the harness's programs and inputs (bench/harness/run.sh --default-engine must
# have run for MODEL first).
# Usage: bench/harness/default_vs_fixed.sh MODEL THREADS PAIRS
set -eu
[ $# -eq 3 ] || { sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
M=$1; T=$2; N=$3
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
R=$ROOT/build/tools/tessera-run/tessera-run
H=$ROOT/build-bench/harness/$M
SC=$(mktemp -d)
trap 'rm -rf "$SC"' EXIT
I="--input 0=$ROOT/build-bench/harness/fixtures/$M/input.npy --dim batch=1 --warmup 10 --iterations 100 --json"
# The harness's options: at 1 thread both backends are told so; at 2 the default engine derives it.
if [ "$T" = 1 ]; then DO="--option onednn.num_threads=1 --option xnnpack.num_threads=1"; else DO=""; fi
# shellcheck disable=SC2086
"$R" "$H/$M.default.tsr" --select-cache "$SC" $DO $I >/dev/null 2>&1  # measures, fills the cache
i=0
while [ $i -lt "$N" ]; do
  # shellcheck disable=SC2086
  "$R" "$H/$M.default.tsr" --select-cache "$SC" $DO $I 2>/dev/null | /usr/bin/python3 -c \
    "import json,sys;r=json.load(sys.stdin);print('default',r['latency_ms']['median'],'+'.join(d['backend'] for d in r['delegates']))"
  # shellcheck disable=SC2086
  "$R" "$H/$M.onednn.tsr" --select fixed --option onednn.num_threads="$T" $I 2>/dev/null | /usr/bin/python3 -c \
    "import json,sys;r=json.load(sys.stdin);print('onednn',r['latency_ms']['median'],'onednn')"
  i=$((i + 1))
done | /usr/bin/python3 -c "
import sys, statistics as st
ms, chosen = {}, set()
for line in sys.stdin:
    engine, x, backends = line.split()
    ms.setdefault(engine, []).append(float(x))
    if engine == 'default':
        chosen.add(backends)
d, o = ms['default'], ms['onednn']
print('$M, $T thread(s): oneDNN fixed %.3f ms, default %.3f ms (medians); default / oneDNN paired %.3f '
      '(%d pairs); the default loads ran %s' % (st.median(o), st.median(d),
      st.median([b / a for a, b in zip(o, d)]), len(o), ', '.join(sorted(chosen))))
"
