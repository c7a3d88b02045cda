#!/usr/bin/env bash
# The jobs/ scripts under a real Slurm (one node started here, slurm_cluster.sh), on the CPU
# backend, their GPU and CPU requests turned down on the command line as on a CPU-only cluster:
# ddp_1node.sbatch with 2 tasks (train flags given after the script name) and dp_1node.sbatch
# run to completion with their logs in a per-job folder, and compare_strategies.sbatch,
# submitted from a fresh clone (no runs/ folder), fills its table; then a DDP job is stopped
# mid-run with `scancel --signal=USR1`, leaves a checkpoint and exit code 75, and a second
# submission of the same job name resumes from it; and with RINGTRAIN_REQUEUE=1 a stopped job
# requeues itself, resumes, and its log and metrics keep both segments.
#   tests/slurm/slurm_jobs.sh build/ringtrain     (run from anywhere; submits from the repo root)
set -u
bin=$(realpath "$1")
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d)
cluster=$dir/cluster
trap 'bash "$root/tests/slurm/slurm_cluster.sh" stop "$cluster"; rm -rf "$dir"' EXIT
if ! bash "$root/tests/slurm/slurm_cluster.sh" start "$cluster"; then
  echo "FAIL: could not start a Slurm cluster"
  exit 1
fi
export SLURM_CONF=$cluster/slurm.conf
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export RINGTRAIN_BIN=$bin
cd "$root"
failures=0
fail() { echo "FAIL $1"; [ -f "${2:-}" ] && tail -n 15 "$2"; failures=$((failures + 1)); }
"$bin" data synth --out "$dir/small.h5" --train 512 --test 64 --height 16 --width 16 >/dev/null
model="--data $dir/small.h5 --depth 18 --width 0.125 --batch-size 8 --no-eval --log-interval 0"

job_field() { scontrol show job "$1" | grep -o "$2=[^ ]*" | head -1 | cut -d= -f2; }

# signal_at_step5 JOB LOG: waits for the job's fifth step, then sends it Slurm's warning signal.
signal_at_step5() {
  for _ in $(seq 600); do grep -q "step 5/40" "$2" 2>/dev/null && break; sleep 0.1; done
  scancel --signal=USR1 "$1"
}

# wait_done JOB: until the job has ended (1,800 looks 0.1 s apart at most).
wait_done() {
  for _ in $(seq 1800); do
    case $(job_field "$1" JobState) in
      COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE) return ;;
    esac
    sleep 0.1
  done
}

# submit NAME SBATCH_ARGS...: runs to its end; prints the job id.
# Note: not `sbatch --wait`, which looks at the job after 2 s, then 8 s more (Slurm 22.05): a job
# of 3 s took 10. wait_done looks every 0.1 s.
submit() {
  local name=$1 id
  shift
  id=$(sbatch --parsable --job-name="$name" --output="$dir/$name-%j.out" "$@" 2>/dev/null | tail -1)
  wait_done "$id"
  echo "$id"
}

# The scripts ask for GPUs and several cores per task; this node has neither.
cpu_only=(--gpus-per-node=0 --ntasks-per-node=2 --cpus-per-task=1)
export RINGTRAIN_CKPT_DIR=$dir/ddp-ckpt RINGTRAIN_RUN_DIR=$dir/ddp-run RINGTRAIN_ARGS="$model"
id=$(submit rt-ddp -n 2 "${cpu_only[@]}" jobs/ddp_1node.sbatch --steps 6)
if [ "$(job_field "$id" JobState)" = COMPLETED ] && grep -q "summary: 6 steps" "$dir/ddp-run/train.log" &&
  grep -q "(8 per rank x 2 ranks" "$dir/ddp-run/train.log"; then
  echo "ok   ddp_1node.sbatch: job $id COMPLETED, 2 ranks, log in its folder"
else
  fail "ddp_1node.sbatch: job $id $(job_field "$id" JobState)" "$dir/ddp-run/train.log"
fi

export RINGTRAIN_CKPT_DIR=$dir/dp-ckpt RINGTRAIN_RUN_DIR=$dir/dp-run RINGTRAIN_DEVICES=2
id=$(submit rt-dp --gpus-per-node=0 --cpus-per-task=2 jobs/dp_1node.sbatch)
if [ "$(job_field "$id" JobState)" = COMPLETED ] && grep -q "DataParallel over 2 CPU devices" "$dir/dp-run/train.log"; then
  echo "ok   dp_1node.sbatch: job $id COMPLETED, DataParallel over 2 CPU devices"
else
  fail "dp_1node.sbatch: job $id $(job_field "$id" JobState)" "$dir/dp-run/train.log"
fi

# The strategy comparison on this node without GPUs, submitted from a fresh clone with the
# script's own log file: the job's GPU request turned off on the command line (a cluster without
# GPU resources refuses it otherwise), the three rows trained.
fresh=$dir/clone
git clone -q "$root" "$fresh" 2>/dev/null || { mkdir -p "$fresh" && cp -r "$root/jobs" "$fresh/"; }
export OUT=$dir/cmp RINGTRAIN=$bin STEPS=4 GLOBAL_BATCH=16
id=$(cd "$fresh" && sbatch --parsable --job-name=rt-compare --gpus-per-node=0 \
  --cpus-per-task=2 jobs/compare_strategies.sbatch --data "$dir/small.h5" --depth 18 \
  --width 0.125 2>/dev/null | tail -1)
wait_done "$id"
if [ "$(job_field "$id" JobState)" = COMPLETED ] && [ -s "$fresh/rt-compare-$id.out" ] &&
  [ "$(grep -cE '^\| (DataParallel|DDP), .* \| [0-9.]+ \|' "$dir/cmp/compare.md")" -eq 3 ]; then
  echo "ok   compare_strategies.sbatch from a fresh clone: job $id COMPLETED, three rows measured"
else
  fail "compare_strategies.sbatch: job $id $(job_field "$id" JobState)" "$fresh/rt-compare-$id.out"
fi
unset OUT RINGTRAIN STEPS GLOBAL_BATCH

# Stopped by the signal Slurm sends before a time limit, then resubmitted: it resumes.
export RINGTRAIN_CKPT_DIR=$dir/long-ckpt RINGTRAIN_RUN_DIR=$dir/long-run
export RINGTRAIN_ARGS="$model --steps 40 --debug-loader-delay-ms 60"
id=$(sbatch --parsable --job-name=rt-long --output="$dir/long-%j.out" -n 2 "${cpu_only[@]}" \
  jobs/ddp_1node.sbatch)
signal_at_step5 "$id" "$dir/long-run/train.log"
wait_done "$id"
checkpoint=$(ls "$dir/long-ckpt" 2>/dev/null | head -1)
if [ "$(job_field "$id" ExitCode)" = "75:0" ] && [ -n "$checkpoint" ]; then
  echo "ok   scancel --signal=USR1: job $id exit code 75, left $checkpoint"
else
  fail "signalled job $id: exit $(job_field "$id" ExitCode), checkpoint '${checkpoint}'" "$dir/long-run/train.log"
fi
export RINGTRAIN_RUN_DIR=$dir/long-run-2
id=$(submit rt-long -n 2 "${cpu_only[@]}" jobs/ddp_1node.sbatch)
if [ "$(job_field "$id" JobState)" = COMPLETED ] && grep -q "resumed from .*$checkpoint" "$dir/long-run-2/train.log" &&
  grep -q "summary: [0-9]* steps (resumed at [0-9]*, now at 40)" "$dir/long-run-2/train.log"; then
  echo "ok   resubmission: job $id resumed from $checkpoint and finished"
else
  fail "resubmission: job $id $(job_field "$id" JobState)" "$dir/long-run-2/train.log"
fi
# RINGTRAIN_REQUEUE=1: the stopped job requeues itself. Slurm holds a requeued job back for a
# while (Reason=BeginTime); the test releases it, then it resumes and finishes.
export RINGTRAIN_CKPT_DIR=$dir/requeue-ckpt RINGTRAIN_RUN_DIR=$dir/requeue-run RINGTRAIN_REQUEUE=1
id=$(sbatch --parsable --job-name=rt-requeue --output="$dir/requeue-%j.out" -n 2 "${cpu_only[@]}" \
  jobs/ddp_1node.sbatch)
signal_at_step5 "$id" "$dir/requeue-run/train.log"
# Release the hold once the requeued job has been back to PENDING for 2 s (an earlier update can
# be undone while Slurm is still requeueing it, so it is repeated while the job waits). Not at
# once: slurmd revokes the first run's credential at the requeue, to the second, and a relaunch
# within that second is refused ("Job credential revoked") and ends the job FAILED; Slurm's own
# hold exists for that reason. The first run ends FAILED (exit 75) for a moment before the
# requeue: only the second run's end counts.
pending_since=
for _ in $(seq 1200); do
  state=$(job_field "$id" JobState)
  [ "$state" = COMPLETED ] && break
  if [ "$state" = PENDING ] && [ "$(job_field "$id" Restarts)" = 1 ]; then
    pending_since=${pending_since:-$SECONDS}
    [ $((SECONDS - pending_since)) -ge 2 ] && scontrol update JobId="$id" StartTime=now 2>/dev/null
  fi
  sleep 0.2
done
if [ "$(job_field "$id" JobState)" = COMPLETED ] && grep -q "requeueing job $id" "$dir/requeue-$id.out" &&
  grep -q "resumed from" "$dir/requeue-run/train.log" && grep -q "summary: [0-9]* steps (resumed at [0-9]*, now at 40)" "$dir/requeue-run/train.log" &&
  grep -q "step 5/40" "$dir/requeue-run/train.log" && grep -q '"segment":"resumed"' "$dir/requeue-run/metrics.jsonl" &&
  [ "$(grep -c "ringtrain job rt-requeue" "$dir/requeue-$id.out")" -eq 2 ]; then
  echo "ok   RINGTRAIN_REQUEUE=1: job $id requeued itself after the signal, resumed and finished; log and metrics kept both segments"
else
  fail "requeue: job $id $(job_field "$id" JobState), restarts $(job_field "$id" Restarts)" "$dir/requeue-$id.out"
  echo "-- what slurmctld did with job $id:"
  grep -E "JobId=$id|job_?id[= ]$id\b" "$cluster/slurmctld.log" | tail -n 25
fi
unset RINGTRAIN_REQUEUE
echo "slurm_jobs: $failures failed"
[ "$failures" -eq 0 ]
