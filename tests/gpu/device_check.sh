#!/usr/bin/env bash
# The GPU check, for a machine with an NVIDIA GPU: the `gpu` tests (every CUDA op
# against the CPU backend, whole-model checks), compute-sanitizer memcheck of a small training
# run, the GPU training benchmark with PyTorch's number beside it where torch is installed, and
# a short table last. Runs from build-gpu/bundle.tar.gz (tests/gpu/pack.sh) when present, else
# from a build made here with the release preset. Logs go to $OUT (or build-gpu/check).
# Every step has its own time limit; the whole check stays under 10 minutes.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-build-gpu/check}
mkdir -p "$out"

if [ -f build-gpu/bundle.tar.gz ]; then
  tar -C build-gpu -xzf build-gpu/bundle.tar.gz
  bin=build-gpu/bundle/bin
  export LD_LIBRARY_PATH="$PWD/build-gpu/bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
  cmake --preset release -DRINGTRAIN_CUDA=ON >/dev/null &&
    cmake --build --preset release -j "$(nproc)" --target ringtrain_gpu_tests bench_train_gpu ||
    { echo "device_check: no bundle and no build possible here"; exit 1; }
  mkdir -p build-gpu/bin
  cp build/tests/ringtrain_gpu_tests build/bench/bench_train_gpu build-gpu/bin/
  bin=build-gpu/bin
fi

# cuDNN, cuBLAS and NCCL: from the CUDA toolkit or from the pip wheels PyTorch brings.
for dir in ${CUDA_HOME:-/usr/local/cuda}/lib64 /usr/local/cuda/lib64; do
  [ -d "$dir" ] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$dir"
done
for site in $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
  for dir in "$site"/nvidia/*/lib; do [ -d "$dir" ] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$dir"; done
done
export LD_LIBRARY_PATH
if [ -d build-gpu/bundle/lib-fallback ] && ! "$bin/ringtrain_gpu_tests" --gtest_list_tests >/dev/null 2>&1; then
  export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$PWD/build-gpu/bundle/lib-fallback"
fi
missing=$(ldd "$bin/ringtrain_gpu_tests" "$bin/bench_train_gpu" | grep "not found" | sort -u)
if [ -n "$missing" ]; then
  echo "device_check: shared libraries not found:"
  echo "$missing"
  exit 1
fi

device=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)
echo "== device: $device"

echo "== gpu tests"
timeout 240 "$bin/ringtrain_gpu_tests" --gtest_output="json:$out/gpu_tests.json" \
  >"$out/gpu_tests.log" 2>&1
tests_rc=$?
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]|Failure|error" "$out/gpu_tests.log" | head -60

echo "== compute-sanitizer memcheck (a few bf16 training steps)"
sanitizer=$(command -v compute-sanitizer || ls ${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer 2>/dev/null)
memcheck="not run (no compute-sanitizer)"
if [ -n "$sanitizer" ]; then
  timeout 150 "$sanitizer" --tool memcheck --error-exitcode 9 "$bin/ringtrain_gpu_tests" \
    --gtest_filter='CudaTraining.DeterministicAlgorithmsRepeatBitForBit' >"$out/memcheck.log" 2>&1
  case $? in
    0) memcheck="clean" ;;
    124) memcheck="timed out (150 s)" ;;
    *) memcheck="errors: see memcheck.log" ;;
  esac
  tail -5 "$out/memcheck.log"
fi

echo "== benchmark: ringtrain"
timeout 150 "$bin/bench_train_gpu" --depth 50 --batch-size 256 --steps 50 --warmup 10 \
  --workers 8 2>&1 | tee "$out/bench_train_gpu.log"

echo "== benchmark: PyTorch"
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  timeout 180 python3 bench/pytorch_train_gpu.py --depth 50 --batch-size 256 --steps 50 \
    --compile 2>&1 | grep -v Warning | tee "$out/pytorch_train_gpu.log"
else
  echo "PyTorch with CUDA not installed: no side-by-side number" | tee "$out/pytorch_train_gpu.log"
fi

rate() { grep -E "$1" "$2" 2>/dev/null | grep -oE '[0-9]+ img/s' | head -1; }
passed=$(grep -oE '\[  PASSED  \] [0-9]+' "$out/gpu_tests.log" | grep -oE '[0-9]+$')
failed=$(grep -oE '[0-9]+ FAILED TEST' "$out/gpu_tests.log" | grep -oE '^[0-9]+')
skipped=$(grep -oE '\[  SKIPPED \] [0-9]+' "$out/gpu_tests.log" | grep -oE '[0-9]+$')
echo
echo "== GPU check summary ($(date -u +%F), $device)"
printf '%-34s %s\n' "gpu tests passed / failed / skipped" \
  "${passed:-0} / ${failed:-0} / ${skipped:-0} (exit ${tests_rc})"
printf '%-34s %s\n' "memcheck" "$memcheck"
printf '%-34s %s\n' "ringtrain on-device data" "$(rate 'on-device' "$out/bench_train_gpu.log")"
printf '%-34s %s\n' "ringtrain real loader" "$(rate 'real loader' "$out/bench_train_gpu.log")"
printf '%-34s %s\n' "ringtrain loader, GPU augmentation" "$(rate 'GPU aug' "$out/bench_train_gpu.log")"
printf '%-34s %s\n' "ringtrain MFU" "$(grep -oE 'MFU [0-9.]+%' "$out/bench_train_gpu.log" | head -1)"
grep -E "^stem conv" "$out/bench_train_gpu.log"
printf '%-34s %s\n' "PyTorch eager (bf16, channels_last)" "$(rate 'eager' "$out/pytorch_train_gpu.log")"
printf '%-34s %s\n' "PyTorch torch.compile" "$(rate 'compile' "$out/pytorch_train_gpu.log")"
[ "$tests_rc" -eq 0 ]
