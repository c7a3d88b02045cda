#!/usr/bin/env bash
# --keep never costs a good checkpoint: a corrupt newer one is moved aside (not kept in its
# place), another run's checkpoint in the same folder is left alone and never counted, a FIFO
# under a checkpoint's name is neither opened nor removed, and the checkpoint just written
# always stays.
source "$(dirname "$0")/checkpoint_common.sh"

ckpts=$dir/ckpts
listing_of() { (cd "$1" && ls | tr '\n' ' '); }
listing() { listing_of "$ckpts"; }
run_train --steps 15 --checkpoint-every 5 --keep 5 --checkpoint-dir "$ckpts" >"$dir/first.log" 2>&1 ||
  fail "first run" "$dir/first.log"
flip_bit "$ckpts/ckpt-step00000015.h5" /params/layer1.0.1.conv.weight

# Resumes from 10 (15 is corrupt), writes 12 and 14 with --keep 1.
run_train --steps 14 --checkpoint-every 2 --keep 1 --checkpoint-dir "$ckpts" --resume auto \
  >"$dir/keep1.log" 2>&1 || fail "resume with --keep 1" "$dir/keep1.log"
if [ "$(listing)" = "ckpt-step00000014.h5 ckpt-step00000015.h5.corrupt " ] &&
  grep -q "moved the corrupt .*ckpt-step00000015.h5 aside" "$dir/keep1.log"; then
  ok "--keep 1 keeps the good 14 and moves the corrupt 15 aside: $(listing)"
else
  fail "--keep 1 with a corrupt newer checkpoint left: $(listing)" "$dir/keep1.log"
fi
if run_train --steps 16 --checkpoint-dir "$ckpts" --resume auto >"$dir/next.log" 2>&1 &&
  grep -q "resumed from .*ckpt-step00000014.h5" "$dir/next.log"; then
  ok "the next --resume auto continues from 14"
else
  fail "the next --resume auto" "$dir/next.log"
fi

# Another run's newer checkpoint (another seed) and a FIFO under a checkpoint's name.
run_train --steps 20 --seed 7 --checkpoint-dir "$dir/other" >"$dir/other.log" 2>&1 ||
  fail "the other run" "$dir/other.log"
cp "$dir/other/ckpt-step00000020.h5" "$ckpts/"
mkfifo "$ckpts/ckpt-step00000099.h5"
run_train --steps 18 --checkpoint-every 2 --keep 1 --checkpoint-dir "$ckpts" \
  --resume "$ckpts/ckpt-step00000016.h5" >"$dir/foreign.log" 2>&1
rc=$?
expected="ckpt-step00000015.h5.corrupt ckpt-step00000018.h5 ckpt-step00000020.h5 ckpt-step00000099.h5 "
if [ "$rc" -eq 0 ] && [ "$(listing)" = "$expected" ] &&
  grep -q "leaves .*ckpt-step00000020.h5 alone, another run's checkpoint" "$dir/foreign.log"; then
  ok "another run's checkpoint and the FIFO are left alone: $(listing)"
else
  fail "another run's checkpoint in the folder (exit $rc): $(listing)" "$dir/foreign.log"
fi
# --keep 2 with another run's checkpoint between this run's own: it is not counted, so the two
# newest of this run's are kept beside it (counting it would have removed it, or 4).
b=$dir/between
run_train --steps 4 --checkpoint-every 2 --checkpoint-dir "$b" >"$dir/own.log" 2>&1 ||
  fail "the run's first part" "$dir/own.log"
run_train --steps 3 --seed 7 --checkpoint-dir "$dir/other3" >"$dir/other3.log" 2>&1 ||
  fail "the other run of 3 steps" "$dir/other3.log"
cp "$dir/other3/ckpt-step00000003.h5" "$b/"
run_train --steps 5 --checkpoint-every 1 --keep 2 --checkpoint-dir "$b" --resume auto \
  >"$dir/between.log" 2>&1
rc=$?
expected="ckpt-step00000003.h5 ckpt-step00000004.h5 ckpt-step00000005.h5 "
if [ "$rc" -eq 0 ] && [ "$(listing_of "$b")" = "$expected" ]; then
  ok "--keep 2 keeps this run's 4 and 5 and never counts the other run's 3: $(listing_of "$b")"
else
  fail "--keep 2 with another run's checkpoint between (exit $rc): $(listing_of "$b")" "$dir/between.log"
fi
finish checkpoint_rotation
