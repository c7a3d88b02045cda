#!/usr/bin/env bash
# A rank that stops taking part (it sleeps for ever at a step: --debug-hang-rank) ends the whole
# job after --comm-timeout (6 s: start-up skew on a loaded 2-core machine stays below it), with or without --debug-collectives, instead of hanging it; the
# error names the collective, its size, the waiting rank and the rank that never arrived, with 2
# and 3 ranks.
#   RINGTRAIN=build/ringtrain MPIEXEC=mpiexec bash tests/fault/comm_timeout.sh
source "$(dirname "$0")/common.sh"
"$bin" data synth --out "$dir/small.h5" --train 256 --test 32 --height 16 --width 16 >/dev/null
model=(--data "$dir/small.h5" --depth 18 --width 0.125 --threads 1 --workers 1 --no-eval
  --log-interval 0 --steps 20 --batch-size 4 --checkpoint-dir "$dir/ckpt" --comm-timeout 6)

# expect_timeout NAME RANKS HUNG PATTERN FLAGS...: rank HUNG hangs at step 3; the job must end
# non-zero within 30 s with PATTERN on its output.
expect_timeout() {
  local name=$1 ranks=$2 hung=$3 pattern=$4
  shift 4
  local start=$SECONDS
  timeout -s KILL 60 "$mpiexec" -n "$ranks" --oversubscribe "$bin" train "${model[@]}" \
    --debug-hang-rank "$hung" --debug-hang-step 3 "$@" >"$dir/run.log" 2>&1
  local rc=$? took=$((SECONDS - start))
  if [ "$rc" -eq 0 ] || [ "$took" -ge 30 ]; then
    fail "$name: exit $rc after $took s (want non-zero within 30 s)" "$dir/run.log"
  elif ! grep -Eq "$pattern" "$dir/run.log"; then
    fail "$name: no '$pattern' in the output" "$dir/run.log"
  else
    echo "ok   $name: ended in $took s: $(grep -Eo "$pattern" "$dir/run.log" | head -1)"
  fi
}

named="did not complete within 6 s on rank 0: rank\(s\) 1 never arrived \(stuck before collective #[0-9]+\)"
expect_timeout "2 ranks, --debug-collectives" 2 1 "check before all_reduce of [0-9]+ elements $named" \
  --debug-collectives
expect_timeout "2 ranks" 2 1 "all-reduce of [0-9]+ f32 $named"
expect_timeout "3 ranks, rank 2 hung" 3 2 \
  "all-reduce of [0-9]+ f32 did not complete within 6 s on rank [01]: rank\(s\) 2 never arrived \(stuck before collective #[0-9]+\)"

finish comm_timeout
