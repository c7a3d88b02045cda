# Sourced by every fault script: the binaries from the environment ctest sets, a temporary
# folder (and any tmpfs mounted under it, listed in `mounts`) removed at exit, and the ok/fail
# counting with its summary line.
set -u
bin=${RINGTRAIN:?set RINGTRAIN to the ringtrain binary}
mpiexec=${MPIEXEC:-mpiexec}
dir=$(mktemp -d)
mounts=()
cleanup() {
  for m in "${mounts[@]}"; do umount "$m" 2>/dev/null; done
  rm -rf "$dir"
}
trap cleanup EXIT
failures=0
fail_log="" # the file whose last lines a failure shows, unless the call names another
ok() { echo "ok   $1"; }
# fail MESSAGE [LOG]: one more failure, with the last 60 lines of LOG (default: $fail_log):
# enough for the whole backtrace of a crashed rank.
fail() {
  echo "FAIL $1"
  local log=${2:-$fail_log}
  [ -n "$log" ] && [ -f "$log" ] && tail -n 60 "$log" | sed 's/^/     /'
  failures=$((failures + 1))
}
# finish NAME: the summary line, and the exit status.
finish() {
  echo "$1: $failures failed"
  [ "$failures" -eq 0 ]
  exit
}
