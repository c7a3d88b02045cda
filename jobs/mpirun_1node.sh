#!/usr/bin/env bash
# DDP on one node without Slurm: NP ranks (default: one per GPU, or 2 on a CPU-only machine)
# under mpirun, resuming from the newest checkpoint. Settings: jobs/job_common.sh.
#   NP=4 bash jobs/mpirun_1node.sh [ringtrain train flags...]
source "$(dirname "$0")/job_common.sh"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
export NP=${NP:-$([ "$gpus" -gt 0 ] && echo "$gpus" || echo 2)}
status=0
# Not a pipeline into tee: this shell must see SIGTERM while mpirun runs (launch passes it on).
RINGTRAIN_LAUNCHER=mpirun launch "$bin" train "${train_args[@]}" "${user_args[@]}" "$@" \
  > >(tee -a "$run_dir/train.log") 2>&1 || status=$?
finish "$status"
