#!/usr/bin/env python3
"""PyTorch's GPU training throughput for the model bench_train_gpu runs, side by side: the same
ResNet definition (from pytorch_train_cpu.py), channels_last, bf16 autocast, SGD with momentum,
data already on the device; eager, and with torch.compile when --compile is given; with
--kernel-csv, eager's GPU kernels of a few steps by name, for tools/kernel_groups.py.

    python3 bench/pytorch_train_gpu.py --depth 50 --batch-size 256 --steps 50 --compile
"""
import argparse
import collections
import csv
import json
import os
import sys
import time

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pytorch_train_cpu import resnet  # noqa: E402


def training_step(model, batch):
    """One training step of `model` on a fixed batch on the device, as a function."""
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

    return step


def images_per_second(step, batch, steps, warmup):
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return steps * batch / (time.perf_counter() - t0)


def write_kernel_csv(step, steps, path):
    """The GPU kernels of `steps` steps under torch.profiler, summed by name into `path`:
    name,total_ns,calls (tools/kernel_groups.py reads it). The Chrome trace's kernel events are
    read rather than key_averages(), whose field names change between torch versions."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    trace = path + ".trace.json"
    prof.export_chrome_trace(trace)
    with open(trace) as f:
        events = json.load(f)["traceEvents"]
    os.remove(trace)
    totals = collections.defaultdict(lambda: [0.0, 0])
    for e in events:
        if e.get("cat") == "kernel":
            totals[e["name"]][0] += float(e.get("dur", 0)) * 1e3  # microseconds to ns
            totals[e["name"]][1] += 1
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["name", "total_ns", "calls"])
        for name, (ns, calls) in sorted(totals.items(), key=lambda kv: -kv[1][0]):
            out.writerow([name, f"{ns:.0f}", calls])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--depth", type=int, default=50)
    p.add_argument("--width", type=float, default=1.0)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--compile", action="store_true", help="also time torch.compile")
    p.add_argument("--kernel-csv", help="write eager's kernels of --profile-steps steps here")
    p.add_argument("--profile-steps", type=int, default=5)
    a = p.parse_args()
    torch.backends.cudnn.benchmark = True
    model = resnet(a.depth, a.width).cuda().to(memory_format=torch.channels_last)
    eager = training_step(model, a.batch_size)
    rates = {"eager": images_per_second(eager, a.batch_size, a.steps, a.warmup)}
    if a.kernel_csv:
        write_kernel_csv(eager, a.profile_steps, a.kernel_csv)
    if a.compile:
        compiled = training_step(torch.compile(model), a.batch_size)
        rates["compile"] = images_per_second(compiled, a.batch_size, a.steps, a.warmup)
    name = torch.cuda.get_device_name()
    for mode, rate in rates.items():
        print(f"pytorch {torch.__version__} {mode:8s} {name}: resnet{a.depth}-cifar batch "
              f"{a.batch_size} bf16 channels_last: {rate:10.0f} img/s")


if __name__ == "__main__":
    main()
