# Sourced by the job scripts: settings from the environment, the run folder, the launch, and the
# requeue on a checkpointed stop. Every setting has a default; override any when submitting:
#   RINGTRAIN_BIN        the binary (build/ringtrain)
#   RINGTRAIN_ARGS       extra `ringtrain train` flags ("")
#   RINGTRAIN_RUN_DIR    logs, metrics and summary of this job (runs/NAME-JOBID)
#   RINGTRAIN_CKPT_DIR   checkpoints, shared by the resubmissions of a job name
#                        (runs/NAME/checkpoints); every run resumes from the newest one there
#   RINGTRAIN_LAUNCHER   srun (default under Slurm) or mpirun
#   RINGTRAIN_MPI        srun's --mpi plugin (pmix)
#   RINGTRAIN_REQUEUE    1: requeue the job when training stopped on SIGTERM/SIGUSR1 (0)
# Without a GPU on the node the job trains on the CPU backend, with the task's cores as threads.
# The job scripts add their own arguments ("$@": ringtrain train flags) after these.
set -euo pipefail
cd "${SLURM_SUBMIT_DIR:-$(dirname "${BASH_SOURCE[0]}")/..}"
name=${SLURM_JOB_NAME:-ringtrain}
bin=${RINGTRAIN_BIN:-build/ringtrain}
run_dir=${RINGTRAIN_RUN_DIR:-runs/$name-${SLURM_JOB_ID:-$(date +%Y%m%d-%H%M%S)}}
ckpt_dir=${RINGTRAIN_CKPT_DIR:-runs/$name/checkpoints}
read -r -a user_args <<<"${RINGTRAIN_ARGS:-}"
mkdir -p "$run_dir" "$ckpt_dir"
# Slurm 22.05+ no longer passes the job's --cpus-per-task on to srun: without this every task
# would get one core, whatever the job asked for.
[ -z "${SLURM_CPUS_PER_TASK:-}" ] || export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK
train_args=(--checkpoint-dir "$ckpt_dir" --resume auto --metrics "$run_dir/metrics.jsonl"
  --summary "$run_dir/summary.json")
nvidia-smi -L >/dev/null 2>&1 || train_args+=(--device cpu)
echo "ringtrain job $name (${SLURM_JOB_ID:-no Slurm}): logs in $run_dir, checkpoints in $ckpt_dir"

# finish STATUS: requeue after a checkpointed stop when asked, then exit with the status.
finish() {
  local status=$1
  if [ "$status" -eq 75 ]; then
    echo "training stopped on a signal after writing a checkpoint (exit 75)"
    if [ "${RINGTRAIN_REQUEUE:-0}" = 1 ] && [ -n "${SLURM_JOB_ID:-}" ]; then
      echo "requeueing job $SLURM_JOB_ID: it resumes from $ckpt_dir"
      scontrol requeue "$SLURM_JOB_ID"
    fi
  fi
  exit "$status"
}

# launch ARGS...: one rank per task, by srun (or mpirun) inside the allocation.
launch() {
  if [ "${RINGTRAIN_LAUNCHER:-srun}" = srun ] && [ -n "${SLURM_JOB_ID:-}" ]; then
    srun --mpi="${RINGTRAIN_MPI:-pmix}" "$@"
  else
    mpirun_stoppable -n "${SLURM_NTASKS:-${NP:-2}}" "$@"
  fi
}

# mpirun_stoppable ARGS...: mpirun, with SIGTERM or SIGUSR1 for this script passed on to it as
# SIGUSR1, which Open MPI forwards to the ranks: they checkpoint and mpirun exits 75. (Open MPI
# 4's mpirun answers a SIGTERM of its own by aborting the job: SIGCONT to the ranks, then after
# odls_base_sigkill_timeout seconds SIGTERM, after as many again SIGKILL, and exit 1. The ranks
# take that SIGTERM as a stop too; the timeout set here leaves them time to write the checkpoint.)
mpirun_stoppable() {
  export OMPI_MCA_odls_base_sigkill_timeout=${OMPI_MCA_odls_base_sigkill_timeout:-10}
  mpirun "$@" &
  local pid=$!
  # Only the first: mpirun dies of a SIGUSR1 that arrives during its own teardown.
  local stopping=0
  trap '[ "$stopping" = 1 ] || { stopping=1; kill -USR1 "$pid" 2>/dev/null || true; }' TERM USR1
  while kill -0 "$pid" 2>/dev/null; do wait "$pid" || true; done
  trap - TERM USR1
  wait "$pid"
}
