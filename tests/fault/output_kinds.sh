#!/usr/bin/env bash
# What an output's path names decides how it is written, and nothing that is not a file of the
# user's is ever replaced: a regular file is replaced atomically through a temporary file made
# exclusively (a planted TARGET.tmp symbolic link is never followed, a user's own TARGET.tmp is
# never touched); a FIFO or a character device (/dev/null, /dev/full, /dev/stdout) is written
# through and stays what it was; a symbolic link to a file is refused, naming the file (by every
# output: eval --out, --metrics, --summary, trace files, export, data synth); and a
# signal that ends the command during a write leaves no temporary file behind.
source "$(dirname "$0")/checkpoint_common.sh"
bin=$(realpath "$bin")
fail_log=$dir/err
run_train --steps 2 --checkpoint-dir "$dir/ck" >"$dir/train.log" 2>&1 || fail "training" "$dir/train.log"
ck=$dir/ck/ckpt-step00000002.h5
eval_out() { timeout -k 5 60 "$bin" eval --checkpoint "$ck" --data "$data" --device cpu --out "$@"; }

# A FIFO with a reader gets the report; it is still a FIFO afterwards.
mkfifo "$dir/report.fifo"
timeout 60 cat "$dir/report.fifo" >"$dir/from_fifo.json" &
reader=$!
if eval_out "$dir/report.fifo" >"$dir/fifo.log" 2>&1 && wait "$reader" && [ -p "$dir/report.fifo" ] &&
  grep -q '"top1_accuracy"' "$dir/from_fifo.json"; then
  ok "eval --out FIFO: written through, still a FIFO"
else
  kill "$reader" 2>/dev/null
  fail "eval --out FIFO ($(stat -c %F "$dir/report.fifo"))" "$dir/fifo.log"
fi

# Character devices of our own (mknod needs root): /dev/null's and /dev/full's numbers.
if mknod "$dir/null" c 1 3 2>/dev/null && mknod "$dir/full" c 1 7; then
  if eval_out "$dir/null" >"$dir/null.log" 2>&1 && [ -c "$dir/null" ]; then
    ok "eval --out on a null device: done, still a character device"
  else
    fail "eval --out on a null device ($(stat -c %F "$dir/null"))" "$dir/null.log"
  fi
  if ! eval_out "$dir/full" >"$dir/full.log" 2>&1 && [ -c "$dir/full" ] &&
    grep -q "No space left on device" "$dir/full.log"; then
    ok "eval --out on a full device: the disk-full reason, still a character device"
  else
    fail "eval --out on a full device ($(stat -c %F "$dir/full"))" "$dir/full.log"
  fi
  if "$bin" data synth --out "$dir/null" --train 64 --test 8 --height 8 --width 8 >"$dir/synth_null.log" 2>&1 &&
    [ -c "$dir/null" ]; then
    ok "data synth onto a null device: written through"
  else
    fail "data synth onto a null device ($(stat -c %F "$dir/null"))" "$dir/synth_null.log"
  fi
else
  skip "character devices" "mknod needs root"
fi

# export, as every other output, creates the folders it names.
if "$bin" export --checkpoint "$ck" "$dir/new/folder/w.safetensors" >"$dir/export.log" 2>&1 &&
  [ -s "$dir/new/folder/w.safetensors" ]; then
  ok "export creates the folder of its output"
else
  fail "export into a new folder" "$dir/export.log"
fi

# A symbolic link to a file is refused, naming the file; link and file stay as they were.
echo "mine" >"$dir/real.json"
ln -s "$dir/real.json" "$dir/link.json"
if ! eval_out "$dir/link.json" >"$dir/link.log" 2>&1 && [ -L "$dir/link.json" ] &&
  [ "$(cat "$dir/real.json")" = mine ] && grep -q "link.json is a symbolic link to .*real.json" "$dir/link.log"; then
  ok "eval --out LINK: refused, naming the file it points to"
else
  fail "eval --out LINK" "$dir/link.log"
fi

# Every other output refuses a link to a file alike (one check, is_output_stream): --metrics
# (opened once, appended to) as much as the outputs written whole.
mkdir "$dir/traces"
ln -s "$dir/real.json" "$dir/traces/trace_rank0.json"
for out in metrics summary weights synth; do ln -s "$dir/real.json" "$dir/$out.link"; done
for run in "train --metrics $dir/metrics.link" "train --summary $dir/summary.link" \
  "train --profile trace --trace-dir $dir/traces" "export --checkpoint $ck $dir/weights.link" \
  "data synth --out $dir/synth.link --train 64 --test 8 --height 8 --width 8"; do
  [[ $run == train* ]] && run="$run --data $data --batch-size 16 ${model[*]} --steps 1 --checkpoint-dir $dir/ck_link"
  echo "mine" >"$dir/real.json"
  # shellcheck disable=SC2086 # the command's words
  if ! timeout -k 5 60 "$bin" $run >"$dir/links.log" 2>&1 && [ "$(cat "$dir/real.json")" = mine ] &&
    grep -q "is a symbolic link to .*real.json" "$dir/links.log"; then
    ok "${run%% --data*}: a link to a file refused, the file kept"
  else
    fail "${run%% --data*}: a link to a file (real.json holds '$(head -c 40 "$dir/real.json")')" "$dir/links.log"
  fi
done

# A planted TARGET.tmp link is never followed; a user's own TARGET.tmp is never touched.
echo "precious" >"$dir/precious.txt"
for out in report.json weights.safetensors synth.h5 summary.json; do
  ln -s "$dir/precious.txt" "$dir/$out.tmp"
done
echo "my notes" >"$dir/own.h5.tmp"
if ! { eval_out "$dir/report.json" &&
  "$bin" export --checkpoint "$ck" "$dir/weights.safetensors" &&
  "$bin" data synth --out "$dir/synth.h5" --train 64 --test 8 --height 8 --width 8 &&
  "$bin" data synth --out "$dir/own.h5" --train 64 --test 8 --height 8 --width 8 &&
  run_train --steps 1 --summary "$dir/summary.json" --checkpoint-dir "$dir/ck2"; } >"$dir/planted.log" 2>&1; then
  fail "the writes beside planted links" "$dir/planted.log"
fi
if [ "$(cat "$dir/precious.txt")" = precious ] && [ "$(cat "$dir/own.h5.tmp")" = "my notes" ] &&
  [ -L "$dir/synth.h5.tmp" ] && [ -s "$dir/synth.h5" ] && [ -s "$dir/weights.safetensors" ]; then
  ok "planted TARGET.tmp links not followed, the user's own TARGET.tmp kept"
else
  fail "planted links: precious.txt holds '$(head -c 40 "$dir/precious.txt")'" "$dir/planted.log"
fi

# SIGTERM (as Ctrl-C's SIGINT, which a background job ignores) while a large output is being
# written: no temporary file, nor the output, is left.
"$bin" data synth --out "$dir/big.h5" --train 150000 --test 8 --height 32 --width 32 >"$dir/big.log" 2>&1 &
pid=$!
until compgen -G "$dir/big.h5.tmp*" >/dev/null || ! kill -0 "$pid" 2>/dev/null; do :; done
kill -TERM "$pid" 2>/dev/null
wait "$pid"
rc=$?
if [ "$rc" -ne 143 ]; then
  fail "SIGTERM during the write: exit $rc, not 143 (the write ended before the signal?)" "$dir/big.log"
elif compgen -G "$dir/big.h5*" >/dev/null; then
  fail "SIGTERM during the write left $(echo "$dir"/big.h5*)"
else
  ok "SIGTERM during the write: exit 143, no temporary file left"
fi

# /dev/stdout, last: its old treatment replaced the system's link with a file.
if run_train --steps 1 --summary /dev/stdout --checkpoint-dir "$dir/ck3" >"$dir/stdout.json" 2>"$dir/stdout.log" &&
  [ -L /dev/stdout ] && grep -q '"steps"' "$dir/stdout.json"; then
  ok "train --summary /dev/stdout: the summary on standard output, /dev/stdout still a link"
else
  fail "train --summary /dev/stdout" "$dir/stdout.log"
fi
finish output_kinds
