#!/usr/bin/env bash
# What a run leaves and reports, as a batch user relies on it: a final checkpoint by default
# (none with --no-final-checkpoint) and progress lines while it and the evaluation are written
# and run; after a resume, img/s and phase means cover only the steps
# this process ran, and --metrics keeps the first segment's lines, a segment marker and the new
# ones (a fresh run replaces the file); the progress line is rewritten in place only for one
# process writing to a terminal (also when the environment looks like MPI's), never into a file
# or under mpirun; compute threads follow the affinity mask; `ringtrain diagnose` leaves the job's checkpoints alone and honours --summary
# and --metrics.
#   tests/e2e/run_outputs.sh MPIEXEC build/ringtrain
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
"$bin" data synth --out "$dir/small.h5" --train 256 --test 32 --height 8 --width 8 >/dev/null
base=(--data "$dir/small.h5" --depth 18 --width 0.0625 --batch-size 8 --threads 1 --no-eval
  --log-interval 0)
model=("${base[@]}" --workers 1)

# Final checkpoint: by default, and not with --no-final-checkpoint.
"$bin" train "${model[@]}" --steps 3 --checkpoint-dir "$dir/final" >"$dir/final.log" 2>&1
[ -f "$dir/final/ckpt-step00000003.h5" ] && ok "a final checkpoint by default" ||
  fail "no final checkpoint" "$dir/final.log"
"$bin" train "${model[@]}" --steps 3 --checkpoint-dir "$dir/none" --no-final-checkpoint \
  >"$dir/none.log" 2>&1
[ -z "$(ls "$dir/none")" ] && ok "--no-final-checkpoint writes none" ||
  fail "--no-final-checkpoint wrote $(ls "$dir/none")" "$dir/none.log"

# Long non-training work says how far it is (--log-interval 0: as often as it can): a checkpoint
# of over 128 MiB after each 64 MiB, then its size and times; the evaluation batch by batch.
# Note: a ResNet-18 of width 1.25 (133 MiB) rather than a ResNet-50 (180 MiB): the writing,
# hashing and reading back of the checkpoint take most of this test's time, and under ASan this
# run took 28 s instead of 51 s.
"$bin" train --data "$dir/small.h5" --depth 18 --width 1.25 --batch-size 2 --threads 1 --workers 0 --no-eval \
  --log-interval 0 --steps 1 --checkpoint-dir "$dir/big" >"$dir/big.log" 2>&1
grep -q "ckpt-step00000001.h5: 128 of 1[0-9][0-9] MiB written" "$dir/big.log" &&
  grep -q "ckpt-step00000001.h5 (1[0-9][0-9] MiB, written in [0-9.]* s, read back in" "$dir/big.log" &&
  ok "checkpoint progress: $(grep -o 'ckpt-step00000001.h5 (.*' "$dir/big.log")" ||
  fail "checkpoint progress lines" "$dir/big.log"
"$bin" train --data "$dir/small.h5" --depth 18 --width 0.0625 --batch-size 8 --threads 1 \
  --workers 0 --log-interval 0 --eval-batch-size 8 --steps 1 --no-final-checkpoint >"$dir/ev.log" 2>&1
grep -q "evaluation: batch 3 of 4 (75%)" "$dir/ev.log" && ! grep -q "batch 4 of 4" "$dir/ev.log" &&
  ok "evaluation progress lines" || fail "evaluation progress lines" "$dir/ev.log"

# A run of 10 steps, resumed to 20: the second segment's rate is its own 10 steps over its own
# time, and the metrics file holds both segments.
ck=(--checkpoint-dir "$dir/ck" --metrics "$dir/metrics.jsonl")
"$bin" train "${model[@]}" "${ck[@]}" --steps 10 --summary "$dir/first.json" >"$dir/first.log" 2>&1 ||
  fail "first segment" "$dir/first.log"
"$bin" train "${model[@]}" "${ck[@]}" --steps 20 --resume auto --summary "$dir/second.json" \
  >"$dir/second.log" 2>&1 || fail "resumed segment" "$dir/second.log"
grep -q "summary: 10 steps (resumed at 10, now at 20) in" "$dir/second.log" &&
  grep -q "where the time went (mean over ranks, 10 steps)" "$dir/second.log" &&
  ok "the resumed segment's summary counts its own 10 steps" ||
  fail "resumed summary line" "$dir/second.log"
/usr/bin/python3 - "$dir" <<'PY' || failures=$((failures + 1))
import json, sys
d = sys.argv[1]
s = json.load(open(f"{d}/second.json"))
lines = [json.loads(l) for l in open(f"{d}/metrics.jsonl")]
problems = []
if (s["steps"], s["steps_run"]) != (20, 10):
    problems.append(f"steps {s['steps']} steps_run {s['steps_run']}, want 20 and 10")
own = s["steps_run"] * s["global_batch"] / s["train_time_s"]
if abs(s["images_per_s"] / own - 1) > 1e-6:
    problems.append(f"img/s {s['images_per_s']:.1f}, but its own 10 steps give {own:.1f}")
marker = [l for l in lines if l.get("segment") == "resumed"]
epochs = [l for l in lines if "segment" not in l]
if len(marker) != 1 or marker[0]["step"] != 10 or "ckpt-step00000010.h5" not in marker[0]["checkpoint"]:
    problems.append(f"segment marker: {marker}")
if [l["step"] for l in epochs] != [10, 20] or not marker or lines.index(marker[0]) != 1:
    problems.append(f"metrics lines: {lines}")
print("FAIL resume: " + "; ".join(problems) if problems else
      f"ok   resume: {s['images_per_s']:.0f} img/s over its own 10 steps; metrics: epoch, marker, epoch")
sys.exit(1 if problems else 0)
PY
# tools/plot_metrics.py draws both segments, the resume marked.
root=$(cd "$(dirname "$0")/../.." && pwd)
if ! /usr/bin/python3 -c "import matplotlib" 2>/dev/null; then
  echo "skip tools/plot_metrics.py: no matplotlib for /usr/bin/python3"
elif /usr/bin/python3 "$root/tools/plot_metrics.py" "$dir/metrics.jsonl" -o "$dir/m.png" \
  >"$dir/plot.log" 2>&1 && grep -q "2 epochs, resumed 1 time" "$dir/plot.log" &&
  [ "$(head -c 4 "$dir/m.png" | tail -c 3)" = PNG ]; then
  ok "tools/plot_metrics.py: $(cat "$dir/plot.log")"
else
  fail "tools/plot_metrics.py" "$dir/plot.log"
fi
rm -rf "$dir/ck"
"$bin" train "${model[@]}" "${ck[@]}" --steps 2 >"$dir/fresh.log" 2>&1
[ "$(wc -l <"$dir/metrics.jsonl")" -eq 1 ] && ok "a fresh run replaces --metrics" ||
  fail "a fresh run kept $(wc -l <"$dir/metrics.jsonl") lines in --metrics" "$dir/fresh.log"

# Progress: rewritten in place (a carriage return not ending a line: a terminal's output ends
# lines with \r\n) on a terminal with one process, even with PMIX_RANK set as a singleton
# MPI_Init sets it; plain lines into a file and under mpirun.
in_terminal() { script -qec "$*" /dev/null; }
rewritten() { grep -qP '\r.' "$1"; }
in_terminal env PMIX_RANK=0 "$bin" train "${model[@]}" --steps 3 --no-final-checkpoint \
  >"$dir/tty.log" 2>&1
rewritten "$dir/tty.log" && ok "a terminal gets one line rewritten in place" ||
  fail "no line rewritten in place on a terminal" "$dir/tty.log"
"$bin" train "${model[@]}" --steps 3 --no-final-checkpoint >"$dir/file.log" 2>&1
[ "$(grep -c 'step [0-9]*/3' "$dir/file.log")" -ge 1 ] && ! rewritten "$dir/file.log" &&
  ok "a file gets plain progress lines" || fail "progress into a file" "$dir/file.log"
in_terminal "$mpiexec" -n 2 --oversubscribe "$bin" train "${model[@]}" --steps 3 \
  --no-final-checkpoint >"$dir/mpi.log" 2>&1
grep -q 'step [0-9]*/3' "$dir/mpi.log" && ! rewritten "$dir/mpi.log" &&
  ok "mpirun on a terminal gets plain progress lines" || fail "progress under mpirun" "$dir/mpi.log"

# Threads from the affinity mask, not the machine: taskset to one core gives one compute thread
# and one loader thread; two unbound ranks on two cores share them.
taskset -c 0 "$bin" train "${base[@]}" --steps 1 --no-final-checkpoint >"$dir/taskset.log" 2>&1
grep -q "may use 1 core(s) (its affinity mask holds 1, .*: 1 compute thread(s) (--threads), 1 loader thread(s)$" \
  "$dir/taskset.log" &&
  ok "taskset -c 0: $(grep -o 'may use.*' "$dir/taskset.log")" || fail "taskset -c 0" "$dir/taskset.log"
taskset -c 0,1 "$mpiexec" -n 2 --oversubscribe --bind-to none "$bin" train "${base[@]}" \
  --workers auto --steps 1 --no-final-checkpoint \
  >"$dir/unbound.log" 2>&1
grep -q "may use 1 core(s) (its affinity mask holds 2, shared by 2 rank(s)" "$dir/unbound.log" &&
  ok "2 unbound ranks on 2 cores: $(grep -o 'may use.*' "$dir/unbound.log")" ||
  fail "2 unbound ranks on 2 cores" "$dir/unbound.log"
grep -q "workers auto: trying 1 to 1 loader thread" "$dir/unbound.log" &&
  grep -q "workers auto: 1 loader thread(s)" "$dir/unbound.log" &&
  ok "--workers auto probes within the rank's share" || fail "--workers auto bound" "$dir/unbound.log"

# --device auto without a GPU says so in a user's words; --device cuda keeps CUDA's.
if nvidia-smi -L >/dev/null 2>&1; then
  echo "skip --device auto without a GPU: this machine has one"
else
  "$bin" train "${model[@]}" --steps 1 --no-final-checkpoint >"$dir/auto.log" 2>&1
  "$bin" train "${model[@]}" --steps 1 --device cuda >"$dir/cuda.log" 2>&1
  grep -q "no usable GPU (.*): using the CPU backend" "$dir/auto.log" &&
    ! grep -q "cudaGetDeviceCount" "$dir/auto.log" &&
    grep -q "error: --device cuda, but " "$dir/cuda.log" &&
    ok "no GPU: $(grep -o 'no usable GPU.*' "$dir/auto.log")" || fail "no-GPU messages" "$dir/auto.log"
fi

# diagnose beside a job's checkpoints: they stay as they were; --summary and --metrics written.
"$bin" train "${model[@]}" --steps 4 --checkpoint-dir "$dir/job" >"$dir/job.log" 2>&1
before=$(cd "$dir/job" && ls -l --time-style=full-iso && md5sum ./*)
if "$bin" diagnose "${model[@]}" --checkpoint-dir "$dir/job" --resume auto \
  --summary "$dir/diag.json" --metrics "$dir/diag.jsonl" >"$dir/diag.log" 2>&1; then
  after=$(cd "$dir/job" && ls -l --time-style=full-iso && md5sum ./*)
  [ "$before" = "$after" ] && ok "diagnose leaves the job's checkpoints alone" ||
    fail "diagnose changed the checkpoint folder: $after" "$dir/diag.log"
  /usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d['verdict'] not in ('data-bound','compute-bound','communication-bound','synchronisation-bound'))" \
    "$dir/diag.json" && [ "$(wc -l <"$dir/diag.jsonl")" -eq 1 ] &&
    ok "diagnose writes --summary ($(grep -o '"verdict": "[a-z-]*"' "$dir/diag.json")) and --metrics" ||
    fail "diagnose --summary/--metrics" "$dir/diag.log"
else
  fail "diagnose failed" "$dir/diag.log"
fi
echo "run_outputs: $failures failed"
[ "$failures" -eq 0 ]
