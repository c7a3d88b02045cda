#!/usr/bin/env bash
# Installs the dependencies, builds ringtrain (release preset, CUDA backend compiled where the
# toolkit is installed) and runs the whole test suite; then the numerics-sensitive tests (unit
# and MPI) again with oneDNN limited to its AVX2 kernels, so that a regression on AVX2-only CPUs
# fails on any machine; then the suite under AddressSanitizer + UBSan (debug preset: all but the
# tests of scripts and orchestration, which the release pass runs: lint, the Slurm and two-node
# jobs, the GPU check script, the bundle) and the loader and thread-pool tests under
# ThreadSanitizer. RINGTRAIN_SKIP_SANITIZERS=1 skips the last two. This is what .ci/run calls.
# The presets build with warnings as errors, so this reuses the release build that
# jobs/quickstart.sh made. Each phase's time is printed as it ends, and all of them at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

phases=()
report() {
  local line
  echo "run_all: phase times (s):"
  for line in "${phases[@]}"; do echo "run_all:   $line"; done
}
trap report EXIT

# phase NAME COMMAND...: runs COMMAND, then prints and records how long it took.
phase() {
  local name=$1 start=$SECONDS
  shift
  "$@"
  phases+=("$(printf '%-18s %5d' "$name" $((SECONDS - start)))")
  echo "run_all: $name: $((SECONDS - start)) s"
}

# build PRESET: configures and builds the preset.
build() {
  cmake --preset "$1" >/dev/null
  cmake --build --preset "$1" -j "$(nproc)"
}

# Note: the CUDA sources are compiled to prove they compile, for the oldest architecture CUDA 13
# supports (sm_75) and as PTX for the newest (compute_120): a third of the default list's time.
# A build for use compiles the default list (cmake/RingtrainCuda.cmake); CUDAARCHS overrides both.
export CUDAARCHS="${CUDAARCHS:-75-real;120-virtual}"

phase deps bash env/install_deps.sh
phase release-build build release
phase release-tests ctest --preset release -j "$(nproc)"
phase avx2-tests ctest --preset release-avx2 -j "$(nproc)"
if [ "${RINGTRAIN_SKIP_SANITIZERS:-0}" != 1 ]; then
  phase asan-build build debug
  phase asan-tests ctest --preset debug -j "$(nproc)"
  phase tsan-build build tsan
  phase tsan-tests ctest --preset tsan
fi
phases+=("$(printf '%-18s %5d' total "$SECONDS")")
