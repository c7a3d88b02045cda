#!/usr/bin/env python3
"""The logits of a ringtrain checkpoint (cifar stem) for the consumer's image, in float64 numpy
from the checkpoint's tensors and attributes read with h5py, compared with the consumer's output.

    reference_logits.py CHECKPOINT CONSUMER_OUTPUT

Exits 0 when every logit matches within 1e-5 x (1 + the largest |logit|) and the class line
names the reference's class, 1 when not.
"""
import sys

import h5py
import numpy as np


def conv(x, w, stride):
    """x [C,H,W], w [O,C,k,k], padding k // 2."""
    k = w.shape[2]
    xp = np.pad(x, ((0, 0), (k // 2, k // 2), (k // 2, k // 2)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(1, 2))
    return np.einsum("chwij,ocij->ohw", win[:, ::stride, ::stride], w)


def conv_bn(f, name, x, stride, relu):
    p, b = f["params"], f["buffers"]
    y = conv(x, p[name + ".conv.weight"][...].astype(np.float64), stride)
    mean, var = b[name + ".bn.running_mean"][...], b[name + ".bn.running_var"][...]
    scale = p[name + ".bn.weight"][...] / np.sqrt(var.astype(np.float64) + 1e-5)
    y = (y - mean[:, None, None]) * scale[:, None, None] + p[name + ".bn.bias"][...][:, None, None]
    return np.maximum(y, 0) if relu else y


def forward(f, x):
    assert f["params"]["stem.conv.weight"].shape[2] == 3, "cifar stem only"
    x = conv_bn(f, "stem", x, 1, True)
    stage = 1
    while f"layer{stage}.0.1.conv.weight" in f["params"]:
        b = 0
        while f"layer{stage}.{b}.1.conv.weight" in f["params"]:
            name, stride = f"layer{stage}.{b}", 2 if stage > 1 and b == 0 else 1
            units = 3 if name + ".3.conv.weight" in f["params"] else 2
            y = x
            for u in range(1, units + 1):
                y = conv_bn(f, f"{name}.{u}", y, stride if u == units - 1 else 1, u < units)
            short = x
            if name + ".shortcut.conv.weight" in f["params"]:
                short = conv_bn(f, name + ".shortcut", x, stride, False)
            x = np.maximum(y + short, 0)
            b += 1
        stage += 1
    features = x.mean(axis=(1, 2))
    return f["params"]["fc.weight"][...] @ features + f["params"]["fc.bias"][...]


def main():
    path, output = sys.argv[1], sys.argv[2]
    with h5py.File(path, "r") as f:
        a = f.attrs
        c, h, w = int(a["model_in_channels"]), int(a["image_height"]), int(a["image_width"])
        pixels = 0.5 + 0.5 * np.sin(0.1 * np.arange(c * h * w)).reshape(c, h, w)
        # The consumer normalises with the meta's float32 mean and std.
        mean = a["norm_mean"].astype(np.float32).astype(np.float64)[:, None, None]
        std = a["norm_std"].astype(np.float32).astype(np.float64)[:, None, None]
        image = ((pixels - mean) / std).astype(np.float32)
        ref = forward(f, image.astype(np.float64))
        names = [n.decode() if isinstance(n, bytes) else str(n) for n in a["class_names"]]
    lines = open(output).read().split("\n")
    got = np.array([float(v) for v in lines[0].split()])
    if got.shape != ref.shape:
        print(f"reference_logits: {got.size} logits, the reference has {ref.size}")
        return 1
    diff = np.abs(got - ref).max()
    tol = 1e-5 * (1 + np.abs(ref).max())
    print(f"reference_logits: max |consumer - reference| = {diff:.3g} (tolerance {tol:.3g})")
    best = int(np.argmax(ref))
    if lines[1] != f"class {best} {names[best]}":
        print(f"reference_logits: the consumer says '{lines[1]}', the reference class {best} {names[best]}")
        return 1
    return 0 if diff <= tol else 1


if __name__ == "__main__":
    sys.exit(main())
