#!/usr/bin/env bash
# Under mpirun, a usage or configuration error (the same on every rank) is printed once, not once
# per rank, and the job exits with the usage status 2: before MPI starts (a flag out of range)
# and after (a global batch that does not divide over the ranks, --mode dp under mpirun).
source "$(dirname "$0")/common.sh"
fail_log=$dir/log

# once NAME RANKS EXPECTED_TEXT ARGS...: exit 2 and exactly one error line, with the text.
once() {
  local name=$1 ranks=$2 expected=$3
  shift 3
  local rc=0
  timeout 60 "$mpiexec" -n "$ranks" "$bin" "$@" >"$dir/log" 2>&1 || rc=$?
  local lines
  lines=$(grep -c "ringtrain: .*error:" "$dir/log")
  if [ "$rc" -ne 2 ]; then
    fail "$name: exit status $rc (want 2)"
  elif [ "$lines" -ne 1 ]; then
    fail "$name: $lines error lines (want 1)"
  elif ! grep -qF -- "$expected" "$dir/log"; then
    fail "$name: no '$expected'"
  else
    echo "ok   $name on $ranks ranks: once, exit 2: $(grep "ringtrain: .*error:" "$dir/log")"
  fi
}

timeout 20 "$bin" data synth --out "$dir/small.h5" --train 64 --test 32 --height 16 --width 16 \
  >"$dir/log" 2>&1 || fail "data synth"
once "--batch-size 0" 2 "--batch-size: must be >= 1, got 0" train --batch-size 0
once "--steps 0" 3 "--steps: must be >= 1" train --data "$dir/small.h5" --steps 0
once "indivisible --global-batch-size" 3 "does not divide evenly over 3 ranks" \
  train --data "$dir/small.h5" --global-batch-size 32 --steps 1 --threads 1
once "--mode dp" 2 "--mode dp drives every device from one process" \
  train --data "$dir/small.h5" --mode dp --steps 1 --threads 1

finish mpi_config_errors
