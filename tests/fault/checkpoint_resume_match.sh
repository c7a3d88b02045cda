#!/usr/bin/env bash
# Which checkpoint continues which run. Data by content: the data file copied elsewhere resumes;
# another file (another seed) at the same path is refused, naming the data. The epoch position
# (80 samples after 5 steps of 16): another recipe whose global batch divides it continues
# exactly at sample 80 (the log says so); one that does not (32, or 16 x 3 micro-batches) is
# refused naming the samples, the new global batch and the flags; another --seed is refused.
source "$(dirname "$0")/checkpoint_common.sh"

cp "$dir/data.h5" "$dir/same-path.h5"
data=$dir/same-path.h5
run_train --steps 5 --checkpoint-every 5 --checkpoint-dir "$dir/c" \
  >"$dir/train.log" 2>&1 || fail "training run" "$dir/train.log"
ckpt=$dir/c/ckpt-step00000005.h5

# resume NAME ARGS...: resumes $ckpt with ARGS (after the defaults) into a fresh folder.
resume() { run_train --steps 8 --checkpoint-dir "$dir/r" --resume "$ckpt" "$@" >"$dir/r.log" 2>&1; }

mkdir -p "$dir/moved"
cp "$dir/same-path.h5" "$dir/moved/copy.h5"
if data=$dir/moved/copy.h5 resume && grep -q "resumed from" "$dir/r.log"; then
  ok "the data file copied elsewhere resumes: $(grep -o 'same data content.*' "$dir/r.log" | cut -c1-60)"
else
  fail "copied data file refused" "$dir/r.log"
fi

"$bin" data synth --out "$dir/same-path.h5" --train 512 --test 64 --height 16 --width 16 \
  --seed 7 >/dev/null
resume
rc=$?
if exit_ok "$rc" "$dir/r.log" && grep -q "refusing .*other data (.*same-path.h5.*fingerprint" "$dir/r.log"; then
  ok "another file at the same path is refused: $(grep -o 'trained on other data.*' "$dir/r.log" | cut -c1-70)"
else
  fail "another file at the same path (exit $rc)" "$dir/r.log"
fi
cp "$dir/moved/copy.h5" "$dir/same-path.h5"

# expect_exact NAME ARGS...: resumed at sample 80 of epoch 1.
expect_exact() {
  local name=$1
  shift
  if "$@" && grep -q "resumed from .*epoch 1, 80 samples into it" "$dir/r.log"; then
    ok "$name continues exactly: $(grep -o '80 samples into it.*' "$dir/r.log")"
  else
    fail "$name" "$dir/r.log"
  fi
}
expect_exact "--batch-size 8 --accum-steps 2" resume --batch-size 8 --accum-steps 2
resume_2_ranks() {
  run_train_np 2 --batch-size 8 --steps 8 --checkpoint-dir "$dir/r2" --resume "$ckpt" \
    >"$dir/r.log" 2>&1
}
expect_exact "2 ranks x --batch-size 8" resume_2_ranks

# expect_refused NAME REASON ARGS...
expect_refused() {
  local name=$1 reason=$2
  shift 2
  resume "$@"
  local rc=$?
  if exit_ok "$rc" "$dir/r.log" && grep -q "refusing .*$reason" "$dir/r.log"; then
    ok "$name refused: $(grep -o 'refusing.*' "$dir/r.log" | sed 's/^refusing [^:]*: //' | cut -c1-100)"
  else
    fail "$name (exit $rc)" "$dir/r.log"
  fi
}
expect_refused "--batch-size 32" "consumed 80 samples of epoch 1, which is not a whole number of the new global batch 32 (--batch-size 32 on 1 ranks, --accum-steps 1); resume with" \
  --batch-size 32
expect_refused "--accum-steps 3" "new global batch 48.*--resume-force" --accum-steps 3
expect_refused "--seed 1" "trained with --seed 0 (this run: --seed 1)" --seed 1

if resume --batch-size 32 --resume-force &&
  grep -q "resumed from .*64 samples into it" "$dir/r.log"; then
  ok "--batch-size 32 --resume-force continues from sample 64 (the last whole batch)"
else
  fail "--resume-force with --batch-size 32" "$dir/r.log"
fi
finish checkpoint_resume_match
