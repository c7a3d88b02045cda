#!/usr/bin/env bash
# A checkpoint with one flipped bit in a weight: `ringtrain inspect` fails naming the dataset,
# --resume FILE refuses it naming the dataset, and --resume auto skips it with a warning naming
# the file and the dataset and continues from the older good checkpoint.
source "$(dirname "$0")/checkpoint_common.sh"

ckpts=$dir/ckpts
run_train --steps 10 --checkpoint-every 5 --checkpoint-dir "$ckpts" >"$dir/train.log" 2>&1 ||
  fail "training run" "$dir/train.log"
newest=$ckpts/ckpt-step00000010.h5
dataset=/params/layer1.0.1.conv.weight

if "$bin" inspect "$newest" >"$dir/inspect.log" 2>&1 && grep -q "step 10, epoch 1" "$dir/inspect.log"; then
  ok "inspect of a good checkpoint: $(grep -c . "$dir/inspect.log") lines, $(tail -1 "$dir/inspect.log" | sed 's/^ *//')"
else
  fail "inspect of a good checkpoint" "$dir/inspect.log"
fi

flip_bit "$newest" "$dataset"

if "$bin" inspect "$newest" >"$dir/inspect.log" 2>&1; then
  fail "inspect accepted the corrupt checkpoint" "$dir/inspect.log"
elif grep -q "ringtrain: error: .*$dataset does not match its checksum" "$dir/inspect.log"; then
  ok "inspect refuses it: $(cut -c1-120 "$dir/inspect.log")"
else
  fail "inspect does not name $dataset" "$dir/inspect.log"
fi

run_train --steps 15 --checkpoint-dir "$dir/other" --resume "$newest" >"$dir/named.log" 2>&1
rc=$?
if exit_ok "$rc" "$dir/named.log" && grep -q "refusing .*ckpt-step00000010.h5.*$dataset" "$dir/named.log"; then
  ok "--resume FILE refuses it, naming the dataset"
else
  fail "--resume FILE (exit $rc)" "$dir/named.log"
fi

if run_train --steps 15 --checkpoint-dir "$ckpts" --resume auto >"$dir/auto.log" 2>&1 &&
  grep -q "skipped .*ckpt-step00000010.h5.*$dataset" "$dir/auto.log" &&
  grep -q "resumed from .*ckpt-step00000005.h5" "$dir/auto.log"; then
  ok "--resume auto skips it with a warning and resumes from ckpt-step00000005.h5"
else
  fail "--resume auto with a corrupt newest checkpoint" "$dir/auto.log"
fi

# `inspect` of a dataset file prints what `data inspect` prints.
if "$bin" inspect "$dir/data.h5" >"$dir/a.txt" 2>&1 && "$bin" data inspect "$dir/data.h5" >"$dir/b.txt" 2>&1 &&
  cmp -s "$dir/a.txt" "$dir/b.txt" && grep -q "train: 512 images" "$dir/a.txt"; then
  ok "inspect of a dataset file equals data inspect"
else
  fail "inspect of a dataset file" "$dir/a.txt"
fi
finish checkpoint_integrity
