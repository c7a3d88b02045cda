# shellcheck shell=bash disable=SC2034
# Sourced by the MPI end-to-end scripts, run as `SCRIPT MPIEXEC RINGTRAIN`: their two arguments,
# then harness.sh.
mpiexec=$1
bin=$2
# shellcheck source=harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh"
