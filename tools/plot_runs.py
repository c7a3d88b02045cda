#!/usr/bin/python3
"""Pictures of a strategy comparison (jobs/compare_strategies.sh) or of any run summaries
(`ringtrain train --summary`): stacked bars of where each configuration's step time went,
images/s with the device busy share (or GPU utilisation) beside it, and, where the runs left
Chrome traces (--profile trace), throughput and busy share step by step. Needs matplotlib
(Debian's python3-matplotlib).

    /usr/bin/python3 tools/plot_runs.py runs/compare-DATE   # writes runs/compare-DATE/compare.png
    /usr/bin/python3 tools/plot_runs.py a.json b.json -o runs.png   # any summaries
"""
import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# replicate and scatter are DataParallel's alone: other runs' summaries leave them out.
PHASES = ["data", "copy", "replicate", "scatter", "forward", "backward", "comm_wait", "optimizer",
          "other"]
COLOURS = ["#d62728", "#ff9896", "#9467bd", "#c5b0d5", "#1f77b4", "#aec7e8", "#ff7f0e", "#2ca02c",
           "#c7c7c7"]


def load(paths):
    """(label, summary, rank 0's trace or None) from a comparison folder or summary files."""
    if len(paths) == 1 and os.path.isdir(paths[0]):
        folder = paths[0]
        names = ["dp_sync", "ddp_sync", "ddp_tuned"]
        labels = ["DataParallel\nsync loader", "DDP\nsync loader", "DDP\ntuned loader"]
        found = [(l, os.path.join(folder, n)) for n, l in zip(names, labels)
                 if os.path.exists(os.path.join(folder, n + ".json"))]
    else:
        found = [(os.path.splitext(os.path.basename(p))[0], os.path.splitext(p)[0]) for p in paths]
    runs = []
    for label, stem in found:
        trace = os.path.join(stem + ".trace", "trace_rank0.json")
        runs.append((label, json.load(open(stem + ".json")),
                     json.load(open(trace)) if os.path.exists(trace) else None))
    return runs


def per_step(trace, global_batch):
    """Images/s and busy share of each step, from the device row of a Chrome trace."""
    steps = {}
    for e in trace["traceEvents"]:
        if e["ph"] != "X" or e.get("tid", 0) != 0:
            continue
        total, busy = steps.get(e["args"]["step"], (0.0, 0.0))
        busy += e["dur"] if e["name"] in ("forward", "backward", "optimizer") else 0.0
        steps[e["args"]["step"]] = (total + e["dur"], busy)
    order = sorted(steps)
    return ([global_batch / (steps[s][0] * 1e-6) for s in order],
            [100 * steps[s][1] / steps[s][0] for s in order])


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
    labels = [l for l, _, _ in runs]
    traced = [(l, s, t) for l, s, t in runs if t is not None]
    panels = 3 if traced else 2
    fig, axes = plt.subplots(1, panels, figsize=(6 * panels, 4.5))
    left, right = axes[0], axes[1]
    bottom = [0.0] * len(runs)
    for phase, colour in zip(PHASES, COLOURS):
        shares = [100 * s["phase_shares"].get(phase, 0.0) for _, s, _ in runs]
        left.bar(labels, shares, bottom=bottom, label=phase, color=colour)
        bottom = [b + v for b, v in zip(bottom, shares)]
    left.set_ylabel("share of step time (%)")
    left.set_title("where the step time goes")
    left.legend(fontsize=8, loc="upper right", bbox_to_anchor=(1.32, 1.0))
    rates = [s["images_per_s"] for _, s, _ in runs]
    right.bar(labels, rates, color="#1f77b4")
    right.set_ylabel("images/s")
    right.set_title("throughput and device busy share")
    busy = right.twinx()
    util = [s["gpu_util_mean"] if s.get("gpu_util_mean") is not None else 100 * s["busy_share"]
            for _, s, _ in runs]
    busy.plot(labels, util, "o-", color="#d62728")
    busy.set_ylim(0, 105)
    busy.set_ylabel("GPU utilisation / busy share (%)", color="#d62728")
    if traced:
        over = axes[2]
        share_axis = over.twinx()
        for label, summary, trace in traced:
            rate, share = per_step(trace, summary["global_batch"])
            line, = over.plot(rate, label=label.replace("\n", ", "))
            share_axis.plot(share, ":", color=line.get_color())
        over.set_xlabel("step")
        over.set_ylabel("images/s (solid)")
        share_axis.set_ylim(0, 105)
        share_axis.set_ylabel("busy share (%, dotted)")
        over.set_title("step by step (rank 0)")
        over.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(output, dpi=120)
    print("plot_runs: wrote " + output)


if __name__ == "__main__":
    main()
