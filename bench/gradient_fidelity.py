#!/usr/bin/env python3
"""How close ringtrain's f32 gradients are to exact ones, against PyTorch's f32 on the same
weights and images: one batch of real images through the same ResNet, per initialisation seed.

For each seed, build/bench/gradient_fidelity writes ringtrain's f32 and f64 parameter gradients
(the CPU backend, from the same f32 weights); this script loads those weights into the ResNet
of bench/pytorch_train_cpu.py, computes PyTorch's gradients in f64 and in f32, and prints, with
PyTorch's f64 as the exact value: the relative L2 error over all parameters, the worst tensor's
relative L2 error and the worst tensor's largest difference over its largest value, for
ringtrain f32 and PyTorch f32. ringtrain's f64 against PyTorch's f64 comes first, as a check of
the reference itself; last, how many ReLU outputs PyTorch's f32 forward puts on the other side of
zero from its f64 forward (each moves the gradients below it by a discrete amount).

    /usr/bin/python3 bench/gradient_fidelity.py --images-dir cifar10-jpeg/train --seeds 1,2,3

--images-dir is a folder of class folders (as `ringtrain data import-images` reads); the batch
takes the first images of each class in name order, normalised with CIFAR-10's mean and std.
Needs a release build in build/ and Debian's python3-torch and python3-pil.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from pytorch_train_cpu import Block, resnet  # noqa: E402

MEAN, STD = np.array([0.4914, 0.4822, 0.4465]), np.array([0.2470, 0.2435, 0.2616])


def real_batch(folder, batch):
    if not os.path.isdir(folder):
        sys.exit(f"gradient_fidelity: --images-dir {folder} is not a folder of class folders")
    classes = sorted(c for c in os.listdir(folder) if os.path.isdir(os.path.join(folder, c)))
    files = [sorted(os.listdir(os.path.join(folder, c))) for c in classes]
    if not classes or min(len(f) for f in files) < -(-batch // len(classes)):
        sys.exit(f"gradient_fidelity: {folder} needs {batch} images spread over its class folders")
    images, labels = [], []
    for i in range(batch):
        c = i % len(classes)
        name = files[c][i // len(classes)]
        rgb = np.asarray(Image.open(os.path.join(folder, classes[c], name)).convert("RGB"))
        images.append(((rgb / 255.0 - MEAN) / STD).transpose(2, 0, 1))
        labels.append(c)
    return np.array(images, np.float32), np.array(labels, np.int32)


def torch_gradients(a, params, images, labels, dtype):
    model = resnet(a.depth, a.width).to(dtype)
    at = 0
    for p in model.parameters():
        p.data.copy_(torch.from_numpy(params[at:at + p.numel()].reshape(p.shape)).to(dtype))
        at += p.numel()
    if at != params.size:
        sys.exit(f"gradient_fidelity: ringtrain wrote {params.size} parameters, PyTorch's model "
                 f"has {at}")
    signs = []  # which outputs of every ReLU are positive
    for m in model.modules():
        if isinstance(m, (nn.ReLU, Block)):  # a Block ends in its ReLU
            m.register_forward_hook(lambda m, i, out: signs.append((out > 0).numpy().copy()))
    loss = torch.nn.functional.cross_entropy(model(torch.from_numpy(images).to(dtype)),
                                             torch.from_numpy(labels).long())
    loss.backward()
    return [p.grad.double().numpy().ravel() for p in model.parameters()], signs


def errors(got, want):
    """Whole relative L2; worst tensor's relative L2; worst tensor's max|diff| / max|want|."""
    flat_got, flat_want = np.concatenate(got), np.concatenate(want)
    whole = np.linalg.norm(flat_got - flat_want) / np.linalg.norm(flat_want)
    rel = [np.linalg.norm(g - w) / np.linalg.norm(w) for g, w in zip(got, want)]
    peak = [np.abs(g - w).max() / np.abs(w).max() for g, w in zip(got, want)]
    return whole, rel, peak


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--images-dir", required=True)
    p.add_argument("--seeds", default="1,2,3,4,5")
    p.add_argument("--depth", type=int, default=50)
    p.add_argument("--width", type=float, default=0.25)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    images, labels = real_batch(a.images_dir, a.batch_size)
    print("seed | ringtrain f64 vs PyTorch f64 | whole rel. L2: ringtrain f32, PyTorch f32 | "
          "worst tensor rel. L2: ringtrain, PyTorch | worst tensor max error: ringtrain, PyTorch | "
          "tensors where ringtrain's rel. L2 is larger | ReLU outputs PyTorch's f32 and f64 put on "
          "opposite sides of zero")
    with tempfile.TemporaryDirectory(prefix="gradient_fidelity_") as work:
        images.tofile(os.path.join(work, "images.f32"))
        labels.tofile(os.path.join(work, "labels.i32"))
        for seed in a.seeds.split(","):
            print(seed_row(a, seed, work, images, labels), flush=True)


def ringtrain_gradients(a, seed, work):
    """Runs build/bench/gradient_fidelity for one seed; (names, f32 params, f32 and f64
    gradients as flat arrays)."""
    cmd = [os.path.join(ROOT, "build", "bench", "gradient_fidelity"), "--depth", str(a.depth),
           "--width", str(a.width), "--batch-size", str(a.batch_size), "--seed", seed,
           "--threads", str(a.threads), "--images", os.path.join(work, "images.f32"),
           "--labels", os.path.join(work, "labels.i32"), "--out", work]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"gradient_fidelity: {' '.join(cmd)} failed:\n{done.stderr}")
    with open(os.path.join(work, "names.txt")) as f:
        names = f.read().split()
    def read(name, dtype):
        return np.fromfile(os.path.join(work, name), dtype)

    return (names, read("params.f32", np.float32), read("g32.f32", np.float32),
            read("g64.f64", np.float64))


def seed_row(a, seed, work, images, labels):
    names, params, g32, g64 = ringtrain_gradients(a, seed, work)
    exact, exact_signs = torch_gradients(a, params, images, labels, torch.float64)
    theirs, their_signs = torch_gradients(a, params, images, labels, torch.float32)
    flips = sum(int((x != y).sum()) for x, y in zip(exact_signs, their_signs))
    bounds = np.cumsum([0] + [g.size for g in exact])
    ours = np.split(g32.astype(np.float64), bounds[1:-1])
    check = errors(np.split(g64, bounds[1:-1]), exact)[0]
    o, t = errors(ours, exact), errors(theirs, exact)
    worse = sum(x > y for x, y in zip(o[1], t[1]))

    def worst(e, i):
        j = int(np.argmax(e[i]))
        return f"{e[i][j]:.2e} ({names[j]})"

    return (f"{seed} | {check:.1e} | {o[0]:.2e}, {t[0]:.2e} | {worst(o, 1)}, {worst(t, 1)} | "
            f"{worst(o, 2)}, {worst(t, 2)} | {worse} of {len(names)} | {flips}")


if __name__ == "__main__":
    main()
