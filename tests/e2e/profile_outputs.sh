#!/usr/bin/env bash
# What --profile trace, --metrics and --summary leave behind under mpirun -np 2: a Chrome trace
# per rank that parses and holds every phase on that rank's row, metrics lines with every field,
# and a run summary whose phase shares add up to one.
#   tests/e2e/profile_outputs.sh MPIEXEC build/ringtrain
set -u
mpiexec=$1
bin=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

"$bin" data synth --out "$dir/small.h5" --train 256 --test 64 --height 16 --width 16 >/dev/null
if ! timeout 120 "$mpiexec" -n 2 --oversubscribe "$bin" train --data "$dir/small.h5" --depth 18 \
  --width 0.125 --batch-size 16 --epochs 2 --threads 1 --workers 1 --profile trace \
  --trace-dir "$dir/trace" --metrics "$dir/metrics.jsonl" --summary "$dir/summary.json" \
  >"$dir/log" 2>&1; then
  echo "FAIL training run: exit status $?"
  cat "$dir/log"
  exit 1
fi
grep -q "where the time went" "$dir/log" || { echo "FAIL no phase table"; cat "$dir/log"; exit 1; }

python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
phases = {"data", "copy", "forward", "backward", "comm_wait", "optimizer", "other"}
failures = 0
def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    failures += not ok
for rank in (0, 1):
    events = json.load(open(f"{d}/trace/trace_rank{rank}.json"))["traceEvents"]
    spans = [e for e in events if e["ph"] == "X"]
    check(all(e["pid"] == rank for e in events), f"trace of rank {rank}: every event on its row")
    check({e["name"] for e in spans} == phases, f"trace of rank {rank}: every phase present")
    check(all(e["dur"] >= 0 for e in spans), f"trace of rank {rank}: durations non-negative")
fields = {"epoch", "step", "train_loss", "train_accuracy", "test_loss", "test_accuracy", "lr",
          "epoch_time_s", "images_per_s", "phase_shares", "gpu_util_mean", "gpu_util_min", "gpus"}
lines = [json.loads(l) for l in open(f"{d}/metrics.jsonl")]
check(len(lines) == 2, "metrics: one line per epoch")
check(all(fields <= set(l) for l in lines), "metrics: every field")
check(all(set(l["phase_shares"]) == phases for l in lines), "metrics: every phase share")
s = json.load(open(f"{d}/summary.json"))
check(s["ranks"] == 2 and s["steps"] == 16, "summary: ranks and steps")
check(abs(sum(s["phase_shares"].values()) - 1) < 1e-9, "summary: shares add up to one")
check(s["gpus"] == [] and all(l["gpus"] == [] for l in lines), "no GPU: no per-GPU entries")
check(s["bottleneck"] in ("data", "communication", "compute"), "summary: a bottleneck")
sys.exit(1 if failures else 0)
PY
