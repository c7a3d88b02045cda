# Sourced by the checkpoint fault scripts: common.sh, a tiny synthetic dataset and model, and the
# training command.
source "$(dirname "$0")/common.sh"

"$bin" data synth --out "$dir/data.h5" --train 512 --test 64 --height 16 --width 16 >/dev/null
model=(--depth 18 --width 0.125 --threads 1 --workers 1 --no-eval --log-interval 0)
data=$dir/data.h5 # what --data the runs get
# run_train ARGS...: one rank, bounded, on $data; batch 16 unless ARGS set --batch-size.
run_train() {
  local batch=(--batch-size 16)
  [[ " $* " == *" --batch-size "* ]] && batch=()
  timeout -k 5 120 "$bin" train --data "$data" "${batch[@]}" "${model[@]}" "$@"
}
# run_train_np RANKS ARGS...: under mpirun, on $data.
run_train_np() {
  local ranks=$1
  shift
  timeout -k 5 120 "$mpiexec" -n "$ranks" --oversubscribe "$bin" train --data "$data" "${model[@]}" "$@"
}

# mount_tmpfs DIR KIB [ro]: a tmpfs of KIB KiB at DIR; false, with the reason said, where
# mounting is not permitted (it needs root): the caller skips what needs it.
mount_tmpfs() {
  mkdir -p "$1"
  if ! mount -t tmpfs -o "size=${2}k${3:+,$3}" tmpfs "$1" 2>"$dir/mount.err"; then
    echo "cannot mount a tmpfs at $1 ($(cat "$dir/mount.err")); run as root"
    return 1
  fi
  mounts+=("$1")
}

# exit_ok RC LOG: the run ended by itself with an error (not a signal, not a timeout) and said
# why on one `ringtrain: error:` line.
exit_ok() {
  [ "$1" -ne 0 ] && [ "$1" -lt 124 ] && grep -q "ringtrain: .*error: " "$2"
}

# flip_bit FILE DATASET: flips the lowest bit of one byte in the middle of DATASET's raw data
# (contiguous layout) in the checkpoint FILE.
flip_bit() {
  local offset size at byte
  offset=$(h5dump -p -H -d "$2" "$1" | awk '/OFFSET/ {print $2}')
  size=$(h5dump -p -H -d "$2" "$1" | awk '/SIZE/ {print $2; exit}')
  at=$((offset + size / 2))
  byte=$(od -An -tu1 -j "$at" -N1 "$1" | tr -d ' ')
  printf "$(printf '\\%03o' $((byte ^ 1)))" | dd of="$1" bs=1 seek="$at" conv=notrunc status=none
  echo "flipped a bit of byte $at of $1 (in $2 at $offset, $size bytes)"
}
