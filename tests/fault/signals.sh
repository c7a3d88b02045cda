#!/usr/bin/env bash
# Stop signals at every phase of a run, with 1 and 2 ranks: two SIGUSR1 in a row, then more
# until the ranks have exited (landing while they stop and shut down), end the run once, with
# exit 75 and a checkpoint, never by the signal; SIGUSR1 during start-up (before the first step) ends it at the first step boundary with
# a step-0 checkpoint that --resume auto takes. SIGTERM to mpirun: Open MPI's mpirun aborts the
# job (SIGTERM to the ranks, SIGKILL after odls_base_sigkill_timeout, exit 1); the ranks still
# write their checkpoint within that time, and jobs/job_common.sh, which turns a SIGTERM for the
# job into SIGUSR1 for mpirun, exits 75.
#   RINGTRAIN=build/ringtrain MPIEXEC=mpiexec bash tests/fault/signals.sh
source "$(dirname "$0")/common.sh"
repo=$(cd "$(dirname "$0")/../.." && pwd)
"$bin" data synth --out "$dir/small.h5" --train 256 --test 32 --height 16 --width 16 >/dev/null
job_model=(--data "$dir/small.h5" --depth 18 --width 0.125 --workers 1 --no-eval --log-interval 0)
model=("${job_model[@]}" --threads 1) # the job scripts add --threads 1 on a CPU-only node

# launch RANKS ARGS...: `ringtrain train` on 1 rank (plain) or more (under mpirun), in place of
# this shell function's process, so that a signal sent to $! reaches it.
launch() {
  local ranks=$1
  shift
  if [ "$ranks" -eq 1 ]; then
    exec "$bin" train "$@"
  else
    exec "$mpiexec" -n "$ranks" --oversubscribe "$bin" train "$@"
  fi
}

# wait_for LOG PATTERN: up to 60 s for the pattern to appear (every run has a log of its own:
# an earlier run's lines must not match).
wait_for() {
  for _ in $(seq 600); do grep -q "$2" "$1" && return 0; sleep 0.1; done
  return 1
}

# reap PID [SIGNAL [ranks]]: its exit status, waiting at most 60 s (then SIGKILL: status
# 137); with SIGNAL, sends it every 50 ms until PID has gone: to PID, or with "ranks" to its
# children (the ranks under mpirun; mpirun itself dies of a signal in its own teardown).
reap() {
  local pid=$1 signal=${2:-} to=${3:-}
  for _ in $(seq 1200); do
    kill -0 "$pid" 2>/dev/null || break
    if [ -n "$signal" ]; then
      # shellcheck disable=SC2046
      kill "-$signal" $([ "$to" = ranks ] && pgrep -P "$pid" || echo "$pid") 2>/dev/null
    fi
    sleep 0.05
  done
  kill -KILL "$pid" 2>/dev/null
  wait "$pid"
}

newest() { ls "$1" 2>/dev/null | grep '^ckpt-step.*\.h5$' | tail -n 1; }

for ranks in 1 2; do
  batch=$((16 / ranks))
  c=$dir/burst$ranks
  (launch "$ranks" "${model[@]}" --steps 100 --batch-size "$batch" --checkpoint-dir "$c" \
    --debug-loader-delay-ms 40) >"$dir/burst$ranks.log" 2>&1 &
  pid=$!
  wait_for "$dir/burst$ranks.log" "step 3/100"
  kill -USR1 "$pid"
  kill -USR1 "$pid"
  reap "$pid" USR1 "$([ "$ranks" -gt 1 ] && echo ranks)"
  rc=$?
  stops=$(grep -c "received.*stopped after step" "$dir/burst$ranks.log")
  if [ "$rc" -eq 75 ] && [ -n "$(newest "$c")" ] && [ "$stops" -eq 1 ]; then
    echo "ok   $ranks rank(s): two SIGUSR1, then one every 50 ms until exit: exit 75, $(newest "$c"), one stop"
  else
    fail "$ranks rank(s): SIGUSR1 burst: exit $rc (want 75), checkpoint '$(newest "$c")', $stops stop line(s)" "$dir/burst$ranks.log"
  fi

  c=$dir/startup$ranks
  (launch "$ranks" "${model[@]}" --steps 4 --batch-size "$batch" --checkpoint-dir "$c" \
    --debug-startup-delay-ms 1500) >"$dir/startup$ranks.log" 2>&1 &
  pid=$!
  wait_for "$dir/startup$ranks.log" "start-up delayed"
  kill -USR1 "$pid"
  reap "$pid"
  rc=$?
  if [ "$rc" -ne 75 ] || [ "$(newest "$c")" != ckpt-step00000000.h5 ]; then
    fail "$ranks rank(s): SIGUSR1 during start-up: exit $rc (want 75), checkpoint '$(newest "$c")' (want step 0)" "$dir/startup$ranks.log"
  elif ! (launch "$ranks" "${model[@]}" --steps 4 --batch-size "$batch" --checkpoint-dir "$c" \
    --resume auto --checkpoint-every 4) >"$dir/resumed$ranks.log" 2>&1 ||
    ! grep -q "resumed from .*ckpt-step00000000.h5" "$dir/resumed$ranks.log"; then
    fail "$ranks rank(s): --resume auto after a stop during start-up" "$dir/resumed$ranks.log"
  else
    echo "ok   $ranks rank(s): SIGUSR1 during start-up: exit 75, step-0 checkpoint, resumed from it"
  fi
done

# One rank: SIGTERM is a stop like SIGUSR1.
c=$dir/term1
(launch 1 "${model[@]}" --steps 100 --batch-size 16 --checkpoint-dir "$c" \
  --debug-loader-delay-ms 40) >"$dir/term.log" 2>&1 &
pid=$!
wait_for "$dir/term.log" "step 3/100"
kill -TERM "$pid"
reap "$pid"
rc=$?
[ "$rc" -eq 75 ] && [ -n "$(newest "$c")" ] &&
  echo "ok   1 rank: SIGTERM: exit 75, $(newest "$c")" ||
  fail "1 rank: SIGTERM: exit $rc (want 75), checkpoint '$(newest "$c")'" "$dir/term.log"

# SIGTERM straight to mpirun: Open MPI aborts the job (SIGCONT to the ranks, SIGTERM after
# odls_base_sigkill_timeout seconds, SIGKILL after as many again) and exits 1; the ranks take the
# SIGTERM as a stop and write the checkpoint before the SIGKILL.
c=$dir/term2
(OMPI_MCA_odls_base_sigkill_timeout=3 launch 2 "${model[@]}" --steps 1000 --batch-size 8 \
  --checkpoint-dir "$c" --debug-loader-delay-ms 40) >"$dir/mpirun.log" 2>&1 &
pid=$!
wait_for "$dir/mpirun.log" "step 3/1000"
kill -TERM "$pid"
reap "$pid"
rc=$?
stopped_at=$(newest "$c")
if [ -n "$stopped_at" ] && [ "$stopped_at" != ckpt-step00001000.h5 ]; then
  echo "ok   2 ranks: SIGTERM to mpirun: mpirun exits $rc (Open MPI's abort), ranks wrote $stopped_at"
else
  fail "2 ranks: SIGTERM to mpirun: exit $rc, no mid-run checkpoint '$stopped_at'" "$dir/mpirun.log"
fi

# SIGTERM to the job script (jobs/mpirun_1node.sh): passed on to mpirun as SIGUSR1, exit 75.
# Note: once a rank exits 75, Open MPI's mpirun aborts the rest of the job and waits twice
# odls_base_sigkill_timeout before it exits, even with every rank gone: the script's default of
# 10 s made this case take 20 s. The 3 s of the case above leaves the ranks as long to finish
# writing the checkpoint; the script keeps a value set in the environment.
c=$dir/job
(OMPI_MCA_odls_base_sigkill_timeout=3 RINGTRAIN_BIN=$bin RINGTRAIN_RUN_DIR=$dir/run RINGTRAIN_CKPT_DIR=$c NP=2 \
  RINGTRAIN_ARGS="${job_model[*]} --steps 100 --batch-size 8 --debug-loader-delay-ms 40" \
  exec bash "$repo/jobs/mpirun_1node.sh") >"$dir/job.log" 2>&1 &
pid=$!
wait_for "$dir/job.log" "step 3/100"
kill -TERM "$pid"
reap "$pid"
rc=$?
[ "$rc" -eq 75 ] && [ -n "$(newest "$c")" ] &&
  echo "ok   2 ranks: SIGTERM to jobs/mpirun_1node.sh: exit 75, $(newest "$c")" ||
  fail "2 ranks: SIGTERM to jobs/mpirun_1node.sh: exit $rc (want 75), checkpoint '$(newest "$c")'" "$dir/job.log"

finish signals
