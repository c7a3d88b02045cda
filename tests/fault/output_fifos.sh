#!/usr/bin/env bash
# An output FIFO never makes `train` deaf to SIGTERM: --metrics, --summary or a trace file that
# is a FIFO nobody reads is not waited for (a warning naming it; the run goes on without it), so
# SIGTERM still ends the run with its checkpoint and exit 75. A FIFO with a reader still receives
# every line. `timeout` guards every wait, so a hang fails the test instead of stalling it.
source "$(dirname "$0")/checkpoint_common.sh"
fail_log=$dir/err

# stopped NAME ARGS...: `train ARGS` in the background, SIGTERM once it has run 2 s; passes when
# it ends within 30 s of the signal with exit 75 and a warning that the FIFO has no reader.
stopped() {
  local name=$1 pid rc
  shift
  "$bin" train --data "$data" --batch-size 16 "${model[@]}" --steps 100000 \
    --checkpoint-dir "$dir/ck_$name" "$@" >"$dir/$name.log" 2>&1 </dev/null &
  pid=$!
  sleep 2
  kill -TERM "$pid"
  if ! timeout 30 tail --pid="$pid" -f /dev/null; then
    kill -KILL "$pid"
    wait "$pid"
    fail "$name: still running 30 s after SIGTERM" "$dir/$name.log"
    return
  fi
  wait "$pid"
  rc=$?
  if [ "$rc" -ne 75 ]; then
    fail "$name: exit status $rc after SIGTERM, want 75" "$dir/$name.log"
  elif ! grep -q "is a FIFO that no process reads" "$dir/$name.log"; then
    fail "$name: no warning that the FIFO has no reader" "$dir/$name.log"
  else
    ok "$name: exit 75 after SIGTERM; $(grep -m 1 -o -- '--.*no process reads' "$dir/$name.log")"
  fi
}

mkfifo "$dir/metrics.fifo" "$dir/summary.fifo"
mkdir "$dir/traces"
mkfifo "$dir/traces/trace_rank0.json"
stopped metrics_fifo_without_reader --metrics "$dir/metrics.fifo"
stopped summary_fifo_without_reader --summary "$dir/summary.fifo"
stopped trace_fifo_without_reader --profile trace --trace-dir "$dir/traces"

# A FIFO with a reader: every epoch's line arrives, and it is still a FIFO.
timeout 60 cat "$dir/metrics.fifo" >"$dir/from_fifo.jsonl" &
reader=$!
if run_train --steps 64 --checkpoint-dir "$dir/ck_read" --metrics "$dir/metrics.fifo" \
  >"$dir/read.log" 2>&1 && wait "$reader" && [ -p "$dir/metrics.fifo" ] &&
  [ "$(grep -c '"epoch":' "$dir/from_fifo.jsonl")" -eq 2 ]; then
  ok "--metrics FIFO with a reader: both epochs' lines arrive"
else
  kill "$reader" 2>/dev/null
  fail "--metrics FIFO with a reader: $(wc -l <"$dir/from_fifo.jsonl") lines" "$dir/read.log"
fi
finish output_fifos
