#!/usr/bin/python3
"""PyTorch (eager, torch.inference_mode) worker of the peer benchmark.

Builds the fixture model in eager mode with the same factory and seeds as
tests/models/make_fixtures.py (so its weights are those of the exported ONNX file), then answers
commands on stdin, one JSON object a line, like ort_worker.js:
  {"cmd": "run", "warmup": W, "iterations": N}  ->  {"times_ms": [...]}
  {"cmd": "quit"}                               ->  exits
On start it runs the input once, writes the output as raw float32 to OUTPUT_BIN and prints
{"ready": true, ...}. Process start-up and model construction are never inside a timed run.

Usage: /usr/bin/python3 torch_worker.py MODEL_NAME INPUT.npy THREADS OUTPUT.bin
"""

import json
import os
import resource
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "models"))


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main():
    name, input_npy, threads, output_bin = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    import numpy as np
    import torch
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    import make_fixtures  # noqa: E402  (the fixtures' model factories)
    all_fixtures = {**make_fixtures.FIXTURES, **make_fixtures.EXTRA}
    t0 = time.perf_counter()
    model = all_fixtures[name][0]()
    model.eval()
    x = torch.from_numpy(np.load(input_npy))
    with torch.inference_mode():
        y = model(x)
    load_ms = (time.perf_counter() - t0) * 1e3
    y.numpy().astype(np.float32).tofile(output_bin)
    send({"ready": True, "engine": "pytorch", "version": torch.__version__, "load_ms": load_ms,
          "baseline_rss_kb": baseline, "output_shape": list(y.shape),
          "threads": torch.get_num_threads()})
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["cmd"] == "quit":
            break
        if cmd["cmd"] != "run":
            send({"error": f"unknown command {cmd['cmd']}"})
            continue
        times = []
        with torch.inference_mode():
            for _ in range(cmd["warmup"]):
                model(x)
            for _ in range(cmd["iterations"]):
                s = time.perf_counter_ns()
                model(x)
                times.append((time.perf_counter_ns() - s) / 1e6)
        send({"times_ms": times})
    return 0


if __name__ == "__main__":
    sys.exit(main())
