#!/usr/bin/env bash
# ringtrain's CPU training step against PyTorch's, side by side and interleaved (the machine is
# shared and noisy): resnet50-cifar at batch 32 and resnet18-cifar at batch 64, 2 threads.
#   bash bench/compare_cpu.sh [rounds]
set -eu
cd "$(dirname "$0")/.."
rounds=${1:-2}
for r in $(seq "$rounds"); do
  for cfg in "50 32" "18 64"; do
    set -- $cfg
    build/bench/bench_train_cpu --depth "$1" --batch-size "$2" --steps 5 --warmup 1 --threads 2
    /usr/bin/python3 bench/pytorch_train_cpu.py --depth "$1" --batch-size "$2" --steps 5 --warmup 1 --threads 2
  done
done
