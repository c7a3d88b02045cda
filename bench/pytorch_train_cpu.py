#!/usr/bin/env python3
"""PyTorch's training throughput for the same model definitions, for side-by-side comparison
with bench_train_cpu. Uses Debian's python3-torch (torchvision is not needed: the ResNet is
defined here exactly as ringtrain defines it; the parameter count is printed as a check).

    /usr/bin/python3 bench/pytorch_train_cpu.py --depth 50 --batch-size 32 --steps 10
"""
import argparse
import os
import resource
import time

import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, cin, planes, stride, bottleneck):
        super().__init__()
        out = planes * 4 if bottleneck else planes
        if bottleneck:
            shapes = [(cin, planes, 1, 1), (planes, planes, 3, stride), (planes, out, 1, 1)]
        else:
            shapes = [(cin, planes, 3, stride), (planes, planes, 3, 1)]
        layers = []
        for i, (a, b, k, s) in enumerate(shapes):
            layers += [nn.Conv2d(a, b, k, s, k // 2, bias=False), nn.BatchNorm2d(b)]
            if i + 1 < len(shapes):
                layers.append(nn.ReLU(inplace=True))
        self.main = nn.Sequential(*layers)
        self.shortcut = None
        if stride != 1 or cin != out:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, out, 1, stride, bias=False), nn.BatchNorm2d(out))
        self.out = out

    def forward(self, x):
        s = x if self.shortcut is None else self.shortcut(x)
        return torch.relu(self.main(x) + s)


def resnet(depth, width, classes=10):
    layout = {18: ([2, 2, 2, 2], False), 34: ([3, 4, 6, 3], False), 50: ([3, 4, 6, 3], True),
              101: ([3, 4, 23, 3], True), 152: ([3, 8, 36, 3], True)}[depth]
    c = max(1, round(64 * width))
    layers = [nn.Conv2d(3, c, 3, 1, 1, bias=False), nn.BatchNorm2d(c), nn.ReLU(inplace=True)]
    for stage, n in enumerate(layout[0]):
        planes = max(1, round(64 * width * 2 ** stage))
        for b in range(n):
            blk = Block(c, planes, 2 if stage > 0 and b == 0 else 1, layout[1])
            layers.append(blk)
            c = blk.out
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, classes)]
    return nn.Sequential(*layers)


def resident_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--depth", type=int, default=50)
    p.add_argument("--width", type=float, default=1.0)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    resident_before = resident_mib()
    model = resnet(a.depth, a.width)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    x = torch.randn(a.batch_size, 3, 32, 32)
    y = torch.arange(a.batch_size) % 10
    loss_fn = nn.CrossEntropyLoss()
    times = []
    for s in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()
        if s >= a.warmup:
            times.append(time.perf_counter() - t0)
    times.sort()
    med = times[len(times) // 2]
    params = sum(p.numel() for p in model.parameters())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(f"pytorch {torch.__version__} resnet{a.depth} width {a.width:.2f} batch {a.batch_size} "
          f"threads {a.threads} ({params} parameters): median step {med:.3f} s, "
          f"{a.batch_size / med:.1f} img/s, peak RSS {peak:.0f} MiB, "
          f"{(peak - resident_before) / a.batch_size:.2f} MiB per image")


if __name__ == "__main__":
    main()
