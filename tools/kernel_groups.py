#!/usr/bin/env python3
"""GPU kernel time per training step, grouped (batch norm, optimizer, convolutions and GEMMs,
elementwise, other), side by side for several runs: a Markdown table of device ms and launches per step.

Each run is LABEL=FILE:STEPS, FILE a CSV of kernels summed by name over STEPS steps, either
`nsys stats --report cuda_gpu_kern_sum --format csv`'s (columns "Total Time (ns)", "Instances",
"Name") or bench/pytorch_train_gpu.py --kernel-csv's (name,total_ns,calls).

    python3 tools/kernel_groups.py ringtrain=kern.csv:52 pytorch=torch_kernels.csv:5
"""
import csv
import re
import sys

# First match wins: a kernel is in the first group one of whose patterns its name contains
# (batch norm before the convolutions: cuDNN's batch-norm kernels are named cudnn::bn_...).
GROUPS = [
    ("batch norm", r"batch_norm|BatchNorm|bn_|SumAndSquare|ChannelAffine|GradientSums|"
                   r"InputGrad|NormAddRelu|welford"),
    ("optimizer", r"SgdStep|LarsStep|AdamWStep|multi_tensor|sgd|Sgd|adam|foreach|"
                  r"AccumulateAndClear|RunTotals|PieceSumSquares"),
    ("convolutions, GEMMs", r"conv|cudnn|implicit_gemm|xmma|fprop|dgrad|wgrad|winograd|"
                            r"nchwToNhwc|nhwcToNchw|cutlass|gemm|sm\d+_"),
    ("elementwise", r"elementwise|Elementwise|vectorized|Fill|fill|relu|Relu|add|Add|copy|Copy|"
                    r"Cast|cast|reduce|Reduce|pool|Pool|softmax|Softmax|CrossEntropy|Loss|"
                    r"Augment"),
]
OTHER = "other"


def group_of(name):
    for group, pattern in GROUPS:
        if re.search(pattern, name):
            return group
    return OTHER


def read_kernels(path):
    """(name, total ns, launches) rows from either CSV format."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    out = []
    for r in rows:
        if "Total Time (ns)" in r:
            out.append((r["Name"], float(r["Total Time (ns)"]), int(r["Instances"])))
        else:
            out.append((r["name"], float(r["total_ns"]), int(r["calls"])))
    return out


def grouped(path, steps):
    """{group: (ms per step, launches per step)}."""
    totals = {}
    for name, ns, launches in read_kernels(path):
        ms, n = totals.get(group_of(name), (0.0, 0))
        totals[group_of(name)] = (ms + ns / 1e6, n + launches)
    return {g: (ms / steps, n / steps) for g, (ms, n) in totals.items()}


def parse_run(spec):
    label, _, rest = spec.partition("=")
    path, _, steps = rest.rpartition(":")
    if not label or not path or not steps.isdigit() or int(steps) <= 0:
        raise SystemExit(f"kernel_groups: want LABEL=FILE:STEPS, got {spec!r}")
    return label, path, int(steps)


def table(runs):
    groups = [g for g, _ in GROUPS] + [OTHER]
    head = "| group | " + " | ".join(f"{label} ms/step | {label} launches/step"
                                      for label, _ in runs) + " |"
    lines = [head, "|---|" + "---:|---:|" * len(runs)]
    for g in groups + ["total"]:
        cells = []
        for _, by_group in runs:
            if g == "total":
                ms, n = (sum(v[i] for v in by_group.values()) for i in (0, 1))
            else:
                ms, n = by_group.get(g, (0.0, 0))
            cells.append(f"{ms:.2f} | {n:.0f}")
        lines.append(f"| {g} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv):
    if not argv:
        raise SystemExit(__doc__)
    runs = []
    for spec in argv:
        label, path, steps = parse_run(spec)
        runs.append((label, grouped(path, steps)))
    print(table(runs))


if __name__ == "__main__":
    main(sys.argv[1:])
