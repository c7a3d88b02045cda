#!/usr/bin/env bash
# A real one-node Slurm cluster for the tests, in a folder of its own:
#   tests/slurm/slurm_cluster.sh start DIR   # installs slurm-wlm if missing, starts slurmctld
#                                            # and slurmd, waits for the node to be idle
#   tests/slurm/slurm_cluster.sh stop DIR    # stops both by their PIDs
# Clients then use SLURM_CONF=DIR/slurm.conf. Ports 6917/6918 and auth/none keep it apart from
# any other Slurm on the machine; processes are tracked without cgroups.
set -euo pipefail
action=$1
dir=$(realpath -m "$2")

stop() {
  for daemon in slurmd slurmctld; do
    local pid
    pid=$(cat "$dir/$daemon.pid" 2>/dev/null) || continue
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    rm -f "$dir/$daemon.pid"
  done
}

if [ "$action" = stop ]; then
  stop
  exit 0
fi

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v sbatch >/dev/null; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client >/dev/null
fi

host=$(hostname -s)
mkdir -p "$dir/state" "$dir/spool"
cat >"$dir/slurm.conf" <<CONF
ClusterName=ringtrain-test
SlurmctldHost=$host
SlurmUser=$(id -un)
SlurmdUser=root
SlurmctldPort=6917
SlurmdPort=6918
AuthType=auth/none
CredType=cred/none
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
KillWait=5
NodeName=$host CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
CONF
export SLURM_CONF=$dir/slurm.conf
slurmctld -f "$SLURM_CONF" -i
slurmd -f "$SLURM_CONF"
for _ in $(seq 100); do
  state=$(sinfo -h -o %T 2>/dev/null || true)
  [ "$state" = idle ] && exit 0
  sleep 0.2
done
echo "slurm_cluster: the node did not become idle (state '${state:-none}'); logs in $dir" >&2
tail -n 5 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 || true
stop
exit 1
