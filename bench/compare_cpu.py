#!/usr/bin/env python3
"""ringtrain's CPU backend against PyTorch on this machine, side by side and interleaved (shared
machines are noisy: every round runs each contender once, back to back), printing each round
and the medians with their ratios:

  train   training steps (bench_train_cpu against pytorch_train_cpu.py, the same ResNet):
          resnet50-cifar batch 32, resnet18-cifar batch 64 and at width 0.25; img/s, and peak
          resident memory with its growth from before the model was built, per image; and
          ResNet-50's achieved GFLOP/s as a fraction of the machine's square SGEMM on the same
          threads (bench_gemm --peak), a practical peak
  loader  full augmentation into f32 batches of 256 (bench_loader) against PyTorch's DataLoader
          over h5py with torchvision's transforms (pytorch_loader.py), on the same file
  ranks   ringtrain train on the same cores as 1 rank x T threads and as T ranks x 1 thread
          (mpirun), resnet18-cifar at width 0.25 and 1, global batch 64

    /usr/bin/python3 bench/compare_cpu.py [--rounds 3] [--parts train,loader,ranks]
                                          [--baseline OLD/bench_train_cpu] [--isa avx2]
                                          [--build DIR]

--baseline runs an older build's bench_train_cpu interleaved too (the effect of a change).
--isa avx2 limits both programs to AVX2, as on an AVX2-only machine: oneDNN through
ONEDNN_MAX_CPU_ISA (both use oneDNN's convolutions), PyTorch's own kernels through
ATEN_CPU_CAPABILITY. Our own loops are compiled for the build's -march, so for the whole of
ringtrain on AVX2 give it a build configured with -DRINGTRAIN_MARCH=x86-64-v3 (--build). The
script first checks, with ONEDNN_VERBOSE=1, which kernels each program really runs.
Needs a release build (build/ unless --build), mpirun, and Debian's python3-torch,
python3-torchvision and python3-h5py.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = "/usr/bin/python3"
MODELS = [(50, 32, 1.0), (18, 64, 1.0), (18, 64, 0.25)]  # depth, batch, width
RANK_MODELS = [(0.25, 60), (1.0, 12)]  # width, steps (the rate includes the first step)


def run(cmd, **kw):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout
    return out.strip().splitlines()[-1]


def isa_env(isa, pytorch):
    """The environment that limits a program to an instruction set (native: as it is)."""
    env = dict(os.environ)
    if isa == "avx2":
        env["ONEDNN_MAX_CPU_ISA"] = "AVX2"
        if pytorch:
            env["ATEN_CPU_CAPABILITY"] = "avx2"
    return env


def check_isa(a):
    """Runs one small step of each program with ONEDNN_VERBOSE=1 and prints the ISA and the
    convolution kernels oneDNN reports; exits if an AVX2 run used a wider kernel."""
    args = ["--depth", "18", "--width", "0.25", "--batch-size", "4", "--steps", "1", "--warmup",
            "0", "--threads", "1"]
    programs = (("ringtrain", [os.path.join(a.build, "bench", "bench_train_cpu")], False),
                ("pytorch", [PYTHON, os.path.join(ROOT, "bench", "pytorch_train_cpu.py")], True))
    for name, cmd, pytorch in programs:
        env = dict(isa_env(a.isa, pytorch), ONEDNN_VERBOSE="1")
        out = subprocess.run(cmd + args, check=True, capture_output=True, text=True, env=env).stdout
        fields = [line.split(",") for line in out.splitlines() if line.startswith("onednn_verbose")]
        isa = next((f[-1].strip() for f in fields if len(f) > 3 and f[2] == "cpu" and
                    f[3].startswith("isa:")), "?")
        kernels = sorted({f[4] for f in fields
                          if len(f) > 4 and f[1] == "exec" and f[3] == "convolution"})
        print(f"{name}: oneDNN {isa}, convolution kernels {', '.join(kernels) or 'none'}")
        if a.isa == "avx2" and any("avx512" in k for k in kernels):
            sys.exit(f"compare_cpu: {name} still runs AVX-512 kernels under --isa avx2")


def number(pattern, line):
    m = re.search(pattern, line)
    if not m:
        sys.exit(f"compare_cpu: no '{pattern}' in: {line}")
    return float(m.group(1))


def train_row(line):
    """img/s, and the memory where the benchmark reports it (an older baseline may not)."""
    memory = re.search(r"peak RSS ([\d.]+) MiB, ([\d.]+) MiB per image", line)
    gflops = re.search(r"([\d.]+) GFLOP/s", line)
    return {"img/s": number(r"([\d.]+) img/s", line),
            "GFLOP/s": float(gflops.group(1)) if gflops else float("nan"),
            "peak": float(memory.group(1)) if memory else float("nan"),
            "per image": float(memory.group(2)) if memory else float("nan")}


def train_round(a, results):
    for depth, batch, width in MODELS:
        args = ["--depth", str(depth), "--batch-size", str(batch), "--width", str(width),
                "--steps", str(a.steps), "--warmup", "1", "--threads", str(a.threads)]
        contenders = [("ringtrain", [os.path.join(a.build, "bench", "bench_train_cpu")]),
                      ("pytorch", [PYTHON, os.path.join(ROOT, "bench", "pytorch_train_cpu.py")])]
        if a.baseline:
            contenders.insert(0, ("baseline", [a.baseline]))
        for name, cmd in contenders:
            row = train_row(run(cmd + args, env=isa_env(a.isa, name == "pytorch")))
            results.setdefault((depth, batch, width), {}).setdefault(name, []).append(row)
            print(f"  resnet{depth} b{batch} w{width:g} {name:9s} {row['img/s']:8.1f} img/s, "
                  f"peak {row['peak']:6.0f} MiB, {row['per image']:6.2f} MiB per image", flush=True)


def peak_round(a, results):
    line = run([os.path.join(a.build, "bench", "bench_gemm"), "--peak", "--threads", str(a.threads)],
               env=isa_env(a.isa, False))
    results.append(number(r"([\d.]+) GF/s", line))
    print(f"  {line}", flush=True)


def loader_round(a, path, results):
    out = subprocess.run([os.path.join(a.build, "bench", "bench_loader"), "--images", "20000",
                          "--workers", str(a.threads), "--epochs", "3", "--file", path],
                         check=True, capture_output=True, text=True).stdout
    line = next(l for l in out.splitlines() if "augment, f32 NCHW" in l)
    ours = number(r"([\d.]+) img/s", line)
    theirs = number(r"([\d.]+) img/s", run([PYTHON, os.path.join(ROOT, "bench", "pytorch_loader.py"),
                                             "--file", path, "--workers", str(a.threads),
                                             "--epochs", "2"]))
    results.setdefault("ringtrain", []).append(ours)
    results.setdefault("pytorch", []).append(theirs)
    print(f"  loader ringtrain {ours:10.0f} img/s, PyTorch DataLoader {theirs:8.0f} img/s", flush=True)


def ranks_round(a, workdir, results):
    env = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1")
    for width, steps in RANK_MODELS:
        for ranks, threads in ((1, a.threads), (a.threads, 1)):
            summary = os.path.join(workdir, "summary.json")
            cmd = ["mpirun", "-np", str(ranks), "--bind-to", "none",
                   os.path.join(a.build, "ringtrain"), "train", "--depth", "18", "--width", str(width),
                   "--global-batch-size", "64", "--steps", str(steps), "--no-eval",
                   "--no-final-checkpoint", "--synth-path", os.path.join(workdir, "synthetic.h5"),
                   "--threads", str(threads), "--summary", summary]
            subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=workdir,
                           env=dict(isa_env(a.isa, False), **env))
            with open(summary) as f:
                rate = json.load(f)["images_per_s"]
            results.setdefault(width, {}).setdefault((ranks, threads), []).append(rate)
            print(f"  resnet18 w{width:g}, {ranks} rank(s) x {threads} thread(s): {rate:8.1f} img/s",
                  flush=True)


def peak_fraction(train, peaks):
    """ResNet-50's achieved GFLOP/s over the square SGEMM's, round by round."""
    rows = train.get((50, 32, 1.0), {}).get("ringtrain")
    if not rows or not peaks:
        return
    fractions = [r["GFLOP/s"] / p for r, p in zip(rows, peaks)]
    print(f"\nresnet50-cifar batch 32: {statistics.median(r['GFLOP/s'] for r in rows):.1f} GFLOP/s "
          f"achieved, square SGEMM {statistics.median(peaks):.1f} GF/s on the same threads: "
          f"{statistics.median(fractions):.0%} of it (per round: "
          f"{', '.join(f'{f:.0%}' for f in fractions)})")


def median_table(train, loader, ranks):
    if train:
        print("\n| model, batch | ringtrain img/s | PyTorch img/s | ratio | ringtrain MiB/image "
              "(peak MiB) | PyTorch MiB/image (peak MiB) |")
        print("|---|---|---|---|---|---|")
        for (depth, batch, width), rows in train.items():
            med = {k: {f: statistics.median(r[f] for r in v) for f in v[0]} for k, v in rows.items()}
            ratio = statistics.median(o["img/s"] / p["img/s"]
                                      for o, p in zip(rows["ringtrain"], rows["pytorch"]))
            name = f"resnet{depth}-cifar{'' if width == 1 else f' width {width:g}'}, {batch}"
            r, p = med["ringtrain"], med["pytorch"]
            print(f"| {name} | {r['img/s']:.1f} | {p['img/s']:.1f} | {ratio:.2f} | "
                  f"{r['per image']:.2f} ({r['peak']:.0f}) | {p['per image']:.2f} ({p['peak']:.0f}) |")
            if "baseline" in med:
                gain = statistics.median(o["img/s"] / b["img/s"]
                                         for o, b in zip(rows["ringtrain"], rows["baseline"]))
                print(f"|   (baseline {med['baseline']['img/s']:.1f} img/s: this build {gain:.2f}x) |")
    if loader:
        ratio = statistics.median(o / p for o, p in zip(loader["ringtrain"], loader["pytorch"]))
        print(f"\nloader, median img/s: ringtrain {statistics.median(loader['ringtrain']):.0f}, "
              f"PyTorch DataLoader {statistics.median(loader['pytorch']):.0f}, ratio {ratio:.0f}")
    for width, rows in ranks.items():
        (one, one_rates), (many, many_rates) = rows.items()
        ratio = statistics.median(m / o for m, o in zip(many_rates, one_rates))
        print(f"\nringtrain train resnet18-cifar width {width:g}, global batch 64, median img/s: "
              f"{one[0]} rank x {one[1]} threads {statistics.median(one_rates):.1f}, "
              f"{many[0]} ranks x {many[1]} thread {statistics.median(many_rates):.1f}, "
              f"ratio {ratio:.2f}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=5, help="timed training steps per run")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--parts", default="train,loader,ranks")
    p.add_argument("--baseline", help="an older build's bench_train_cpu, run interleaved too")
    p.add_argument("--isa", choices=["native", "avx2"], default="native")
    p.add_argument("--build", default=os.path.join(ROOT, "build"), help="ringtrain's build folder")
    a = p.parse_args()
    parts = set(a.parts.split(","))
    train, peaks, loader, ranks = {}, [], {}, {}
    check_isa(a)
    with tempfile.TemporaryDirectory(prefix="compare_cpu_") as workdir:
        for r in range(1, a.rounds + 1):
            print(f"round {r} of {a.rounds}", flush=True)
            if "train" in parts:
                train_round(a, train)
                peak_round(a, peaks)
            if "loader" in parts:
                loader_round(a, os.path.join(workdir, "loader.h5"), loader)
            if "ranks" in parts:
                ranks_round(a, workdir, ranks)
    median_table(train, loader, ranks)
    peak_fraction(train, peaks)


if __name__ == "__main__":
    main()
