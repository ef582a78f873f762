#!/bin/bash
# Fixed against measured selection (tessera-run --select measure) on programs compiled without
# --backends (bench/policy/policy_bench.py compiles them into build/bench-policy): load time,
# median latency and the backends that ran. Run from the repository root after policy_bench.py.
R=build/tools/tessera-run/tessera-run
for m in resnet18 mobilenet_v2 shufflenet_v2_x0_5 transformer googlenet; do
  P=build/bench-policy/$m.tsr
  for r in 1 2; do
  for v in "fixed:--select fixed" "measure:--select measure --select-candidates xnnpack,onednn,portable"; do
    name=${v%%:*}; args=${v#*:}
    out=$($R $P --dim batch=1 --iterations 40 --warmup 5 --json $args 2>/dev/null)
    echo "$m $name $(echo "$out" | /usr/bin/python3 -c 'import json,sys,collections; d=json.load(sys.stdin); print("load %.1f ms median %.3f ms backends %s" % (d["load_ms"], d["latency_ms"]["median"], dict(collections.Counter(x["backend"] for x in d["delegates"]))))')"
  done; done
done
