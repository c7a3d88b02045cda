#!/usr/bin/env bash
# Installs the dependencies, builds ringtrain (release preset, CUDA backend compiled where the
# toolkit is installed) and runs the whole test suite; then the whole suite again under
# AddressSanitizer + UBSan (debug preset) and the loader and thread-pool tests under
# ThreadSanitizer. RINGTRAIN_SKIP_SANITIZERS=1 skips the last two. This is what .ci/run calls.
# Every configuration is built with RINGTRAIN_WERROR=ON: a compiler warning fails CI (the presets
# leave it off, so that a user's newer compiler does not break their build).
set -euo pipefail
cd "$(dirname "$0")/.."
bash env/install_deps.sh
cmake --preset release -DRINGTRAIN_WERROR=ON
cmake --build --preset release -j "$(nproc)"
ctest --preset release -j "$(nproc)"
if [ "${RINGTRAIN_SKIP_SANITIZERS:-0}" != 1 ]; then
  cmake --preset debug -DRINGTRAIN_WERROR=ON >/dev/null
  cmake --build --preset debug -j "$(nproc)"
  ctest --preset debug -j "$(nproc)"
  cmake --preset tsan -DRINGTRAIN_WERROR=ON >/dev/null
  cmake --build --preset tsan -j "$(nproc)"
  ctest --preset tsan
fi
