# shellcheck shell=bash disable=SC2034
# Sourced by the MPI end-to-end scripts, run as `SCRIPT MPIEXEC RINGTRAIN`: their two arguments,
# a temporary folder removed at exit, and the failure count (fail MESSAGE [LOG] shows the last
# 20 lines of LOG).
set -u
mpiexec=$1
bin=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0
ok() { echo "ok   $1"; }
fail() { echo "FAIL $1"; [ -f "${2:-}" ] && tail -n 20 "$2"; failures=$((failures + 1)); }
