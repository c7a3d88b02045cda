#!/usr/bin/env python3
"""PyTorch's GPU training throughput for the model bench_train_gpu runs, side by side: the same
ResNet definition (from pytorch_train_cpu.py), channels_last, bf16 autocast, SGD with momentum,
data already on the device; eager, and with torch.compile when --compile is given.

    python3 bench/pytorch_train_gpu.py --depth 50 --batch-size 256 --steps 50 --compile
"""
import argparse
import os
import sys
import time

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pytorch_train_cpu import resnet  # noqa: E402


def images_per_second(model, batch, steps, warmup):
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    x = torch.randn(batch, 3, 32, 32, device="cuda").to(memory_format=torch.channels_last)
    y = torch.arange(batch, device="cuda") % 10
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return steps * batch / (time.perf_counter() - t0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--depth", type=int, default=50)
    p.add_argument("--width", type=float, default=1.0)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--compile", action="store_true", help="also time torch.compile")
    a = p.parse_args()
    torch.backends.cudnn.benchmark = True
    model = resnet(a.depth, a.width).cuda().to(memory_format=torch.channels_last)
    rates = {"eager": images_per_second(model, a.batch_size, a.steps, a.warmup)}
    if a.compile:
        compiled = torch.compile(model)
        rates["compile"] = images_per_second(compiled, a.batch_size, a.steps, a.warmup)
    name = torch.cuda.get_device_name()
    for mode, rate in rates.items():
        print(f"pytorch {torch.__version__} {mode:8s} {name}: resnet{a.depth}-cifar batch "
              f"{a.batch_size} bf16 channels_last: {rate:10.0f} img/s")


if __name__ == "__main__":
    main()
