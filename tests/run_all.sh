#!/usr/bin/env bash
# Installs the dependencies, builds ringtrain (release preset, CUDA backend compiled where the
# toolkit is installed) and runs the whole test suite, then the loader and thread-pool tests
# again under ThreadSanitizer. This is what .ci/run calls.
set -euo pipefail
cd "$(dirname "$0")/.."
bash env/install_deps.sh
cmake --preset release
cmake --build --preset release -j "$(nproc)"
ctest --preset release -j "$(nproc)"
if [ "${RINGTRAIN_SKIP_TSAN:-0}" != 1 ]; then
  cmake --preset tsan >/dev/null
  cmake --build --preset tsan -j "$(nproc)"
  ctest --preset tsan
fi
