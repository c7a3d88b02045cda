#!/usr/bin/env bash
# An output FIFO never makes `train` deaf to SIGTERM: --metrics, --summary or a trace file that
# is a FIFO nobody reads is not waited for (a warning naming it; the run goes on without it), and
# a --metrics FIFO whose reader stopped reading is waited on only until the stop, so SIGTERM still
# ends the run with its checkpoint and exit 75. A FIFO with a reader still receives every line. `timeout` guards every wait, so a hang fails the test instead of stalling it.
source "$(dirname "$0")/checkpoint_common.sh"
fail_log=$dir/err

# settled LOG: waits (60 s at most) until LOG has stopped growing for 2 s: the run logs every step,
# so it is then waiting on something. Looks every 0.5 s (every 2 s took 4 to 6 s).
settled() {
  local before=-1 now same=0
  for _ in $(seq 120); do
    now=$(stat -c %s "$1")
    if [ "$now" -gt 0 ] && [ "$now" -eq "$before" ]; then
      same=$((same + 1))
      [ "$same" -ge 4 ] && return
    else
      same=0
    fi
    before=$now
    sleep 0.5
  done
}

# logged LOG PATTERN: waits (60 s at most) until a line of LOG matches PATTERN.
logged() {
  for _ in $(seq 600); do
    grep -q -- "$2" "$1" && return
    sleep 0.1
  done
}

# stopped NAME DATA WHEN WARNING ARGS...: `train ARGS` on DATA in the background, SIGTERM once
# its log has a line matching WHEN (or once it has settled, for WHEN "settled"); passes when it
# ends within 30 s of the signal with exit 75 and WARNING.
# Note: the runs were given a fixed 2 s before; they reach the FIFO in well under 1 s here.
stopped() {
  local name=$1 data=$2 when=$3 warning=$4 pid rc
  shift 4
  "$bin" train --data "$data" --batch-size 16 "${model[@]}" --steps 100000 \
    --checkpoint-dir "$dir/ck_$name" "$@" >"$dir/$name.log" 2>&1 </dev/null &
  pid=$!
  if [ "$when" = settled ]; then settled "$dir/$name.log"; else logged "$dir/$name.log" "$when"; fi
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
  elif ! grep -q -- "$warning" "$dir/$name.log"; then
    fail "$name: no warning '$warning'" "$dir/$name.log"
  else
    ok "$name: exit 75 after SIGTERM; $(grep -m 1 -o -- "--.*$warning" "$dir/$name.log")"
  fi
}

mkfifo "$dir/metrics.fifo" "$dir/summary.fifo"
mkdir "$dir/traces"
mkfifo "$dir/traces/trace_rank0.json"
# One step per epoch: a run stopped in its first epoch writes no summary or trace (those two are
# written as the run ends: the signal waits for the first epoch's end); --metrics gets a line at
# each epoch's end (the signal waits for its warning).
"$bin" data synth --out "$dir/one_batch.h5" --train 16 --test 16 --height 16 --width 16 >/dev/null
none="is a FIFO that no process reads"
stopped metrics_fifo_without_reader "$dir/one_batch.h5" "$none" "$none" --metrics "$dir/metrics.fifo"
stopped summary_fifo_without_reader "$dir/one_batch.h5" "epoch 1 done" "$none" --summary "$dir/summary.fifo"
stopped trace_fifo_without_reader "$dir/one_batch.h5" "epoch 1 done" "$none" --profile trace \
  --trace-dir "$dir/traces"

# A reader that stopped reading: with one step per epoch, the epochs' lines fill the FIFO (64 KiB,
# some 140 epochs) and the write waits (the log stops growing); SIGTERM then ends that wait.
timeout 120 sleep 120 <"$dir/metrics.fifo" &
stalled=$!
stopped metrics_fifo_reader_stalled "$dir/one_batch.h5" settled \
  "takes no more (its reader stopped reading)" --metrics "$dir/metrics.fifo"
kill "$stalled" 2>/dev/null
wait "$stalled" # its end closed: what it left unread goes with it

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
