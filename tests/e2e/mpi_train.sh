#!/usr/bin/env bash
# `mpirun -np 2 ringtrain train` as a user runs it: one log and one metrics file (rank 0's),
# a rank that fails mid-step ends the whole job quickly with its rank named, and a global batch
# that does not divide over the ranks is refused.
#   tests/e2e/mpi_train.sh MPIEXEC build/ringtrain
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
fail() { echo "FAIL $1"; cat "$dir/log"; failures=$((failures + 1)); }
run() { timeout 120 "$mpiexec" -n "$1" --oversubscribe "${@:2}" >"$dir/log" 2>&1; }

"$bin" data synth --out "$dir/small.h5" --train 512 --test 250 --height 16 --width 16 >/dev/null

if run 2 "$bin" train --data "$dir/small.h5" --depth 18 --width 0.125 --global-batch-size 32 \
  --epochs 2 --threads 1 --workers 1 --metrics "$dir/metrics.jsonl"; then
  [ "$(grep -c "summary:" "$dir/log")" -eq 1 ] || fail "two ranks: want exactly one summary line (rank 0 logs)"
  grep -q "batch 32 (16 per rank x 2 ranks x 1 micro-batches)" "$dir/log" || fail "two ranks: global batch not split"
  [ "$(wc -l <"$dir/metrics.jsonl")" -eq 2 ] || fail "two ranks: want 2 metrics lines"
  echo "ok   two ranks train"
else
  fail "two ranks: exit status $?"
fi

start=$(date +%s)
if run 2 "$bin" train --data "$dir/small.h5" --depth 18 --width 0.125 --batch-size 16 --epochs 2 \
  --threads 1 --debug-fail-rank 1 --debug-fail-step 3; then
  fail "injected failure: exit status 0"
else
  rc=$?
  [ "$rc" -ne 124 ] || fail "injected failure: the job hung until the timeout"
  grep -q "rank 1 of 2: error: train: failure injected" "$dir/log" || fail "injected failure: rank not named"
  echo "ok   failing rank ends the job in $(($(date +%s) - start)) s with status $rc"
fi

if run 3 "$bin" train --data "$dir/small.h5" --global-batch-size 32 --steps 1; then
  fail "indivisible global batch: exit status 0"
else
  grep -q "global-batch-size 32 does not divide evenly over 3 ranks x 1 micro-batches" "$dir/log" || fail "indivisible global batch: no clear error"
  echo "ok   indivisible global batch refused"
fi

if run 2 "$bin" train --data "$dir/small.h5" --depth 18 --width 0.125 --global-batch-size 32 \
  --accum-steps 2 --sync-bn --steps 4 --threads 1 --workers 1 --augment-on device; then
  grep -q "batch 32 (8 per rank x 2 ranks x 2 micro-batches)" "$dir/log" || fail "accumulation: batch not split"
  grep -q "summary: 4 steps" "$dir/log" || fail "accumulation: no summary"
  echo "ok   two ranks with gradient accumulation, SyncBN and augmentation on the device"
else
  fail "accumulation: exit status $?"
fi

if run 2 "$bin" train --data "$dir/small.h5" --mode dp --steps 1; then
  fail "dp under mpirun: exit status 0"
else
  grep -q "\-\-mode dp drives every device from one process" "$dir/log" || fail "dp under mpirun: no clear error"
  echo "ok   --mode dp under mpirun refused"
fi

echo "mpi_train: $failures failed"
[ "$failures" -eq 0 ]
