#!/usr/bin/env bash
# The main job on a fresh machine: installs the dependencies, builds ringtrain, and trains on
# the default synthetic dataset (written to data/synthetic.h5 on first use). Without a GPU the
# trainer picks a configuration that finishes in a few minutes on the CPU and says so.
# Extra arguments go to `ringtrain train`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash env/install_deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target ringtrain
exec build/ringtrain train --metrics runs/quickstart-metrics.jsonl "$@"
