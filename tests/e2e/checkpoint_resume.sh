#!/usr/bin/env bash
# Checkpoints and resume, as a preempted batch job sees them: a run stopped by SIGUSR1 (sent by
# another process, at whatever step it has reached) exits 75 after a checkpoint, and resuming
# it gives parameters, optimizer state and running statistics bit for bit equal to a run that was
# never stopped, with 1 and 2 ranks and across an epoch boundary (SGD; every other --optimizer on
# one rank). A truncated checkpoint is
# skipped by --resume auto with a warning naming it; a checkpoint of another model, or whose
# position in the epoch is not a whole number of this run's global batch, is refused with the
# reason unless forced; --keep bounds the checkpoints kept.
#   tests/e2e/checkpoint_resume.sh MPIEXEC build/ringtrain
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
"$bin" data synth --out "$dir/small.h5" --train 512 --test 64 --height 16 --width 16 >/dev/null
# 32 steps per epoch on one rank (64 on two): 40 steps cross an epoch boundary on one rank.
model=(--data "$dir/small.h5" --depth 18 --width 0.125 --threads 1 --workers 1 --no-eval
  --log-interval 0)

# launch RANKS ARGS...: the training command for 1 rank (plain) or more (under mpirun), run in
# place of this shell function's process, so that a signal sent to $! reaches it.
launch() {
  local ranks=$1
  shift
  if [ "$ranks" -eq 1 ]; then
    exec "$bin" train "$@"
  else
    exec "$mpiexec" -n "$ranks" --oversubscribe "$bin" train "$@"
  fi
}

# same_state A B: parameters, optimizer state (and with one rank the running statistics) identical.
same_state() {
  local groups=(/params /optimizer)
  [ "$3" -eq 1 ] && groups+=(/buffers)
  for g in "${groups[@]}"; do h5diff -q "$1" "$2" "$g" "$g" || return 1; done
}

# Each run: ranks and --optimizer. The checks after this loop use the SGD runs' folders.
for run in "1 sgd" "2 sgd" "1 lars" "1 adamw"; do
  read -r ranks opt <<<"$run"
  batch=$((16 / ranks))
  tag=r$ranks
  [ "$opt" = sgd ] || tag=r$ranks-$opt
  a=$dir/$tag/straight b=$dir/$tag/stopped
  if ! (launch "$ranks" "${model[@]}" --optimizer "$opt" --steps 40 --batch-size "$batch" \
    --checkpoint-dir "$a" --checkpoint-every 40) >"$dir/straight.log" 2>&1; then
    fail "$ranks rank(s), $opt: uninterrupted run" "$dir/straight.log"; continue
  fi
  : >"$dir/stopped.log"  # emptied before the launch: the wait below must not see the last run's
  (launch "$ranks" "${model[@]}" --optimizer "$opt" --steps 40 --batch-size "$batch" \
    --checkpoint-dir "$b" --debug-loader-delay-ms 60) >"$dir/stopped.log" 2>&1 &
  pid=$!
  for _ in $(seq 600); do grep -q "step 8/40" "$dir/stopped.log" && break; sleep 0.1; done
  kill -USR1 "$pid"
  wait "$pid"
  rc=$?
  [ "$rc" -eq 75 ] || fail "$ranks rank(s), $opt: stopped run exited $rc, want 75" "$dir/stopped.log"
  stopped_at=$(ls "$b" | sed -n 's/ckpt-step0*\([0-9]*\)\.h5/\1/p' | head -1)
  if [ -z "$stopped_at" ] || [ "$stopped_at" -ge 40 ]; then
    fail "$ranks rank(s), $opt: no mid-run checkpoint (${stopped_at:-none})" "$dir/stopped.log"; continue
  fi
  if ! (launch "$ranks" "${model[@]}" --optimizer "$opt" --steps 40 --batch-size "$batch" \
    --checkpoint-dir "$b" --checkpoint-every 40 --resume auto) >"$dir/resumed.log" 2>&1; then
    fail "$ranks rank(s), $opt: resumed run" "$dir/resumed.log"; continue
  fi
  if same_state "$a/ckpt-step00000040.h5" "$b/ckpt-step00000040.h5" "$ranks"; then
    echo "ok   $ranks rank(s), $opt: stopped at step $stopped_at by SIGUSR1, resumed, bit for bit equal"
  else
    fail "$ranks rank(s), $opt: resumed run differs from the uninterrupted one" "$dir/resumed.log"
  fi
done

# A truncated newer checkpoint is skipped, with a warning naming it.
c=$dir/r1/stopped
head -c 2000 "$c/ckpt-step00000040.h5" >"$c/ckpt-step00000050.h5"
if (launch 1 "${model[@]}" --batch-size 16 --steps 45 --checkpoint-dir "$c" --resume auto) \
  >"$dir/torn.log" 2>&1 && grep -q "skipped .*ckpt-step00000050.h5" "$dir/torn.log" &&
  grep -q "resumed from .*ckpt-step00000040.h5" "$dir/torn.log"; then
  echo "ok   torn checkpoint skipped: $(grep -o 'skipped.*' "$dir/torn.log" | head -1)"
else
  fail "torn checkpoint not skipped" "$dir/torn.log"
fi

# A global batch that does not divide the samples consumed, or another model: refused with the
# reason; forced: resumed.
one_rank=$dir/r1/straight/ckpt-step00000040.h5
expect_refusal() {
  local name=$1 reason=$2
  shift 2
  if ("$@") >"$dir/refused.log" 2>&1; then fail "$name: accepted" "$dir/refused.log"; return; fi
  grep -q "$reason" "$dir/refused.log" && echo "ok   $name refused: $(grep -o 'refusing.*' "$dir/refused.log" | head -1 | cut -c1-110)" ||
    fail "$name: no reason '$reason'" "$dir/refused.log"
}
expect_refusal "other global batch" "not a whole number of the new global batch 48" \
  launch 2 "${model[@]}" --batch-size 24 --steps 45 --checkpoint-dir "$dir/w" --resume "$one_rank"
expect_refusal "other model" "another model" \
  launch 1 "${model[@]}" --batch-size 16 --stem imagenet --steps 45 --checkpoint-dir "$dir/m" --resume "$one_rank"
if (launch 2 "${model[@]}" --batch-size 24 --steps 45 --checkpoint-dir "$dir/w" --resume "$one_rank" \
  --resume-force) >"$dir/forced.log" 2>&1 && grep -q "resumed from" "$dir/forced.log"; then
  echo "ok   --resume-force continues on 2 ranks x 24 from a 1-rank checkpoint"
else
  fail "--resume-force" "$dir/forced.log"
fi

# --keep 2 with a checkpoint every 10 steps leaves the newest two.
(launch 1 "${model[@]}" --steps 40 --batch-size 16 --checkpoint-dir "$dir/k" --checkpoint-every 10 \
  --keep 2) >"$dir/keep.log" 2>&1
kept=$(ls "$dir/k" | tr '\n' ' ')
[ "$kept" = "ckpt-step00000030.h5 ckpt-step00000040.h5 " ] && echo "ok   --keep 2: $kept" ||
  fail "--keep 2 left: $kept" "$dir/keep.log"

echo "checkpoint_resume: $failures failed"
[ "$failures" -eq 0 ]
