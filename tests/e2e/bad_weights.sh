#!/usr/bin/env bash
# `train --init-from` a file holding a NaN weight or a negative batch-norm running variance
# stops before training with exit 1 and one line naming the file and the tensor, not as a
# diverged run (exit 65) blamed on the learning rate.
#   tests/e2e/bad_weights.sh build/ringtrain
bin=$1
# shellcheck source=harness.sh
source "$(dirname "$0")/harness.sh"
model=(--depth 18 --width 0.0625 --batch-size 8 --threads 1 --workers 0 --no-eval
  --log-interval 0 --device cpu)

"$bin" data synth --out "$dir/d.h5" --train 32 --test 16 --height 8 --width 8 >/dev/null
"$bin" train "${model[@]}" --data "$dir/d.h5" --steps 1 --checkpoint-dir "$dir/ck" \
  >"$dir/train.log" 2>&1 || fail "the first run" "$dir/train.log"
"$bin" export --checkpoint "$dir/ck/ckpt-step00000001.h5" --format safetensors "$dir/m.safetensors" \
  >"$dir/export.log" 2>&1 || fail "export" "$dir/export.log"

# patched NAME VALUE: m.safetensors with the first value of tensor NAME set to VALUE, as
# $dir/NAME.safetensors.
patched() {
  python3 - "$dir/m.safetensors" "$dir/$1.safetensors" "$1" "$2" <<'PY'
import json, struct, sys
data = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack("<Q", data[:8])[0]
begin = json.loads(data[8:8 + n])[sys.argv[3]]["data_offsets"][0]
data[8 + n + begin:8 + n + begin + 4] = struct.pack("<f", float(sys.argv[4]))
open(sys.argv[2], "wb").write(data)
PY
}

# refused NAME VALUE EXPECTED: --init-from the file patched so exits 1 before the first step,
# with EXPECTED on stderr.
refused() {
  patched "$1" "$2" || { fail "patching $1"; return; }
  local file="$dir/$1.safetensors" rc=0
  "$bin" train "${model[@]}" --data "$dir/d.h5" --steps 2 --init-from "$file" \
    --checkpoint-dir "$dir/ck_$1" >"$dir/out" 2>"$dir/err" || rc=$?
  if [ "$rc" -ne 1 ]; then
    fail "--init-from with $1 = $2: exit status $rc, want 1" "$dir/err"
  elif ! grep -qF "$file: tensor $1 holds $3" "$dir/err"; then
    fail "--init-from with $1 = $2: stderr lacks '$file: tensor $1 holds $3'" "$dir/err"
  elif grep -q "step 1" "$dir/out" || [ -e "$dir/ck_$1/ckpt-step00000002.h5" ]; then
    fail "--init-from with $1 = $2: it trained" "$dir/out"
  else
    ok "$1 = $2: $(cat "$dir/err")"
  fi
}
refused conv1.weight nan "nan at index 0"
refused fc.bias inf "inf at index 0"
refused bn1.running_var -1 "-1 at index 0 of 4, a negative batch-norm running variance"

echo "bad_weights: $failures failed"
[ "$failures" -eq 0 ]
