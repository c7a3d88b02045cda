#!/usr/bin/env bash
# The classic comparison on this node, for a fixed number of steps each:
#   1. DataParallel, synchronous loader   (one process drives every device; the baseline)
#   2. DDP, synchronous loader            (one rank per device, --workers 0)
#   3. DDP, tuned loader                  (--workers auto --prefetch-factor 4 --persistent-workers)
# Devices are the node's GPUs (nvidia-smi lists them; CUDA_VISIBLE_DEVICES narrows them), or
# without one N CPU replicas / ranks (labelled as such). Prints one Markdown table, in
# docs/perf/compare.md's format: images/s, step time per phase (data, copy, replicate, scatter,
# forward, backward, comm, optimizer; '-' where a run has no such phase), GPU utilisation ('-'
# on CPUs) and the ratio of images/s to DDP with the tuned loader. Writes it as compare.md,
# compare.csv and compare.json beside each run's summary JSON, metrics, Chrome traces and log.
#
#   bash jobs/compare_strategies.sh [ringtrain train flags...]
# All three train on the same global batch (GLOBAL_BATCH, split over the devices or ranks), so
# their images/s compare. Environment: RINGTRAIN (binary, default build/ringtrain), OUT (default
# runs/compare-DATE), STEPS (default 30), DEVICES (default: GPUs visible, else 2),
# GLOBAL_BATCH (default 256 per GPU, or 32 on CPUs), MPIRUN (default mpirun), MPIRUN_ARGS
# (default --oversubscribe on CPUs). A configuration that fails keeps its row (marked failed,
# its log's tail printed) and the script exits 1 after writing the table.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${RINGTRAIN:-build/ringtrain}
out=${OUT:-runs/compare-$(date +%Y%m%d-%H%M%S)}
steps=${STEPS:-30}
mpirun=${MPIRUN:-mpirun}
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if [ "$gpus" -gt 0 ] && [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
  visible=$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | grep -c .)
  gpus=$((visible < gpus ? visible : gpus))
fi
if [ "$gpus" -gt 0 ]; then
  devices=${DEVICES:-$gpus}
  batch=${GLOBAL_BATCH:-$((256 * devices))}
  kind="$devices GPU(s)"
  device_flags=(--device cuda)
  read -r -a mpirun_args <<<"${MPIRUN_ARGS:-}"
else
  devices=${DEVICES:-2}
  batch=${GLOBAL_BATCH:-32}
  kind="$devices CPU replicas/ranks (no GPU)"
  device_flags=(--device cpu --threads 1)
  read -r -a mpirun_args <<<"${MPIRUN_ARGS:---oversubscribe}"
fi
mkdir -p "$out"
common=(--steps "$steps" --no-eval "${device_flags[@]}" "$@")
echo "compare_strategies: $kind, $steps steps of $batch images each, results in $out"

# run NAME COMMAND...: one configuration, its log, metrics and summary JSON under $out. A
# failure is reported and remembered; the other configurations still run.
failed=()
run() {
  local name=$1
  shift
  echo "== $name"
  rm -f "$out/$name.json"
  if ! "$@" --summary "$out/$name.json" --metrics "$out/$name.metrics.jsonl" --profile trace \
    --trace-dir "$out/$name.trace" >"$out/$name.log" 2>&1; then
    echo "compare_strategies: $name failed; the end of $out/$name.log:" >&2
    tail -n 20 "$out/$name.log" >&2
    rm -f "$out/$name.json"
    failed+=("$name")
    return 0
  fi
  grep "summary:" "$out/$name.log" | cut -c12-
}

run dp_sync "$bin" train --mode dp --devices "$devices" --batch-size "$batch" --workers 0 \
  "${common[@]}"
run ddp_sync "$mpirun" "${mpirun_args[@]}" -n "$devices" "$bin" train --global-batch-size "$batch" \
  --workers 0 "${common[@]}"
run ddp_tuned "$mpirun" "${mpirun_args[@]}" -n "$devices" "$bin" train --global-batch-size "$batch" \
  --workers auto --prefetch-factor 4 --persistent-workers "${common[@]}"

python3 - "$out" "$kind" <<'PY'
import csv, json, os, sys
out, kind = sys.argv[1], sys.argv[2]
CONFIGS = [("dp_sync", "DataParallel, sync loader"), ("ddp_sync", "DDP, sync loader"),
           ("ddp_tuned", "DDP, tuned loader")]
PHASES = ["data", "copy", "replicate", "scatter", "forward", "backward", "comm", "optimizer"]
# Older binaries name the communication phase comm_wait.
ALIASES = {"comm": ["comm", "comm_wait"]}


def gpu_util(name, summary):
    if summary.get("gpu_util_mean") is not None:
        return summary["gpu_util_mean"]
    path = os.path.join(out, name + ".metrics.jsonl")
    lines = open(path).read().split() if os.path.exists(path) else []
    values = [json.loads(l).get("gpu_util_mean") for l in lines]
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def row(name, label):
    path = os.path.join(out, name + ".json")
    if not os.path.exists(path):
        return {"configuration": label, "devices": kind, "status": "failed"}
    s = json.load(open(path))
    totals, steps = s["phase_totals_s"], max(1, s["steps"])
    ms = {}
    for p in PHASES:
        keys = [k for k in ALIASES.get(p, [p]) if k in totals]
        ms[p] = 1e3 * totals[keys[0]] / steps if keys else None
    return {"configuration": label, "devices": kind, "status": "ok",
            "images_per_s": s["images_per_s"], "step_ms": 1e3 * sum(totals.values()) / steps,
            "phase_ms": ms, "gpu_util": gpu_util(name, s), "bottleneck": s["bottleneck"],
            "phase_shares": s["phase_shares"]}


rows = [row(name, label) for name, label in CONFIGS]
base = rows[2].get("images_per_s")
for r in rows:
    r["vs_ddp_tuned"] = r["images_per_s"] / base if base and "images_per_s" in r else None


def cell(v, fmt):
    return "-" if v is None else fmt.format(v)


head = ["configuration", "img/s", "step ms"] + PHASES + ["GPU util", "vs DDP tuned"]
lines = [f"{kind}; per-phase columns are ms per step",
         "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
for r in rows:
    if r["status"] != "ok":
        lines.append("| " + " | ".join([r["configuration"], "failed"] + ["-"] * (len(head) - 2))
                     + " |")
        continue
    cells = [r["configuration"], cell(r["images_per_s"], "{:.1f}"), cell(r["step_ms"], "{:.1f}")]
    cells += [cell(r["phase_ms"][p], "{:.1f}") for p in PHASES]
    cells += [cell(r["gpu_util"], "{:.0f}%"), cell(r["vs_ddp_tuned"], "{:.2f}x")]
    lines.append("| " + " | ".join(cells) + " |")
table = "\n".join(lines) + "\n"
print("\n" + table)
open(os.path.join(out, "compare.md"), "w").write(table)
with open(os.path.join(out, "compare.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["configuration", "devices", "status", "images_per_s", "step_ms"]
               + [p + "_ms" for p in PHASES] + ["gpu_util", "vs_ddp_tuned", "bottleneck"])
    for r in rows:
        ms = r.get("phase_ms", {})
        w.writerow([r["configuration"], kind, r["status"], r.get("images_per_s"), r.get("step_ms")]
                   + [ms.get(p) for p in PHASES]
                   + [r.get("gpu_util"), r.get("vs_ddp_tuned"), r.get("bottleneck")])
json.dump(rows, open(os.path.join(out, "compare.json"), "w"), indent=2)
print(f"written: {out}/compare.md, {out}/compare.csv, {out}/compare.json")
PY
if [ "${#failed[@]}" -gt 0 ]; then
  echo "compare_strategies: failed: ${failed[*]} (their logs are in $out)" >&2
  exit 1
fi
