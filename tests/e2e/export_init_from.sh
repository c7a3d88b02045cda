#!/usr/bin/env bash
# `ringtrain export` and `train --init-from` as a user runs them: train, export, start a new run
# from the file (one process, --mode dp, two DDP ranks) and check through a checkpoint written
# before the first step that the new run starts from the exported tensors bit for bit; a file
# of another class count re-initialises only the classifier; the refusals.
#   tests/e2e/export_init_from.sh MPIEXEC build/ringtrain
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
model=(--depth 18 --width 0.125 --batch-size 16 --threads 1 --workers 1 --log-interval 0)

# Every tensor of two safetensors files equal byte for byte, num_batches_tracked aside (it
# counts the steps of the run a file was exported from).
same_tensors() {
  python3 - "$1" "$2" <<'PY'
import json, struct, sys
def tensors(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__")
    return {k: data[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]
            for k, v in header.items() if not k.endswith("num_batches_tracked")}
a, b = tensors(sys.argv[1]), tensors(sys.argv[2])
sys.exit(0 if a == b and len(a) > 50 else 1)
PY
}

# A run of ARGS stopped by SIGUSR1 during its start-up: it writes a step-0 checkpoint in DIR.
step0() {
  local c=$1
  shift
  (exec "$@" --checkpoint-dir "$c" --steps 4 --debug-startup-delay-ms 3000) >"$c.log" 2>&1 &
  local pid=$! i=0
  while ! grep -q "start-up delayed" "$c.log" 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
  kill -USR1 "$pid"
  wait "$pid"
}

"$bin" data synth --out "$dir/ten.h5" --train 256 --test 64 --height 16 --width 16 >/dev/null
"$bin" data synth --out "$dir/four.h5" --train 256 --test 64 --height 16 --width 16 --classes 4 >/dev/null
"$bin" train --data "$dir/ten.h5" "${model[@]}" --steps 3 --checkpoint-every 3 \
  --checkpoint-dir "$dir/src" >"$dir/src.log" 2>&1 || fail "source run" "$dir/src.log"
ck=$dir/src/ckpt-step00000003.h5
if "$bin" export --checkpoint "$ck" --format safetensors "$dir/src.safetensors" >"$dir/export.log" 2>&1 &&
  grep -q "wrote $dir/src.safetensors: 122 tensors of resnet18" "$dir/export.log"; then
  echo "ok   export: $(cat "$dir/export.log")"
else
  fail "export" "$dir/export.log"
fi

for how in one dp ddp; do
  case $how in
    one) run=("$bin" train --data "$dir/ten.h5" "${model[@]}") ;;
    dp) run=("$bin" train --data "$dir/ten.h5" "${model[@]}" --mode dp --devices 2) ;;
    ddp) run=("$mpiexec" -n 2 --oversubscribe "$bin" train --data "$dir/ten.h5" "${model[@]}") ;;
  esac
  step0 "$dir/$how" "${run[@]}" --init-from "$dir/src.safetensors"
  rc=$?
  if [ "$rc" -ne 75 ] || ! "$bin" export --checkpoint "$dir/$how/ckpt-step00000000.h5" \
    "$dir/$how.safetensors" >/dev/null 2>&1; then
    fail "$how: --init-from, stopped at start-up: exit $rc (want 75 and a step-0 checkpoint)" "$dir/$how.log"
  elif ! same_tensors "$dir/src.safetensors" "$dir/$how.safetensors"; then
    fail "$how: the run's step-0 weights differ from the exported file's" "$dir/$how.log"
  elif [ "$(grep -c -- "--init-from .*: 102 parameters and buffers loaded" "$dir/$how.log")" -ne 1 ]; then
    fail "$how: want one line saying what --init-from loaded" "$dir/$how.log"
  else
    echo "ok   $how: --init-from starts from the exported tensors bit for bit"
  fi
done

# A checkpoint as --init-from, on data of 4 classes: only the classifier starts fresh.
if "$bin" train --data "$dir/four.h5" "${model[@]}" --steps 1 --init-from "$ck" \
  --checkpoint-dir "$dir/four" >"$dir/four.log" 2>&1 &&
  grep -q "its classifier has 10 classes, this data 4: fc.weight and fc.bias start fresh" "$dir/four.log" &&
  grep -q "100 parameters and buffers loaded" "$dir/four.log"; then
  echo "ok   another class count: the classifier alone starts fresh"
else
  fail "--init-from with another class count" "$dir/four.log"
fi

# expect_error NAME STATUS EXPECTED_TEXT ARGS...
expect_error() {
  local name=$1 status=$2 expected=$3
  shift 3
  local rc=0
  "$bin" "$@" >"$dir/out" 2>"$dir/err" || rc=$?
  if [ "$rc" -ne "$status" ] || ! grep -qF -- "$expected" "$dir/err" || [ "$(grep -c . "$dir/err")" -gt 2 ]; then
    fail "$name: exit $rc (want $status), stderr lacks '$expected' or is longer than two lines" "$dir/err"
  else
    echo "ok   $name: $(head -n 1 "$dir/err")"
  fi
}
printf 'garbage' >"$dir/garbage.safetensors"
header=$(od -An -tu8 -N8 "$dir/src.safetensors" | tr -d ' ')
head -c $((8 + header + 1000)) "$dir/src.safetensors" >"$dir/truncated.safetensors"
expect_error resume_and_init 2 "--init-from starts a new run from a file's weights, --resume continues" \
  train --data "$dir/ten.h5" "${model[@]}" --init-from "$dir/src.safetensors" --resume auto
expect_error garbage 1 "--init-from $dir/garbage.safetensors: safetensors:" \
  train --data "$dir/ten.h5" "${model[@]}" --init-from "$dir/garbage.safetensors"
expect_error truncated 1 "point past the end of the data" \
  train --data "$dir/ten.h5" "${model[@]}" --init-from "$dir/truncated.safetensors"
expect_error wider 1 "tensor conv1.weight is [8,3,3,3] in the file, [16,3,3,3] in this model" \
  train --data "$dir/ten.h5" --depth 18 --width 0.25 --batch-size 16 --threads 1 --init-from "$dir/src.safetensors"
expect_error exists 2 "exists: name another file, or add --force to replace it" \
  export --checkpoint "$ck" "$dir/src.safetensors"
expect_error folder 2 "is a folder: name the file to write in it" export --checkpoint "$ck" --force "$dir"
expect_error bad_format 2 "--format" export --checkpoint "$ck" --format onnx "$dir/x.onnx"
expect_error not_checkpoint 1 "checkpoint: $dir/garbage.safetensors: not an HDF5 file" \
  export --checkpoint "$dir/garbage.safetensors" "$dir/x.safetensors"
mkdir -p "$dir/ro" && chmod 555 "$dir/ro"
if [ "$(id -u)" -ne 0 ]; then
  expect_error read_only 1 "cannot write $dir/ro/x.safetensors" export --checkpoint "$ck" "$dir/ro/x.safetensors"
fi
"$bin" export --checkpoint "$ck" --force "$dir/src.safetensors" >/dev/null 2>&1 || fail "export --force"

[ "$failures" -eq 0 ] && echo "export_init_from: ok"
[ "$failures" -eq 0 ]
