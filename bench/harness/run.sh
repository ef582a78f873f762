#!/bin/sh
# Peer benchmark: Tessera (each CPU backend) vs ONNX Runtime (CPU provider) vs PyTorch.
# Usage: bench/harness/run.sh [--models mobilenet_v2,resnet18] [--threads 1,2] [--iterations N]
#        [--rounds R] [--warmup W] [--build-dir DIR] [--markdown FILE] [--plot FILE] ...
# See harness.py for the design. Needs: the project built (build/), nodejs + npm, and
# `npm install --ignore-scripts` run once in bench/harness; Debian's python3-torch,
# python3-torchvision, python3-onnx, python3-matplotlib (for --plot).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -d "$here/node_modules/onnxruntime-node" ]; then
  (cd "$here" && npm install --ignore-scripts --no-audit --no-fund >&2)
fi
exec /usr/bin/python3 "$here/harness.py" "$@"
