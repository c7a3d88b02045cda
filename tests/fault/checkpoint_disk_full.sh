#!/usr/bin/env bash
# A checkpoint that does not fit: a tmpfs sized for two checkpoints less 8 KiB, a checkpoint
# every 5 steps and --keep 1, so the second write runs out of space near its end. The run must
# end with an error naming "No space left on device", the file and the bytes (not a crash, not
# exit 139), keep the older checkpoint (which verifies and resumes) and leave no *.tmp behind;
# on 2 ranks every rank ends.
source "$(dirname "$0")/checkpoint_common.sh"

run_train --steps 5 --checkpoint-every 5 --checkpoint-dir "$dir/size" >"$dir/size.log" 2>&1 ||
  fail "calibration run" "$dir/size.log"
kib=$(du -k "$dir/size/ckpt-step00000005.h5" | cut -f1)
mnt=$dir/full
mount_tmpfs "$mnt" $((2 * kib - 8)) || skip_all "no tmpfs to fill"

for ranks in 1 2; do
  rm -f "$mnt"/*
  if [ "$ranks" -eq 1 ]; then
    run_train --steps 10 --checkpoint-every 5 --keep 1 --checkpoint-dir "$mnt" >"$dir/full.log" 2>&1
  else
    run_train_np 2 --batch-size 8 --steps 10 --checkpoint-every 5 --keep 1 \
      --checkpoint-dir "$mnt" >"$dir/full.log" 2>&1
  fi
  rc=$?
  name="$ranks rank(s), disk full at the second checkpoint"
  if ! exit_ok "$rc" "$dir/full.log"; then
    fail "$name: exit $rc, want an error exit (not a signal or 139)" "$dir/full.log"
  elif ! grep -q "No space left on device.*ckpt-step00000010.h5\|ckpt-step00000010.h5.*No space left on device" "$dir/full.log"; then
    fail "$name: no 'No space left on device' naming the file" "$dir/full.log"
  elif ! grep -q "the file needs [0-9][0-9]*" "$dir/full.log"; then
    fail "$name: the bytes needed are not named" "$dir/full.log"
  elif [ -n "$(ls "$mnt" | grep '\.tmp$')" ] || [ -e "$mnt/ckpt-step00000010.h5" ]; then
    fail "$name: left $(ls "$mnt" | tr '\n' ' ')" "$dir/full.log"
  elif ! "$bin" inspect "$mnt/ckpt-step00000005.h5" >"$dir/inspect.log" 2>&1; then
    fail "$name: the older checkpoint is gone or does not verify ($(ls "$mnt" | tr '\n' ' '))" \
      "$dir/inspect.log"
  else
    ok "$name: exit $rc, $(grep -o 'No space left on device.*' "$dir/full.log" | head -1 | cut -c1-90)"
  fi
done

# --resume auto continues from the surviving checkpoint.
if run_train --steps 10 --checkpoint-dir "$mnt" --resume auto --no-final-checkpoint \
  >"$dir/resume.log" 2>&1 &&
  grep -q "resumed from .*ckpt-step00000005.h5" "$dir/resume.log"; then
  ok "--resume auto continues from ckpt-step00000005.h5"
else
  fail "--resume auto after the full disk" "$dir/resume.log"
fi
finish checkpoint_disk_full
