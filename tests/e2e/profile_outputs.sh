#!/usr/bin/env bash
# What --profile trace, --metrics and --summary leave behind under mpirun -np 2: a Chrome trace
# per rank that parses and holds every phase on that rank's rows, a row per DDP bucket with its
# all-reduce of every step and a row per loader worker with its batches, every row named and in
# order; metrics lines with every field, and a run summary whose phase shares add up to one.
#   tests/e2e/profile_outputs.sh MPIEXEC build/ringtrain
set -u
mpiexec=$1
bin=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

"$bin" data synth --out "$dir/small.h5" --train 256 --test 64 --height 16 --width 16 >/dev/null
if ! timeout 120 "$mpiexec" -n 2 --oversubscribe "$bin" train --data "$dir/small.h5" --depth 18 \
  --width 0.25 --bucket-cap-mb 1 --batch-size 16 --epochs 2 --threads 1 --workers 2 --profile trace \
  --trace-dir "$dir/trace" --metrics "$dir/metrics.jsonl" --summary "$dir/summary.json" \
  >"$dir/log" 2>&1; then
  echo "FAIL training run: exit status $?"
  cat "$dir/log"
  exit 1
fi
grep -q "where the time went" "$dir/log" || { echo "FAIL no phase table"; cat "$dir/log"; exit 1; }

python3 - "$dir" <<'PY'
import json, sys, time
d = sys.argv[1]
phases = {"data", "copy", "forward", "backward", "comm_wait", "optimizer", "other"}
failures = 0
def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    failures += not ok
def check_host_rows(rank, events, spans):
    names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    place = {e["tid"]: e["args"]["sort_index"] for e in events if e["name"] == "thread_sort_index"}
    check(set(names) == set(place) == {e["tid"] for e in spans},
          f"trace of rank {rank}: every row named and placed ({len(names)} rows)")
    reduces = [e for e in spans if e["name"].startswith("allreduce bucket ")]
    buckets = {e["args"]["bucket"] for e in reduces}
    check(len(buckets) == 4, f"trace of rank {rank}: four buckets all-reduced ({sorted(buckets)})")
    check(len(reduces) == 16 * len(buckets) and {e["args"]["step"] for e in reduces} == set(range(16)),
          f"trace of rank {rank}: an all-reduce span per bucket per step ({len(reduces)})")
    check(all(names[e["tid"]] == f"all-reduce bucket {e['args']['bucket']} (host: launch to wait done)"
              for e in reduces), f"trace of rank {rank}: each bucket on its named row")
    per_step = {}
    for e in reduces:
        per_step[e["args"]["step"]] = per_step.get(e["args"]["step"], 0) + e["args"]["bytes"]
    check(len(set(per_step.values())) == 1 and min(per_step.values(), default=0) > 0,
          f"trace of rank {rank}: every step all-reduces the same {max(per_step.values(), default=0)} bytes")
    ends = {(e["tid"], e["args"]["step"]): (e["ts"], e["ts"] + e["dur"]) for e in reduces}
    waits = [e for e in spans if e["name"] == "wait"]
    check(len(waits) == len(reduces) and all(
        ends[(w["tid"], w["args"]["step"])][0] <= w["ts"] and
        ends[(w["tid"], w["args"]["step"])][1] == w["ts"] + w["dur"] for w in waits),
          f"trace of rank {rank}: each all-reduce holds its wait, ending with it")
    batches = [e for e in spans if e["name"].startswith("batch ")]
    lanes = {e["tid"] for e in batches}
    check(sorted(names[t] for t in lanes) == ["loader worker 0", "loader worker 1"]
          and len(batches) == 16, f"trace of rank {rank}: 16 batches on two named loader rows")
    def one_at_a_time(tid):
        lane = sorted((e for e in batches if e["tid"] == tid), key=lambda e: e["ts"])
        return all(a["ts"] + a["dur"] <= b["ts"] for a, b in zip(lane, lane[1:]))
    check(all(one_at_a_time(t) for t in lanes),
          f"trace of rank {rank}: a loader worker builds one batch at a time")
    order = sorted(names, key=lambda t: place.get(t, -1))
    kinds = ["device" if t == 0 else "host" if t == 1 else names[t].split(" ")[0] for t in order]
    check(kinds == sorted(kinds, key=["device", "host", "all-reduce", "loader"].index),
          f"trace of rank {rank}: rows ordered device, host, all-reduce, loader")
zeros = []
for rank in (0, 1):
    trace = json.load(open(f"{d}/trace/trace_rank{rank}.json"))
    events = trace["traceEvents"]
    zeros.append(trace["otherData"]["zero_unix_s"])
    name = [e for e in events if e["name"] == "process_name"][0]["args"]["name"]
    check(name.startswith(f"rank {rank} on "), f"trace of rank {rank}: named {name!r}")
    first = min(e["ts"] for e in events if e["ph"] == "X") / 1e6
    check(abs(zeros[0] + first - time.time()) < 600,
          f"trace of rank {rank}: on the job's wall clock (first phase {first:+.3f} s after rank 0's start)")
    spans = [e for e in events if e["ph"] == "X"]
    check(all(e["pid"] == rank for e in events), f"trace of rank {rank}: every event on its row")
    for row in (0, 1):
        check({e["name"] for e in spans if e["tid"] == row} == phases,
              f"trace of rank {rank}: every phase present on row {row}")
    check(all(e["dur"] >= 0 for e in spans), f"trace of rank {rank}: durations non-negative")
    check_host_rows(rank, events, spans)
check(zeros[0] == zeros[1], "traces of both ranks share one zero")
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
