#!/usr/bin/env bash
# `ringtrain diagnose` names the bottleneck that was built in: a loader slowed by the test-only
# --debug-loader-delay-ms is data-bound, an all-reduce slowed by --debug-comm-delay-ms under
# mpirun -np 2 is communication-bound; and `train --workers auto` picks a worker count. The
# delays (0.8 s per batch, 0.4 s per all-reduce) dwarf the compute even of the sanitizer build:
# there a batch computed in 42 to 90 ms and a backward pass took 32 to 86 ms (2-core CI machine,
# the other core busy or not), and the verdicts turn only past 730 ms a batch (delay / 1.1) and
# 800 ms a backward pass (twice the all-reduce): 8x or more, enough on a 3x slower machine.
# Each diagnosis waits for about 15 delays (two probes, then 10 full steps).
#   tests/e2e/diagnose.sh MPIEXEC build/ringtrain
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
"$bin" data synth --out "$dir/small.h5" --train 512 --test 64 --height 16 --width 16 >/dev/null
model=(--data "$dir/small.h5" --depth 18 --width 0.125 --batch-size 16 --threads 1)

expect_verdict() {
  local name=$1 verdict=$2
  shift 2
  if ! timeout 180 "$@" >"$dir/log" 2>&1; then
    echo "FAIL $name: exit status $?"; cat "$dir/log"; failures=$((failures + 1)); return
  fi
  if ! grep -q "^verdict: $verdict" "$dir/log"; then
    echo "FAIL $name: want verdict $verdict"; cat "$dir/log"; failures=$((failures + 1)); return
  fi
  echo "ok   $name: $(grep -A1 '^verdict' "$dir/log" | tr -s ' \n' ' ')"
}

expect_verdict slow_loader data-bound "$bin" diagnose "${model[@]}" --workers 1 \
  --debug-loader-delay-ms 800
expect_verdict slow_allreduce communication-bound "$mpiexec" -n 2 --oversubscribe "$bin" \
  diagnose "${model[@]}" --debug-comm-delay-ms 400

if timeout 180 "$bin" train "${model[@]}" --workers auto --steps 2 --no-eval >"$dir/log" 2>&1 &&
  grep -q -- "--workers auto: [0-9]* loader thread" "$dir/log"; then
  echo "ok   workers_auto: $(grep -- '--workers auto: [0-9]* loader' "$dir/log" | cut -c12-)"
else
  echo "FAIL workers_auto"; cat "$dir/log"; failures=$((failures + 1))
fi
echo "diagnose: $failures failed"
[ "$failures" -eq 0 ]
