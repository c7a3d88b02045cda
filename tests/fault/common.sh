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
skips=()    # the parts skipped, named in the summary line
fail_log="" # the file whose last lines a failure shows, unless the call names another
ok() { echo "ok   $1"; }
# skip NAME REASON: one part of the test cannot run here; the summary line names it.
skip() {
  echo "skip $1: $2"
  skips+=("$1")
}
# skip_all REASON: nothing of the test can run here: ctest reports it skipped (exit 77), not
# passed.
skip_all() {
  echo "skip $(basename "$0" .sh): $1"
  exit 77
}
# fail MESSAGE [LOG]: one more failure, with the last 60 lines of LOG (default: $fail_log):
# enough for the whole backtrace of a crashed rank.
fail() {
  echo "FAIL $1"
  local log=${2:-$fail_log}
  [ -n "$log" ] && [ -f "$log" ] && tail -n 60 "$log" | sed 's/^/     /'
  failures=$((failures + 1))
}
# finish NAME: the summary line (with the parts skipped), and the exit status.
finish() {
  echo "$1: $failures failed${skips[*]:+, ${#skips[@]} skipped (${skips[*]})}"
  [ "$failures" -eq 0 ]
  exit
}

# expect_error NAME EXPECTED_TEXT COMMAND...: COMMAND ends within 30 s with a clean non-zero
# exit and EXPECTED_TEXT on stderr.
expect_error() {
  local name=$1 expected=$2
  shift 2
  local rc=0
  (cd "$dir" && timeout -k 5 30 "$@") >"$dir/out" 2>"$dir/err" </dev/null || rc=$?
  if [ "$rc" -eq 124 ]; then fail "$name: still running after 30 s"; return; fi
  if [ "$rc" -eq 0 ] || [ "$rc" -ge 128 ]; then fail "$name: exit status $rc"; return; fi
  if ! grep -qF -- "$expected" "$dir/err"; then fail "$name: stderr lacks '$expected'"; return; fi
  echo "ok   $name: $(head -n 1 "$dir/err")"
}

# under_asan: the binary is built with AddressSanitizer, whose shadow memory takes more address
# space than any `prlimit --as` limit a test sets.
under_asan() { ldd "$bin" | grep -q libasan; }
