#!/usr/bin/env bash
# `ringtrain train` as a user runs it: writes a small synthetic dataset with `data synth`,
# trains two short epochs, and checks the progress, the summary and the metrics file.
#   tests/e2e/train_quick.sh build/ringtrain
set -eu
bin=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$bin" data synth --out "$dir/small.h5" --train 512 --test 256 --height 16 --width 16
"$bin" train --data "$dir/small.h5" --depth 18 --width 0.125 --batch-size 32 --epochs 2 \
  --metrics "$dir/metrics.jsonl" --log-interval 0 >"$dir/log" 2>&1
cat "$dir/log"
grep -q "epoch 2/2 step 32/32" "$dir/log"
grep -q "summary: 32 steps" "$dir/log"
[ "$(wc -l <"$dir/metrics.jsonl")" -eq 2 ]
grep -q '"test_accuracy"' "$dir/metrics.jsonl"
# The same file streamed from disk in windows, as a file larger than memory would be.
"$bin" train --data "$dir/small.h5" --depth 18 --width 0.125 --batch-size 32 --steps 20 \
  --memory-budget-mb 0.2 --log-interval 0 >"$dir/log" 2>&1
grep -q "streaming windows of 260 images" "$dir/log"
grep -q "summary: 20 steps" "$dir/log"
# DataParallel over 2 CPU devices in one process.
"$bin" train --data "$dir/small.h5" --depth 18 --width 0.125 --batch-size 32 --steps 10 \
  --mode dp --devices 2 --log-interval 0 >"$dir/log" 2>&1
grep -q "on DataParallel over 2 CPU devices" "$dir/log"
grep -q "summary: 10 steps" "$dir/log"
echo "train_quick: ok"
