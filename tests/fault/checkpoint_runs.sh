#!/usr/bin/env bash
# A run never costs another run, or itself, a loadable checkpoint: a diverging run writes no
# checkpoint that cannot be resumed (and so never rotates a loadable one away); a second run in
# the same --checkpoint-dir is refused at start-up, before it could replace the first run's
# checkpoints of the same step, whether the first is still running or not; and --keep leaves
# another optimizer's checkpoints alone.
source "$(dirname "$0")/checkpoint_common.sh"

listing() { (cd "$1" && ls | tr '\n' ' '); }

# A diverging run: its batch-norm variances turn infinite several steps before the loss does.
d=$dir/diverging
rc=0
run_train --steps 40 --checkpoint-every 1 --lr 1000 --checkpoint-dir "$d" >"$dir/diverge.log" 2>&1 || rc=$?
unloadable=""
for f in "$d"/ckpt-step*.h5; do # each one resumes (training no further step)
  step=$(basename "$f" | sed 's/ckpt-step0*\([0-9]*\).h5/\1/')
  run_train --steps "$step" --resume "$f" --checkpoint-dir "$dir/probe" >"$dir/probe.log" 2>&1 ||
    unloadable+=" $(basename "$f")"
done
if [ "$rc" -eq 65 ] && [ -z "$unloadable" ] && [ -n "$(listing "$d")" ] &&
  grep -q "error: train: diverged: " "$dir/diverge.log"; then
  ok "a diverging run exits 65 and leaves only loadable checkpoints: $(listing "$d")"
else
  fail "diverging run (exit $rc) left unloadable checkpoints:${unloadable:- none} ($(listing "$d"))" \
    "$dir/diverge.log"
fi
newest=$(listing "$d" | tr ' ' '\n' | grep '^ckpt' | tail -1 | sed 's/ckpt-step0*\([0-9]*\).h5/\1/')
if run_train --steps "${newest:-0}" --lr 1000 --checkpoint-dir "$d" --resume auto \
  >"$dir/diverge-resume.log" 2>&1 && grep -q "resumed from .*step0*${newest}.h5" "$dir/diverge-resume.log"; then
  ok "--resume auto continues from its newest checkpoint, step $newest"
else
  fail "--resume auto after the diverged run" "$dir/diverge-resume.log"
fi

# Two runs in one folder, one after the other: the second (another seed) is refused.
s=$dir/shared
run_train --seed 5 --steps 4 --checkpoint-every 2 --checkpoint-dir "$s" >"$dir/seed5.log" 2>&1 ||
  fail "the seed-5 run" "$dir/seed5.log"
before=$(md5sum "$s"/ckpt-step*.h5)
rc=0
run_train --seed 6 --steps 4 --checkpoint-every 2 --checkpoint-dir "$s" >"$dir/seed6.log" 2>&1 || rc=$?
if [ "$rc" -eq 2 ] && [ "$(md5sum "$s"/ckpt-step*.h5)" = "$before" ] &&
  grep -q "error: --checkpoint-dir $s holds .*ckpt-step0000000[24].h5, another run's checkpoint (it was trained with --seed 5" "$dir/seed6.log"; then
  ok "another seed's run is refused (exit 2), the first run's files unchanged"
else
  fail "a second run in the same folder (exit $rc)" "$dir/seed6.log"
fi
if run_train --seed 5 --steps 6 --checkpoint-every 2 --checkpoint-dir "$s" --resume auto \
  >"$dir/seed5-resume.log" 2>&1 && grep -q "resumed from .*ckpt-step00000004.h5" "$dir/seed5-resume.log"; then
  ok "the first run still resumes"
else
  fail "the first run's resume" "$dir/seed5-resume.log"
fi

# Two runs at once: the folder is claimed by the first until it ends.
c=$dir/concurrent
run_train --steps 2 --checkpoint-dir "$c" --debug-startup-delay-ms 5000 >"$dir/first.log" 2>&1 &
first=$!
for _ in $(seq 50); do [ -s "$c/.ringtrain-run.lock" ] && break; sleep 0.1; done
rc=0
run_train --steps 2 --checkpoint-dir "$c" --seed 9 >"$dir/second.log" 2>&1 || rc=$?
if [ "$rc" -eq 2 ] && grep -q "error: --checkpoint-dir $c is in use by another run (pid [0-9]* on " "$dir/second.log"; then
  ok "a second run at the same time is refused, naming the first: $(grep -o 'in use by another run (pid [0-9]* on [^,]*' "$dir/second.log")"
else
  fail "a second run at the same time (exit $rc)" "$dir/second.log"
fi
wait "$first" || fail "the first run, claimed folder" "$dir/first.log"
if run_train --steps 3 --checkpoint-dir "$c" --resume auto >"$dir/after.log" 2>&1; then
  ok "once the first run has ended, the folder is free"
else
  fail "the folder after the first run ended" "$dir/after.log"
fi

# --keep: an AdamW run's rotation never counts (so never removes) an SGD run's checkpoints.
k=$dir/keep
run_train --steps 2 --checkpoint-every 1 --checkpoint-dir "$k" >"$dir/sgd.log" 2>&1 ||
  fail "the SGD run" "$dir/sgd.log"
run_train --steps 4 --optimizer adamw --checkpoint-dir "$dir/adamw" >"$dir/adamw.log" 2>&1 ||
  fail "the AdamW run" "$dir/adamw.log"
cp "$dir/adamw/ckpt-step00000004.h5" "$k/"
run_train --steps 8 --optimizer adamw --checkpoint-every 2 --keep 1 --checkpoint-dir "$k" \
  --resume auto >"$dir/adamw-keep.log" 2>&1
rc=$?
expected="ckpt-step00000001.h5 ckpt-step00000002.h5 ckpt-step00000008.h5 "
if [ "$rc" -eq 0 ] && [ "$(listing "$k")" = "$expected" ]; then
  ok "--keep 1 of an AdamW run leaves the SGD run's checkpoints: $(listing "$k")"
else
  fail "--keep with another optimizer's checkpoints (exit $rc): $(listing "$k")" "$dir/adamw-keep.log"
fi
finish checkpoint_runs
