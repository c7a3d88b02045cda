#!/usr/bin/env bash
# The classic comparison on this node, for a fixed number of steps each:
#   1. DataParallel, synchronous loader   (one process drives every device; the baseline)
#   2. DDP, synchronous loader            (one rank per device, --workers 0)
#   3. DDP, tuned loader                  (--workers auto --prefetch-factor 4 --persistent-workers)
# Devices are the node's GPUs, or without one N CPU replicas / ranks (labelled as such). Prints
# one table (configuration, device busy share or GPU utilisation, epoch time, images/s,
# speed-up over the baseline, main bottleneck) and writes it as CSV and JSON beside each run's
# summary JSON, Chrome traces and log.
#
#   bash jobs/compare_strategies.sh [ringtrain train flags...]
# All three train on the same global batch (GLOBAL_BATCH, split over the devices or ranks), so
# their images/s compare. Environment: RINGTRAIN (binary, default build/ringtrain), OUT (default
# runs/compare-DATE), STEPS (default 30), DEVICES (default: GPUs visible, else 2),
# GLOBAL_BATCH (default 256 per GPU, or 32 on CPUs), MPIRUN (default mpirun), MPIRUN_ARGS
# (default --oversubscribe on CPUs).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${RINGTRAIN:-build/ringtrain}
out=${OUT:-runs/compare-$(date +%Y%m%d-%H%M%S)}
steps=${STEPS:-30}
mpirun=${MPIRUN:-mpirun}
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if [ "$gpus" -gt 0 ]; then
  devices=${DEVICES:-$gpus}
  batch=${GLOBAL_BATCH:-$((256 * devices))}
  kind="$devices GPU(s)"
  device_flags=(--device cuda)
  mpirun_args=(${MPIRUN_ARGS:-})
else
  devices=${DEVICES:-2}
  batch=${GLOBAL_BATCH:-32}
  kind="$devices CPU replicas/ranks (no GPU)"
  device_flags=(--device cpu --threads 1)
  mpirun_args=(${MPIRUN_ARGS:---oversubscribe})
fi
mkdir -p "$out"
common=(--steps "$steps" --no-eval "${device_flags[@]}" "$@")
echo "compare_strategies: $kind, $steps steps of $batch images each, results in $out"

# run NAME COMMAND...: one configuration, its log and summary JSON under $out.
run() {
  local name=$1
  shift
  echo "== $name"
  if ! "$@" --summary "$out/$name.json" --profile trace --trace-dir "$out/$name.trace" \
    >"$out/$name.log" 2>&1; then
    echo "compare_strategies: $name failed; its log:" >&2
    tail -n 20 "$out/$name.log" >&2
    exit 1
  fi
  grep "summary:" "$out/$name.log" | cut -c12-
}

if [ "$gpus" -gt 0 ]; then
  echo "== dp_sync: skipped, --mode dp runs on CPU replicas only so far" | tee "$out/dp_sync.log"
else
  run dp_sync "$bin" train --mode dp --devices "$devices" --batch-size "$batch" --workers 0 \
    "${common[@]}"
fi
run ddp_sync "$mpirun" "${mpirun_args[@]}" -n "$devices" "$bin" train --global-batch-size "$batch" \
  --workers 0 "${common[@]}"
run ddp_tuned "$mpirun" "${mpirun_args[@]}" -n "$devices" "$bin" train --global-batch-size "$batch" \
  --workers auto --prefetch-factor 4 --persistent-workers "${common[@]}"

python3 - "$out" "$kind" <<'PY'
import csv, json, os, sys
out, kind = sys.argv[1], sys.argv[2]
configs = [("dp_sync", "DataParallel, sync loader"), ("ddp_sync", "DDP, sync loader"),
           ("ddp_tuned", "DDP, tuned loader")]
rows = []
for name, label in configs:
    path = os.path.join(out, name + ".json")
    if not os.path.exists(path):
        continue
    s = json.load(open(path))
    util = s["gpu_util_mean"]
    rows.append({"configuration": label, "devices": kind,
                 "utilisation": util if util is not None else 100 * s["busy_share"],
                 "utilisation_kind": "GPU utilisation" if util is not None else "busy share",
                 "epoch_time_s": s["epoch_time_s"], "images_per_s": s["images_per_s"],
                 "bottleneck": s["bottleneck"], "phase_shares": s["phase_shares"]})
base = rows[0]["images_per_s"]
for r in rows:
    r["speedup"] = r["images_per_s"] / base
print(f"\n{'configuration':28s} {'util/busy %':>11s} {'run s':>8s} {'img/s':>9s} "
      f"{'speed-up':>8s}  bottleneck   ({kind})")
for r in rows:
    print(f"{r['configuration']:28s} {r['utilisation']:11.1f} {r['epoch_time_s']:8.2f} "
          f"{r['images_per_s']:9.1f} {r['speedup']:7.2f}x  {r['bottleneck']}")
with open(os.path.join(out, "compare.csv"), "w", newline="") as f:
    fields = ["configuration", "devices", "utilisation", "utilisation_kind", "epoch_time_s",
              "images_per_s", "speedup", "bottleneck"]
    w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
json.dump(rows, open(os.path.join(out, "compare.json"), "w"), indent=2)
print(f"\nwritten: {out}/compare.csv, {out}/compare.json")
PY
