#!/usr/bin/env bash
# A diverged run (a NaN or infinite train or test loss) is an error with its own exit status, 65,
# and a message naming where it happened and the likely cause; it is never reported as a test
# split "not evaluated" with exit 0, on one rank or under mpirun. --no-eval still reports "not
# evaluated".
source "$(dirname "$0")/common.sh"
fail_log=$dir/err

# run NAME WANT_STATUS ERROR_PATTERN ARGS...: the status and one matching error line.
run() {
  local name=$1 want=$2 pattern=$3
  shift 3
  local rc=0
  timeout 60 "$bin" train --data "$dir/small.h5" --depth 18 --width 0.125 --batch-size 16 \
    --threads 1 --workers 1 "$@" >"$dir/out" 2>"$dir/err" || rc=$?
  if [ "$rc" -ne "$want" ]; then
    fail "$name: exit status $rc (want $want)"
  elif [ -n "$pattern" ] && [ "$(grep -cE "$pattern" "$dir/err")" -ne 1 ]; then
    fail "$name: no one line matching '$pattern'"
  else
    echo "ok   $name: exit status $rc${pattern:+, $(grep -E "$pattern" "$dir/err")}"
  fi
}

timeout 20 "$bin" data synth --out "$dir/small.h5" --train 64 --test 32 --height 16 --width 16 \
  >"$dir/out" 2>"$dir/err" || fail "data synth"

run "NaN test loss" 65 \
  "^ringtrain: error: train: diverged: the test loss after epoch 1 is -?nan; likely --lr 0.1 is too high" \
  --epochs 1 --debug-eval-nan
run "--lr 1e6" 65 "^ringtrain: error: train: diverged: the (test )?loss (at step|after epoch) [0-9]+ is" \
  --steps 4 --lr 1e6
run "NaN train loss" 65 "^ringtrain: error: train: diverged: the loss at step [0-9]+ is -?nan; likely --lr" \
  --epochs 5 --no-eval --lr 1e6 --schedule constant
run "--no-eval" 0 "" --epochs 1 --no-eval
for text in "test not evaluated" "final test accuracy not evaluated"; do
  cat "$dir/out" "$dir/err" | grep -qF "$text" || fail "--no-eval: no '$text'"
done

# Under mpirun the job ends with the same status.
if [ -n "${MPIEXEC:-}" ]; then
  rc=0
  timeout 60 "$MPIEXEC" -n 2 "$bin" train --data "$dir/small.h5" --depth 18 --width 0.125 \
    --batch-size 8 --threads 1 --workers 1 --epochs 1 --debug-eval-nan >"$dir/err" 2>&1 || rc=$?
  if [ "$rc" -eq 65 ] && grep -q "error: train: diverged: the test loss after epoch 1" "$dir/err"; then
    echo "ok   NaN test loss on 2 ranks: mpirun exits 65"
  else
    fail "NaN test loss on 2 ranks: exit status $rc (want 65)"
  fi
fi

finish diverge
