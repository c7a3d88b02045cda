#!/usr/bin/env bash
# Every bad input gives one clear "ringtrain: error:" line (or CLI11's usage error) and a
# non-zero exit that is not a crash (no signal, no core dump).
#   tests/e2e/cli_errors.sh build/ringtrain build/tests/write_bad_datasets
bin=$1
writer=$2
# shellcheck source=harness.sh
source "$(dirname "$0")/harness.sh"

# expect_error NAME EXPECTED_TEXT ARGS...
expect_error() {
  local name=$1 expected=$2
  shift 2
  local rc=0
  "$bin" "$@" >"$dir/out" 2>"$dir/err" || rc=$?
  if [ "$rc" -eq 0 ] || [ "$rc" -ge 128 ]; then
    fail "$name: exit status $rc (want a clean non-zero exit)" "$dir/err"; return
  fi
  if ! grep -qF -- "$expected" "$dir/err"; then
    fail "$name: stderr lacks '$expected'" "$dir/err"; return
  fi
  if [ "$(grep -c . "$dir/err")" -gt 3 ]; then
    fail "$name: more than a short error" "$dir/err"; return
  fi
  ok "$name: $(head -n 1 "$dir/err")"
}

"$writer" "$dir"
for f in "$dir"/*.h5; do
  name=$(basename "$f" .h5)
  expect_error "$name" "$(cat "$dir/$name.expect")" train --data "$f" --steps 1
done
expect_error missing_file "no such file" train --data "$dir/absent.h5" --steps 1
expect_error unknown_flag "--frobnicate" train --frobnicate
expect_error zero_batch "--batch-size" train --batch-size 0
expect_error negative_batch "--batch-size" train --batch-size -4
expect_error bad_depth "--depth" train --depth 42
expect_error dp_uneven_batch "splits the batch of 33 evenly over 2 devices" train --mode dp --devices 2 --batch-size 33 --steps 1
expect_error dp_share_device_without_dp "--dp-share-device is for --mode dp" train --dp-share-device --steps 1
expect_error cuda_graph_on_cpu "--cuda-graph is for --device cuda" train --device cpu --cuda-graph --steps 1
expect_error no_subcommand "subcommand" 
expect_error bad_amp "--amp" train --amp fp8
if ! nvidia-smi -L >/dev/null 2>&1; then
  expect_error cuda_without_gpu "--device cuda, but" train --device cuda --steps 1
fi

# The converter refuses a truncated record and leaves no output file behind.
mkdir -p "$dir/cifar"
for i in 1 2 3 4 5; do head -c 3073 /dev/zero >"$dir/cifar/data_batch_$i.bin"; done
head -c 3000 /dev/zero >"$dir/cifar/test_batch.bin"
expect_error cifar_truncated "test_batch.bin: 3000 bytes is not a whole number" data convert "$dir/cifar" --out "$dir/out.h5"
if ls "$dir"/out.h5* >/dev/null 2>&1; then fail "cifar_truncated: left $(ls "$dir"/out.h5*)"; fi
expect_error inspect_missing "no such file" data inspect "$dir/absent.h5"

echo "cli_errors: $failures failed"
[ "$failures" -eq 0 ]
