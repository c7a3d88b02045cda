#!/usr/bin/env bash
# --checkpoint-dir at start-up: a missing folder is created; one that cannot be written (a
# read-only file system, a path under a regular file) ends every rank before the first step with
# an error naming the folder and the system's reason; the *.h5.tmp a crashed checkpoint left are
# removed (and logged) at the next start, and nothing else is: not a temporary a live process holds.
source "$(dirname "$0")/checkpoint_common.sh"

if run_train --steps 2 --checkpoint-dir "$dir/new/sub" >"$dir/new.log" 2>&1 && [ -d "$dir/new/sub" ]; then
  ok "a missing --checkpoint-dir is created"
else
  fail "missing --checkpoint-dir" "$dir/new.log"
fi

# expect_early_error NAME REASON LOG RC: refused before the first step, naming the reason.
expect_early_error() {
  if ! exit_ok "$4" "$3"; then
    fail "$1: exit $4, want an error exit" "$3"
  elif grep -q "step 1/" "$3"; then
    fail "$1: training started before the error" "$3"
  elif ! grep -q "ringtrain: .*error: .*$2" "$3"; then
    fail "$1: no error naming '$2'" "$3"
  else
    ok "$1: $(grep -o 'error: .*' "$3" | head -1 | cut -c1-110)"
  fi
}

touch "$dir/a-file"
run_train --steps 2 --checkpoint-dir "$dir/a-file/ckpts" >"$dir/notdir.log" 2>&1
expect_early_error "--checkpoint-dir under a regular file" "$dir/a-file/ckpts.*Not a directory" \
  "$dir/notdir.log" $?

if mount_tmpfs "$dir/ro" 1024 ro; then
  run_train --steps 2 --checkpoint-dir "$dir/ro" >"$dir/ro.log" 2>&1
  expect_early_error "read-only --checkpoint-dir" "$dir/ro is not writable.*Read-only file system" \
    "$dir/ro.log" $?
  run_train_np 2 --batch-size 8 --steps 2 --checkpoint-dir "$dir/ro" >"$dir/ro2.log" 2>&1
  expect_early_error "read-only --checkpoint-dir, 2 ranks" "$dir/ro is not writable" \
    "$dir/ro2.log" $?
else
  skip "read-only --checkpoint-dir" "no tmpfs"
fi

# A crash's temporaries are removed at the next start; other files stay.
c=$dir/crashed
mkdir -p "$c"
for f in ckpt-step00000007.h5.tmp ckpt-step00000009.h5.tmp-1a2b3c notes.tmp ckpt-step7.h5.tmp ckpt-step00000011.h5.tmp-zz; do
  echo torn >"$c/$f"
done
if run_train --steps 2 --checkpoint-dir "$c" --no-final-checkpoint >"$dir/tmp.log" 2>&1 &&
  [ "$(ls "$c" | tr '\n' ' ')" = "ckpt-step00000011.h5.tmp-zz ckpt-step7.h5.tmp notes.tmp " ] &&
  grep -q "removed .*ckpt-step00000007.h5.tmp" "$dir/tmp.log" &&
  grep -q "removed .*ckpt-step00000009.h5.tmp-1a2b3c" "$dir/tmp.log"; then
  ok "stale checkpoint temporaries removed and logged; other files kept"
else
  fail "stale temporaries: left $(ls "$c" | tr '\n' ' ')" "$dir/tmp.log"
fi
# A temporary that a live process holds (a checkpoint being written: TemporaryFile locks it) is
# not a crash's: it stays, and the writer's rename would otherwise fail.
l=$dir/live
mkdir -p "$l"
echo writing >"$l/ckpt-step00000013.h5.tmp-4d5e6f"
echo torn >"$l/ckpt-step00000015.h5.tmp-7a8b9c"
flock "$l/ckpt-step00000013.h5.tmp-4d5e6f" sleep 60 </dev/null >/dev/null 2>&1 &
holder=$!
sleep 0.5
if run_train --steps 2 --checkpoint-dir "$l" --no-final-checkpoint >"$dir/live.log" 2>&1 &&
  [ "$(ls "$l" | tr '\n' ' ')" = "ckpt-step00000013.h5.tmp-4d5e6f " ] &&
  grep -q "removed .*ckpt-step00000015.h5.tmp-7a8b9c" "$dir/live.log"; then
  ok "a temporary another process is writing stays; a crash's is removed"
else
  fail "a live temporary: left $(ls "$l" | tr '\n' ' ')" "$dir/live.log"
fi
pkill -P "$holder" sleep
wait "$holder" 2>/dev/null
finish checkpoint_startup
