#!/usr/bin/env bash
# ringtrain's CPU training step against PyTorch's, side by side and interleaved (the machine is
# shared and noisy): resnet50-cifar at batch 32, resnet18-cifar at batch 64 and at width 0.25,
# 2 threads. A second ringtrain benchmark binary (an older build) runs interleaved too when given.
#   bash bench/compare_cpu.sh [rounds] [baseline bench_train_cpu]
set -eu
cd "$(dirname "$0")/.."
rounds=${1:-2}
baseline=${2:-}
for r in $(seq "$rounds"); do
  for cfg in "50 32 1" "18 64 1" "18 64 0.25"; do
    set -- $cfg
    args=(--depth "$1" --batch-size "$2" --width "$3" --steps 5 --warmup 1 --threads 2)
    if [ -n "$baseline" ]; then
      echo -n "baseline: "
      "$baseline" "${args[@]}"
    fi
    build/bench/bench_train_cpu "${args[@]}"
    /usr/bin/python3 bench/pytorch_train_cpu.py "${args[@]}"
  done
done
