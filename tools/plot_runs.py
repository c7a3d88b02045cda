#!/usr/bin/python3
"""Pictures of a strategy comparison (jobs/compare_strategies.sh) or of any run summaries
(`ringtrain train --summary`): stacked bars of where each configuration's step time went, and
images/s with the device busy share (or GPU utilisation) beside it. Needs matplotlib (Debian's
python3-matplotlib).

    /usr/bin/python3 tools/plot_runs.py runs/compare-DATE   # writes runs/compare-DATE/compare.png
    /usr/bin/python3 tools/plot_runs.py a.json b.json -o runs.png   # any summaries
"""
import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PHASES = ["data", "copy", "forward", "backward", "comm_wait", "optimizer", "other"]
COLOURS = ["#d62728", "#ff9896", "#1f77b4", "#aec7e8", "#ff7f0e", "#2ca02c", "#c7c7c7"]


def load(paths):
    """(label, summary) pairs from a comparison folder or from summary files."""
    if len(paths) == 1 and os.path.isdir(paths[0]):
        folder = paths[0]
        names = ["dp_sync", "ddp_sync", "ddp_tuned"]
        labels = ["DataParallel\nsync loader", "DDP\nsync loader", "DDP\ntuned loader"]
        return [(l, json.load(open(os.path.join(folder, n + ".json"))))
                for n, l in zip(names, labels) if os.path.exists(os.path.join(folder, n + ".json"))]
    return [(os.path.splitext(os.path.basename(p))[0], json.load(open(p))) for p in paths]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("inputs", nargs="+", help="a comparison folder, or summary JSON files")
    p.add_argument("-o", "--output", help="PNG to write (default: compare.png in the folder)")
    a = p.parse_args()
    runs = load(a.inputs)
    if not runs:
        raise SystemExit("plot_runs: no summaries found in " + " ".join(a.inputs))
    output = a.output or os.path.join(a.inputs[0] if os.path.isdir(a.inputs[0]) else ".",
                                      "compare.png")
    labels = [l for l, _ in runs]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    bottom = [0.0] * len(runs)
    for phase, colour in zip(PHASES, COLOURS):
        shares = [100 * s["phase_shares"][phase] for _, s in runs]
        left.bar(labels, shares, bottom=bottom, label=phase, color=colour)
        bottom = [b + v for b, v in zip(bottom, shares)]
    left.set_ylabel("share of step time (%)")
    left.set_title("where the step time goes")
    left.legend(fontsize=8, loc="upper right", bbox_to_anchor=(1.32, 1.0))
    rates = [s["images_per_s"] for _, s in runs]
    right.bar(labels, rates, color="#1f77b4")
    right.set_ylabel("images/s")
    right.set_title("throughput and device busy share")
    busy = right.twinx()
    util = [s["gpu_util_mean"] if s.get("gpu_util_mean") is not None else 100 * s["busy_share"]
            for _, s in runs]
    busy.plot(labels, util, "o-", color="#d62728")
    busy.set_ylim(0, 105)
    busy.set_ylabel("GPU utilisation / busy share (%)", color="#d62728")
    fig.tight_layout()
    fig.savefig(output, dpi=120)
    print("plot_runs: wrote " + output)


if __name__ == "__main__":
    main()
