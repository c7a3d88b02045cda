# Sourced by the checkpoint fault scripts: a temporary folder (and tmpfs mounts) removed at exit,
# ok/fail counting, a tiny synthetic dataset and model, and the training command.
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
ok() { echo "ok   $1"; }
fail() {
  echo "FAIL $1"
  [ -f "${2:-}" ] && tail -n 15 "$2"
  failures=$((failures + 1))
}
# finish NAME: the summary line, and the exit status.
finish() {
  echo "$1: $failures failed"
  [ "$failures" -eq 0 ]
  exit
}

"$bin" data synth --out "$dir/data.h5" --train 512 --test 64 --height 16 --width 16 >/dev/null
model=(--depth 18 --width 0.125 --threads 1 --workers 1 --no-eval --log-interval 0)
data=$dir/data.h5 # what --data the runs get
# run_train ARGS...: one rank, bounded, on $data; batch 16 unless ARGS set --batch-size.
run_train() {
  local batch=(--batch-size 16)
  [[ " $* " == *" --batch-size "* ]] && batch=()
  timeout 120 "$bin" train --data "$data" "${batch[@]}" "${model[@]}" "$@"
}
# run_train_np RANKS ARGS...: under mpirun, on $data.
run_train_np() {
  local ranks=$1
  shift
  timeout 120 "$mpiexec" -n "$ranks" --oversubscribe "$bin" train --data "$data" "${model[@]}" "$@"
}

# mount_tmpfs DIR KIB [ro]: a tmpfs of KIB KiB at DIR, or "skip" and exit 0 where mounting is not
# permitted (the test needs root).
mount_tmpfs() {
  mkdir -p "$1"
  if ! mount -t tmpfs -o "size=${2}k${3:+,$3}" tmpfs "$1" 2>"$dir/mount.err"; then
    echo "skip $(basename "$0"): cannot mount a tmpfs ($(cat "$dir/mount.err")); run as root"
    exit 0
  fi
  mounts+=("$1")
}

# exit_ok RC LOG: the run ended by itself with an error (not a signal, not a timeout) and said
# why on one `ringtrain: error:` line.
exit_ok() {
  [ "$1" -ne 0 ] && [ "$1" -lt 124 ] && grep -q "ringtrain: .*error: " "$2"
}
