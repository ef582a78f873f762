#!/usr/bin/python3
"""Exports the reference models of the end-to-end tests as ONNX, with PyTorch's outputs.

Usage: /usr/bin/python3 make_fixtures.py OUT_DIR [--extra] [--only NAME[,NAME...]]

For each fixture OUT_DIR/<name>/ holds model.onnx, input.npy and output.npy (PyTorch's output
for that input), input_b4.npy / output_b4.npy for models with a dynamic batch axis, and
meta.json (input/output names, symbolic dims, opset). Weights are random with fixed seeds;
BatchNorm running statistics are calibrated on random batches so that outputs are not near
zero (every reference must have max |ref| > 0.05). A fixture whose stamp matches this script
and the torch version is kept as is.

--extra exports the additional torchvision classifiers (slower) instead, for the optional
model tests.
"""

import argparse
import hashlib
import json
import os
import sys
import time

import numpy as np
import torch
import torchvision

MIN_REF = 0.05


def script_hash():
    with open(os.path.abspath(__file__), "rb") as f:
        data = f.read()
    data += torch.__version__.encode() + torchvision.__version__.encode()
    return hashlib.sha256(data).hexdigest()[:16]


def calibrate_batchnorm(model, input_shape, batches=3, seed=1):
    """Sets BatchNorm running statistics to the cumulative statistics of random batches."""
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None  # cumulative moving average
    gen = torch.Generator().manual_seed(seed)
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(torch.randn(*input_shape, generator=gen))
    model.eval()


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(32, 64)
        self.fc2 = torch.nn.Linear(64, 64)
        self.fc3 = torch.nn.Linear(64, 10)

    def forward(self, x):
        x = torch.relu(self.fc1(x))
        x = torch.nn.functional.gelu(self.fc2(x))
        return torch.softmax(self.fc3(x), dim=-1) * 4.0 + self.fc3(x)


class OpsMix(torch.nn.Module):
    """A small network touching the ops the classifiers do not: ConvTranspose, Resize (nearest and
    bilinear), reflect Pad, ceil-mode pooling, Split, strided Slice, PRelu, LeakyRelu, LayerNorm,
    ReduceMax/Sum/Mean, Where, Clip and a few unary functions."""

    def __init__(self):
        super().__init__()
        F = torch.nn
        self.conv1 = F.Conv2d(3, 8, 3, padding=1)
        self.bn1 = F.BatchNorm2d(8)
        self.prelu = F.PReLU(8)
        self.down = F.Conv2d(8, 16, 3, stride=2, padding=1)
        self.up = F.ConvTranspose2d(16, 8, 4, stride=2, padding=1)
        self.up2 = F.ConvTranspose2d(16, 8, 3, stride=2, padding=1, output_padding=1)
        self.head = F.Conv2d(24, 4, 1)
        self.ln = F.LayerNorm(16)
        self.fc = F.Linear(16, 10)

    def forward(self, x):
        fn = torch.nn.functional
        a = self.prelu(self.bn1(self.conv1(x)))
        b = fn.leaky_relu(self.down(a), 0.1)
        u = self.up(b) + self.up2(b)
        n = fn.interpolate(b, scale_factor=2.0, mode="nearest")
        lin = fn.interpolate(b, size=(16, 16), mode="bilinear", align_corners=False)
        c = torch.cat([u, n[:, :8] * torch.sigmoid(lin[:, 8:]), a], 1)
        h = fn.pad(self.head(c), (1, 2, 0, 2), mode="reflect")  # 18x19: ceil mode matters
        p = fn.max_pool2d(h, 3, stride=2, ceil_mode=True)
        p2 = fn.max_pool2d(h, 2, 2, padding=1, ceil_mode=True)  # ONNX < 19 declares 11 columns
        q = fn.avg_pool2d(h, 2, stride=2, padding=1, count_include_pad=False)
        s1, s2 = torch.chunk(b, 2, dim=1)
        t = torch.tanh((s1 - s2).flatten(2).transpose(1, 2)[:, ::2, :])
        out1 = self.fc(self.ln(b.mean(dim=(2, 3))))
        out = (out1 + p.flatten(1).sum(1, keepdim=True) * 0.01 + q.mean((1, 2, 3)).unsqueeze(1)
               + p2[:, :, -1, :].sum((1, 2)).unsqueeze(1) * 0.1
               + torch.amax(t, dim=(1, 2)).unsqueeze(1))
        mask = torch.where(out1 > 0, out1, out1 * 0.5)
        return out + mask.clamp(-1, 1) + torch.sqrt(torch.abs(out1) + 1).exp().reciprocal()


def ops_mix():
    torch.manual_seed(0)
    m = OpsMix()
    calibrate_batchnorm(m, (4, 3, 16, 16))
    return m


def torchvision_classifier(name):
    def make():
        torch.manual_seed(0)
        ctor = getattr(torchvision.models, name)
        model = ctor(weights=None)
        # Some torchvision heads start at std 0.01, which makes outputs tiny: use the default
        # (fan-in scaled) initialisation for every Linear layer instead.
        for m in model.modules():
            if isinstance(m, torch.nn.Linear):
                m.reset_parameters()
        calibrate_batchnorm(model, (4, 3, 224, 224))
        model.eval()
        return model
    return make


def transformer():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128,
                                             dropout=0.0, batch_first=True)
    layer.eval()
    return layer


def mlp():
    torch.manual_seed(0)
    m = Mlp()
    m.eval()
    return m


# name: (factory, input shape of case 1, dynamic axes, opset[, input shape of case 2])
# Dynamic axes: True = a symbolic batch (dim 0, bounds 1:8); or {axis: (name, min, max)}. Case 2
# (input_b4/output_b4) runs at batch 4 unless its shape is given.
SEQ_AXES = {0: ("batch", 1, 8), 1: ("seq", 1, 32)}
FIXTURES = {
    "mlp": (mlp, (1, 32), True, 13),
    "mlp_op11": (mlp, (1, 32), True, 11),
    "mlp_op17": (mlp, (1, 32), True, 17),
    "transformer": (transformer, (1, 16, 64), True, 13),
    "transformer_op17": (transformer, (1, 16, 64), True, 17),
    "transformer_seq": (transformer, (1, 16, 64), SEQ_AXES, 13, (3, 10, 64)),
    "ops_mix": (ops_mix, (1, 3, 16, 16), True, 13),
    "ops_mix_op11": (ops_mix, (1, 3, 16, 16), True, 11),
    "mobilenet_v2": (torchvision_classifier("mobilenet_v2"), (1, 3, 224, 224), True, 13),
    "resnet18": (torchvision_classifier("resnet18"), (1, 3, 224, 224), True, 13),
}

EXTRA = {
    name: (torchvision_classifier(name), (1, 3, 224, 224), True, 13)
    for name in ["squeezenet1_1", "shufflenet_v2_x1_0", "mnasnet0_5", "efficientnet_b0",
                 "regnet_y_400mf", "mobilenet_v3_small", "googlenet", "densenet121",
                 "resnext50_32x4d"]
}


def export(name, spec, out_dir, stamp):
    factory, shape, dynamic, opset = spec[:4]
    axes = {0: ("batch", 1, 8)} if dynamic is True else (dynamic or {})
    shape2 = spec[4] if len(spec) > 4 else (4, *shape[1:])
    d = os.path.join(out_dir, name)
    stamp_path = os.path.join(d, "stamp")
    if os.path.exists(stamp_path) and open(stamp_path).read().strip() == stamp:
        return False
    os.makedirs(d, exist_ok=True)
    if os.path.exists(stamp_path):
        os.remove(stamp_path)
    model = factory()
    gen = torch.Generator().manual_seed(1234)
    x1 = torch.randn(*shape, generator=gen)
    x4 = torch.randn(*shape2, generator=gen)
    with torch.no_grad():
        y1 = model(x1)
        y4 = model(x4)
    path = os.path.join(d, "model.onnx")
    kwargs = {}
    if axes:
        names = {axis: sym for axis, (sym, _, _) in axes.items()}
        kwargs["dynamic_axes"] = {"input": names, "output": names}
    # Exporting with autograd enabled keeps TransformerEncoderLayer off its fused fast path.
    torch.onnx.export(model, (x1,), path, input_names=["input"], output_names=["output"],
                      opset_version=opset, do_constant_folding=True, **kwargs)
    np.save(os.path.join(d, "input.npy"), x1.numpy())
    np.save(os.path.join(d, "output.npy"), y1.numpy())
    refs = [y1]
    if axes:
        np.save(os.path.join(d, "input_b4.npy"), x4.numpy())
        np.save(os.path.join(d, "output_b4.npy"), y4.numpy())
        refs.append(y4)
    for r in refs:
        peak = float(r.abs().max())
        if not peak > MIN_REF:
            raise RuntimeError(f"{name}: reference output is near zero (max |ref| = {peak:g})")
    cases = [{"suffix": "", "dims": {sym: shape[a] for a, (sym, _, _) in axes.items()}}]
    if axes:
        cases.append({"suffix": "_b4", "dims": {sym: shape2[a] for a, (sym, _, _) in axes.items()}})
    meta = {"input": "input", "output": "output", "opset": opset,
            "dims": {sym: [lo, hi] for sym, lo, hi in axes.values()}, "cases": cases,
            "max_abs_ref": float(y1.abs().max())}
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    with open(stamp_path, "w") as f:
        f.write(stamp + "\n")
    return True


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out_dir")
    p.add_argument("--extra", action="store_true", help="export the additional torchvision models")
    p.add_argument("--only", default="", help="comma-separated fixture names")
    args = p.parse_args()
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    fixtures = dict(EXTRA if args.extra else FIXTURES)
    if args.only:
        wanted = args.only.split(",")
        unknown = [w for w in wanted if w not in FIXTURES and w not in EXTRA]
        if unknown:
            raise SystemExit(f"unknown fixture(s): {', '.join(unknown)}")
        all_fixtures = {**FIXTURES, **EXTRA}
        fixtures = {w: all_fixtures[w] for w in wanted}
    os.makedirs(args.out_dir, exist_ok=True)
    stamp = script_hash()
    failed = []
    for name, spec in fixtures.items():
        t0 = time.time()
        try:
            made = export(name, spec, args.out_dir, stamp)
        except Exception as e:  # report every failing fixture, not only the first
            print(f"fixture {name}: FAILED: {e}", file=sys.stderr, flush=True)
            failed.append(name)
            continue
        if made:
            print(f"fixture {name}: exported in {time.time() - t0:.1f}s", flush=True)
    if failed:
        print(f"make_fixtures: {len(failed)} fixture(s) failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
