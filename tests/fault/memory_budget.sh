#!/usr/bin/env bash
# --memory-budget-mb below what the streaming loader needs (one window holding a batch for every
# rank) is refused at start-up with the minimum; it used to loop forever when the budget held no
# image at all. A budget just above the minimum streams and trains.
source "$(dirname "$0")/common.sh"
fail_log=$dir/err

timeout 20 "$bin" data synth --out "$dir/small.h5" --train 64 --test 32 --height 16 --width 16 \
  >"$dir/out" 2>"$dir/err" || fail "data synth"
train=(train --data "$dir/small.h5" --depth 18 --width 0.125 --batch-size 16 --threads 1
  --workers 1 --epochs 1 --no-eval)

# 16 images of 768 bytes: 12288 bytes, 0.013 MB rounded up.
for budget in 0.0001 0.001 0.01; do
  rc=0
  timeout 20 "$bin" "${train[@]}" --memory-budget-mb "$budget" >"$dir/out" 2>"$dir/err" || rc=$?
  if [ "$rc" -eq 124 ]; then
    fail "--memory-budget-mb $budget: still running after 20 s"
  elif [ "$rc" -ne 2 ]; then
    fail "--memory-budget-mb $budget: exit status $rc (want 2)"
  elif ! grep -q "^ringtrain: error: --memory-budget-mb $budget holds [0-9]* train images of 768 bytes: at least 0.013 MB needed" "$dir/err"; then
    fail "--memory-budget-mb $budget: the minimum is not named"
  else
    echo "ok   --memory-budget-mb $budget refused: $(head -n 1 "$dir/err")"
  fi
done

rc=0
timeout 40 "$bin" "${train[@]}" --memory-budget-mb 0.013 >"$dir/out" 2>"$dir/err" || rc=$?
if [ "$rc" -eq 0 ] && grep -q "streaming windows of 16 images" "$dir/out"; then
  echo "ok   --memory-budget-mb 0.013 streams windows of 16 images"
else
  fail "--memory-budget-mb 0.013: exit status $rc, or not streamed"
fi

finish memory_budget
