#!/usr/bin/python3
"""Pictures of one run's --metrics file (JSON lines, one per epoch): train and test loss,
train and test accuracy, images/s, and where each epoch's step time went, by step. Where a
resumed run started (a `{"segment": "resumed", ...}` line) is marked. Needs matplotlib (Debian's
python3-matplotlib).

    /usr/bin/python3 tools/plot_metrics.py runs/m.jsonl              # writes runs/m.png
    /usr/bin/python3 tools/plot_metrics.py runs/m.jsonl -o loss.png
"""
import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from plot_runs import COLOURS, PHASES  # noqa: E402


def load(path):
    """(the epoch lines, the steps at which a resumed segment started)."""
    epochs, resumed_after = [], []
    for line in open(path):
        if not line.strip():
            continue
        record = json.loads(line)
        if record.get("segment") == "resumed":
            resumed_after.append(record["step"])
        else:
            epochs.append(record)
    if not epochs:
        raise SystemExit(f"{path}: no epoch lines (a run writes one when each epoch ends)")
    return epochs, resumed_after


def series(epochs, key, scale=1):
    """The values of `key`, NaN where the run did not measure it (--no-eval: no test loss)."""
    return [scale * e[key] if e.get(key) is not None else float("nan") for e in epochs]


def draw(epochs, resumed_after, out):
    # Note: by the step at each epoch's end, not the epoch: a run stopped or resumed within an
    # epoch writes a line for each part of it.
    x = [e["step"] for e in epochs]
    figure, ((loss, accuracy), (speed, phases)) = plt.subplots(2, 2, figsize=(11, 7))
    for split, marker in (("train", "o-"), ("test", "s-")):
        loss.plot(x, series(epochs, split + "_loss"), marker, label=split)
        accuracy.plot(x, series(epochs, split + "_accuracy", 100), marker, label=split)
    loss.set_ylabel("loss")
    accuracy.set_ylabel("accuracy (%)")
    speed.plot(x, series(epochs, "images_per_s"), "o-")
    speed.set_ylabel("images/s")
    width = 0.6 * min([b - a for a, b in zip(x, x[1:]) if b > a] or [1])
    bottom = [0.0] * len(epochs)
    for phase, colour in zip(PHASES, COLOURS):
        share = [100 * e["phase_shares"].get(phase, 0) for e in epochs]
        if any(share):
            phases.bar(x, share, width=width, bottom=bottom, color=colour, label=phase)
            bottom = [b + s for b, s in zip(bottom, share)]
    phases.set_ylabel("share of the step (%)")
    for axes in (loss, accuracy, speed, phases):
        axes.set_xlabel("step (at the end of each epoch)")
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        for step in resumed_after:
            axes.axvline(step, color="grey", linestyle=":")
    loss.legend()
    accuracy.legend()
    phases.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(out, dpi=100)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("metrics", help="a file `ringtrain train --metrics` wrote")
    parser.add_argument("-o", "--out", help="the PNG to write (default: beside the metrics)")
    args = parser.parse_args()
    out = args.out or os.path.splitext(args.metrics)[0] + ".png"
    epochs, resumed_after = load(args.metrics)
    draw(epochs, resumed_after, out)
    print(f"wrote {out}: {len(epochs)} epochs" +
          (f", resumed {len(resumed_after)} time(s)" if resumed_after else ""))


if __name__ == "__main__":
    main()
