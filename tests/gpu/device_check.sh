#!/usr/bin/env bash
# The GPU check: nine stages for one short turn on a machine with an NVIDIA GPU, each under its
# own hard deadline (they sum to under 7 minutes), each recorded the moment it ends, so that a
# check killed half-way still leaves what it found.
#
#   bash tests/gpu/device_check.sh              # on the GPU machine, build-gpu/ carried
#   bash tests/gpu/device_check.sh --only tests,memcheck    # a rerun of some stages
#   bash tests/gpu/device_check.sh --dry-run    # anywhere: every stage skipped, same outputs
#
# Stages, in order (tests/gpu/README.md says what each proves):
#   env       ldd of every binary, nvidia-smi, driver / CUDA / cuDNN / cuBLAS / NCCL versions
#   cudnn     cudnn_probe: cuDNN's algorithms for every ResNet-18/-50 convolution
#   tests     each ringtrain_gpu_tests test in its own process, failures rerun synchronously
#   memcheck  compute-sanitizer memcheck of the CUDA op tests
#   cifar10   ResNet-18, one epoch of real CIFAR-10 (JPEG class folders in $CIFAR_TARBALL,
#             default build-gpu/cifar10.tar.gz)
#   resnet50  ResNet-50 bf16 throughput: on-device data, real loader with 0 and N workers
#   dp        ResNet-50 bf16 under DataParallel: 2 replicas sharing the GPU, its phase table
#   pytorch   PyTorch eager on the same model and device, for the ratio
#   mpi       ringtrain train under mpirun -np 1
#
# Output, in $OUT (default build-gpu/check): results.tsv (stage, result, key number, seconds; one
# line appended per stage as it ends), <stage>.log, tests/ (one log per GPU test), summary.md.
# Binaries: from $DEVICE_CHECK_BIN when set, else build-gpu/bundle.tar.gz (tests/gpu/pack.sh),
# else build/.
# Exit status: 0 when no stage failed, 1 when one did, 2 on a usage error, 3 without a GPU.
set -u
set -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SELF="$ROOT/tests/gpu/device_check.sh"
# name:deadline in seconds. Each stage also gets up to 2 s to die after its deadline:
# 9 x 2 s on top of these 400 s keeps the whole check under 7 minutes.
STAGES=(env:20 cudnn:30 tests:110 memcheck:35 cifar10:50 resnet50:65 dp:25 pytorch:35 mpi:30)
TEST_DEADLINE=30 # one GPU test, and again its rerun

# ---- helpers run inside a stage (STAGE_NAME, STAGE_DEADLINE, STAGE_START, OUT, WORK, BIN set) ----

# Records the stage's key number.
key() { printf '%s\n' "$*" >"$OUT/$STAGE_NAME.key"; }
# Ends the stage as failed, saying why.
fail() {
  printf 'FAIL: %s\n' "$*" | tee "$OUT/$STAGE_NAME.result"
  exit 1
}
# Ends the stage as skipped, saying why.
skip() {
  printf 'skipped: %s\n' "$*" | tee "$OUT/$STAGE_NAME.result"
  exit 0
}
# Runs a command under what is left of the stage's deadline, less 3 s to write the result: every
# command of a stage ends before the stage's own deadline strikes.
within() {
  local left=$((STAGE_DEADLINE - (SECONDS - STAGE_START) - 3))
  [ "$left" -ge 1 ] || left=1
  timeout --kill-after=2 "$left" "$@"
}
need_bin() {
  [ -x "$BIN/$1" ] || fail "no $1 binary in $BIN (rebuild the bundle: tests/gpu/pack.sh)"
}
workers() { local n; n=$(nproc); echo $((n < 8 ? n : 8)); }
# The first capture group of an extended regex (no '#' in it) in a file, or "?".
grab() { sed -nE "s#.*$1.*#\\1#p" "$2" 2>/dev/null | head -1 | grep . || echo "?"; }

# ---- the stages --------------------------------------------------------------------------------

stage_env() {
  local problems=() bin lib driver runtime
  for bin in ringtrain_gpu_tests bench_train_gpu cudnn_probe ringtrain; do
    if [ ! -x "$BIN/$bin" ]; then
      problems+=("$bin: not in $BIN")
      continue
    fi
    echo "-- ldd $bin"
    ldd "$BIN/$bin"
    for lib in $(ldd "$BIN/$bin" | awk '/not found/{print $1}'); do
      problems+=("$bin: $lib not found")
    done
  done
  echo "-- nvidia-smi"
  within nvidia-smi || problems+=("nvidia-smi failed")
  echo "-- versions"
  within nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv
  if [ -x "$BIN/cudnn_probe" ]; then
    within "$BIN/cudnn_probe" --versions | tee "$WORK/versions" ||
      problems+=("cudnn_probe --versions failed")
    driver=$(grab 'CUDA driver API ([0-9]+),' "$WORK/versions")
    runtime=$(grab 'runtime ([0-9]+) ' "$WORK/versions")
    if [ "$driver" != "?" ] && [ "$runtime" != "?" ] && [ "$driver" -lt "$runtime" ]; then
      problems+=("the driver supports CUDA $driver, the binaries need $runtime: a newer driver")
    fi
  fi
  if [ -x "$BIN/ringtrain" ]; then
    echo "-- ringtrain starts: one CPU step of a tiny model (MPI_Init as a singleton)"
    (cd "$WORK" && within "$BIN/ringtrain" data synth --out tiny.h5 --train 64 --test 16 &&
      within "$BIN/ringtrain" train --device cpu --data tiny.h5 --depth 18 --width 0.125 \
        --steps 1 --batch-size 8 --threads 1 --workers 0 --no-eval) ||
      problems+=("ringtrain train cannot start (an Open MPI singleton needs orted on PATH)")
  fi
  key "${#problems[@]} problems"
  [ ${#problems[@]} -eq 0 ] || fail "$(IFS=';'; echo "${problems[*]}")"
}

stage_cudnn() {
  need_bin cudnn_probe
  within "$BIN/cudnn_probe"
  local rc=$?
  key "$(grab ' ([0-9]+) NONE' "$OUT/cudnn.log") NONE"
  case $rc in
    0) ;;
    1) fail "$(grab '\(([0-9]+) in NHWC' "$OUT/cudnn.log") NHWC passes without an algorithm" ;;
    124 | 137) fail "deadline" ;;
    *) fail "cudnn_probe exit $rc" ;;
  esac
}

# One GPU test in its own process; a failure again with CUDA_LAUNCH_BLOCKING=1. Prints
# "ok|FAIL NAME" and appends NAME, first exit, rerun exit, seconds to gpu_tests.tsv.
run_one_test() {
  local name=$1 file start rc rerun="-"
  file="$OUT/tests/$(echo "$name" | tr '/' '_')"
  start=$SECONDS
  RINGTRAIN_REQUIRE_GPU=1 within timeout "$TEST_DEADLINE" "$BIN/ringtrain_gpu_tests" \
    --gtest_filter="$name" >"$file.log" 2>&1
  rc=$?
  if [ "$rc" -ne 0 ]; then
    CUDA_LAUNCH_BLOCKING=1 RINGTRAIN_REQUIRE_GPU=1 within timeout "$TEST_DEADLINE" \
      "$BIN/ringtrain_gpu_tests" --gtest_filter="$name" >"$file.blocking.log" 2>&1
    rerun=$?
  fi
  printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$rerun" $((SECONDS - start)) >>"$OUT/gpu_tests.tsv"
  if [ "$rc" -eq 0 ]; then
    echo "ok   $name"
  else
    echo "FAIL $name (exit $rc; rerun with CUDA_LAUNCH_BLOCKING=1: exit $rerun)"
  fi
  return "$rc"
}

stage_tests() {
  need_bin ringtrain_gpu_tests
  mkdir -p "$OUT/tests"
  printf 'test\texit\tblocking_rerun_exit\tseconds\n' >"$OUT/gpu_tests.tsv"
  local names=() failed=() name passed=0
  mapfile -t names < <(within "$BIN/ringtrain_gpu_tests" --gtest_list_tests |
    awk '/^[^ ]/{suite=$1} /^  /{print suite $1}')
  [ ${#names[@]} -gt 0 ] || fail "ringtrain_gpu_tests --gtest_list_tests listed no tests"
  for name in "${names[@]}"; do
    if run_one_test "$name"; then passed=$((passed + 1)); else failed+=("$name"); fi
    key "$passed/${#names[@]} passed"
  done
  [ ${#failed[@]} -le 3 ] || failed=("${failed[@]:0:3}" "...")
  [ ${#failed[@]} -eq 0 ] || fail "$((${#names[@]} - passed)) failed: ${failed[*]}"
}

stage_memcheck() {
  need_bin ringtrain_gpu_tests
  local sanitizer="" candidate rc
  for candidate in "$(command -v compute-sanitizer)" \
    "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer" \
    "$ROOT/build-gpu/compute-sanitizer/compute-sanitizer"; do
    if [ -z "$sanitizer" ] && [ -x "$candidate" ]; then sanitizer=$candidate; fi
  done
  [ -n "$sanitizer" ] || skip "no compute-sanitizer here (it comes with the CUDA toolkit)"
  RINGTRAIN_REQUIRE_GPU=1 within "$sanitizer" --tool memcheck --error-exitcode 9 --print-limit 20 \
    "$BIN/ringtrain_gpu_tests" --gtest_filter='*CudaOps*'
  rc=$?
  key "$(grab 'ERROR SUMMARY: ([0-9]+) error' "$OUT/memcheck.log") errors"
  case $rc in
    0) ;;
    9) fail "memcheck found errors (memcheck.log)" ;;
    124 | 137) fail "deadline" ;;
    *) fail "the CUDA op tests failed under memcheck (exit $rc)" ;;
  esac
}

# The class folders of the tarball: the folder holding train/ (and test/).
cifar_folder() {
  local train
  train=$(find "$1" -maxdepth 3 -type d -name train | head -1)
  [ -n "$train" ] && dirname "$train"
}

stage_cifar10() {
  need_bin ringtrain
  # Note: CLI11 answers --help after an unknown subcommand with the parent's help, exit 0. The
  # help is read whole first: grep -q in a pipe could end it early (pipefail).
  local help
  help=$(within "$BIN/ringtrain" data import-images --help 2>&1)
  grep -q 'Usage: .*data import-images' <<<"$help" || skip "no image importer in this build"
  local tarball=${CIFAR_TARBALL:-$ROOT/build-gpu/cifar10.tar.gz} images
  [ -f "$tarball" ] || skip "no CIFAR-10 tarball $tarball: set CIFAR_TARBALL to the carried .tar.gz"
  mkdir -p "$WORK/cifar"
  within tar -C "$WORK/cifar" -xzf "$tarball" || fail "cannot unpack $tarball"
  images=$(cifar_folder "$WORK/cifar") || fail "no train/ folder in $tarball"
  within "$BIN/ringtrain" data import-images "$images" "$WORK/cifar10.h5" ||
    fail "ringtrain data import-images failed"
  (cd "$WORK" && within "$BIN/ringtrain" train --device cuda --data "$WORK/cifar10.h5" \
    --depth 18 --epochs 1 --amp bf16 --workers "$(workers)" \
    --summary "$OUT/cifar10_summary.json") ||
    fail "ringtrain train exit $?"
  local acc rate
  acc=$(grab 'final test accuracy ([0-9.]+)%' "$OUT/cifar10.log")
  rate=$(grab 'summary: .*, ([0-9.]+) img/s' "$OUT/cifar10.log")
  key "test accuracy $acc%, $rate img/s"
  # Note: one epoch of ResNet-18 lands well above 10% (chance); 20% leaves room for a bad seed.
  awk -v a="$acc" 'BEGIN{exit !(a > 20)}' ||
    fail "test accuracy $acc% after one epoch (chance: 10%)"
}

# ringtrain train on the synthetic set with W loader threads, 2 epochs; prints the second
# epoch's "img/s (GPU util%)" from the metrics file.
loader_rate() {
  local w=$1 metrics="$OUT/resnet50_workers$1.jsonl"
  echo "-- ringtrain train, real loader, --workers $w"
  (cd "$WORK" && within "$BIN/ringtrain" train --device cuda --data "$WORK/synth.h5" --depth 50 \
    --batch-size 256 --amp bf16 --workers "$w" --epochs 2 --no-eval --metrics "$metrics") >&2 ||
    return 1
  python3 - "$metrics" <<'EOF'
import json, sys
last = [json.loads(l) for l in open(sys.argv[1])][-1]
util = last.get("gpu_util_mean")
print(f"{last['images_per_s']:.0f} img/s (GPU {'n/a' if util is None else f'{util:.0f}%'})")
EOF
}

stage_resnet50() {
  need_bin bench_train_gpu
  need_bin ringtrain
  local n on_device zero many
  n=$(workers)
  echo "-- bench_train_gpu (on-device data, the loader, the loader with GPU augmentation)"
  within "$BIN/bench_train_gpu" --depth 50 --batch-size 256 --amp bf16 --workers "$n" \
    --steps 30 --warmup 10 || fail "bench_train_gpu exit $?"
  on_device=$(grab 'on-device data +([0-9]+) img/s' "$OUT/resnet50.log")
  echo "$on_device" >"$OUT/resnet50.on_device"
  key "on-device $on_device img/s"
  within "$BIN/ringtrain" data synth --out "$WORK/synth.h5" --train 25600 --test 256 ||
    fail "ringtrain data synth exit $?"
  zero=$(loader_rate 0) || fail "ringtrain train --workers 0 failed"
  key "on-device $on_device img/s; loader, 0 workers: $zero"
  many=$(loader_rate "$n") || fail "ringtrain train --workers $n failed"
  key "on-device $on_device img/s; loader, 0 workers: $zero; $n workers: $many"
}

# Note: two replicas share GPU 0 (--dp-share-device), so the stage runs on a one-GPU machine;
# its img/s is not DataParallel's on two GPUs, but every phase of the step runs on the device.
stage_dp() {
  need_bin ringtrain
  # Note: the help is read whole first: grep -q in a pipe would end it early (pipefail).
  local help data=$WORK/synth.h5
  help=$(within "$BIN/ringtrain" train --help 2>&1)
  grep -q -- '--dp-share-device' <<<"$help" ||
    skip "this build's DataParallel has no --dp-share-device"
  if [ ! -f "$data" ]; then
    data=$WORK/dp_synth.h5
    within "$BIN/ringtrain" data synth --out "$data" --train 5120 --test 256 ||
      fail "ringtrain data synth exit $?"
  fi
  echo "-- ringtrain train --mode dp --devices 2 --dp-share-device (20 steps)"
  (cd "$WORK" && within "$BIN/ringtrain" train --device cuda --mode dp --devices 2 \
    --dp-share-device --data "$data" --depth 50 --batch-size 256 --amp bf16 --workers 0 \
    --steps 20 --no-eval --summary "$OUT/dp_summary.json") ||
    fail "ringtrain train --mode dp exit $?"
  key "$(grab 'summary: .*, ([0-9.]+) img/s' "$OUT/dp.log") img/s"
}

stage_pytorch() {
  python3 -c 'import torch' 2>/dev/null || skip "PyTorch is not installed here"
  within python3 -c 'import torch; assert torch.cuda.is_available(), "no CUDA device"
print("torch", torch.__version__, "CUDA", torch.version.cuda, "cuDNN",
      torch.backends.cudnn.version(), "NCCL", torch.cuda.nccl.version())' ||
    skip "PyTorch sees no CUDA device"
  within python3 "$ROOT/bench/pytorch_train_gpu.py" --depth 50 --batch-size 256 --steps 30 \
    --warmup 10 || fail "pytorch_train_gpu.py exit $?"
  local eager ours
  eager=$(grab 'eager .*: +([0-9]+) img/s' "$OUT/pytorch.log")
  ours=$(cat "$OUT/resnet50.on_device" 2>/dev/null || echo "?")
  key "eager $eager img/s; ringtrain on-device / eager: $(awk -v a="$ours" -v b="$eager" \
    'BEGIN{if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "?"}')"
}

stage_mpi() {
  need_bin ringtrain
  command -v mpirun >/dev/null || skip "no mpirun on this machine"
  echo "-- mpirun -np 1 ringtrain train --device cuda (20 steps)"
  (cd "$WORK" && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 within mpirun -np 1 \
    "$BIN/ringtrain" train --device cuda --depth 18 --steps 20 --amp bf16 --no-eval \
    --synth-path "$WORK/mpi_synthetic.h5") || fail "mpirun -np 1 ringtrain train exit $?"
  key "$(grab 'summary: .*, ([0-9.]+) img/s' "$OUT/mpi.log") img/s"
}

# ---- the driver ----------------------------------------------------------------------------------

# Appends one result line and shows it.
record() {
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$OUT/results.tsv"
  printf '== %-9s %-40s %s (%s s)\n' "$1" "$2" "$3" "$4"
}

# run_stage NAME DEADLINE CMD...: CMD under a hard deadline, its output in $OUT/NAME.log, its
# result appended to results.tsv at once.
run_stage() {
  local name=$1 deadline=$2 start=$SECONDS rc result
  shift 2
  rm -f "$OUT/$name.key" "$OUT/$name.result"
  echo "== $name: running (deadline $deadline s)"
  STAGE_NAME=$name STAGE_DEADLINE=$deadline timeout --kill-after=2 "$deadline" "$@" \
    >"$OUT/$name.log" 2>&1
  rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    result="FAIL: deadline $deadline s"
  elif [ -f "$OUT/$name.result" ]; then
    result=$(head -1 "$OUT/$name.result")
  elif [ "$rc" -eq 0 ]; then
    result=ok
  else
    result="FAIL: exit $rc"
  fi
  tail -n 8 "$OUT/$name.log" | sed 's/^/   | /'
  record "$name" "$result" "$(cat "$OUT/$name.key" 2>/dev/null || echo -)" $((SECONDS - start))
}

# Extracts the bundle (or finds a build) and sets BIN and LD_LIBRARY_PATH for the stages.
prepare_binaries() {
  local dir site
  if [ -n "${DEVICE_CHECK_BIN:-}" ]; then
    BIN=$(cd "$DEVICE_CHECK_BIN" && pwd) || BIN=$DEVICE_CHECK_BIN
  elif [ -f "$ROOT/build-gpu/bundle.tar.gz" ]; then
    timeout 60 tar -C "$ROOT/build-gpu" -xzf "$ROOT/build-gpu/bundle.tar.gz" ||
      echo "device_check: cannot unpack build-gpu/bundle.tar.gz"
    BIN="$ROOT/build-gpu/bundle/bin"
    # The bundle's Open MPI (mpirun, orted, plugins) relocated, its libraries and the wheels'.
    # shellcheck disable=SC1091  # written by pack.sh into the unpacked bundle
    source "$ROOT/build-gpu/bundle/env.sh" || echo "device_check: cannot source bundle/env.sh"
  else
    BIN="$WORK/bin"
    mkdir -p "$BIN"
    for dir in tests/ringtrain_gpu_tests tests/cudnn_probe bench/bench_train_gpu ringtrain; do
      [ -x "$ROOT/build/$dir" ] && ln -s "$ROOT/build/$dir" "$BIN/"
    done
  fi
  # cuDNN, cuBLAS and NCCL: from the CUDA toolkit or from the pip wheels PyTorch brings.
  for dir in "${CUDA_HOME:-/usr/local/cuda}/lib64" /usr/local/cuda/lib64; do
    [ -d "$dir" ] && LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$dir"
  done
  for site in $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
    for dir in "$site"/nvidia/*/lib; do
      [ -d "$dir" ] && LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$dir"
    done
  done
  export LD_LIBRARY_PATH BIN
  # Note: the bundle's libstdc++ only where the machine's own is too old for the binaries.
  if [ -d "$ROOT/build-gpu/bundle/lib-fallback" ] &&
    ! timeout 20 "$BIN/ringtrain_gpu_tests" --gtest_list_tests >/dev/null 2>&1; then
    export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$ROOT/build-gpu/bundle/lib-fallback"
  fi
}

# Stops with exit 3 where there is no GPU: nothing a stage could do there.
require_gpu() {
  local gpus
  if ! command -v nvidia-smi >/dev/null; then
    echo "device_check: error: no GPU here: nvidia-smi is not installed" \
      "(--dry-run checks the script alone)" >&2
    exit 3
  fi
  gpus=$(timeout 30 nvidia-smi -L 2>&1)
  if ! grep -q '^GPU ' <<<"$gpus"; then
    echo "device_check: error: no GPU here: nvidia-smi -L says: ${gpus:-nothing}" \
      "(--dry-run checks the script alone)" >&2
    exit 3
  fi
  DEVICE=$(timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total \
    --format=csv,noheader 2>/dev/null | head -1)
}

# The table of results.tsv, as markdown, to stdout and summary.md.
write_summary() {
  {
    echo "# GPU check, $(date -u '+%F %H:%M UTC')"
    echo
    echo "- device: $DEVICE"
    echo "- command: tests/gpu/device_check.sh $ARGS"
    echo "- commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo
    echo "| stage | result | key number | seconds |"
    echo "|---|---|---|---|"
    tail -n +2 "$OUT/results.tsv" | awk -F'\t' '{printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4}'
    echo
    echo "total: $((SECONDS - CHECK_START)) s"
  } | tee "$OUT/summary.md"
}

usage() {
  echo "usage: device_check.sh [--dry-run] [--only STAGE[,STAGE...]]   stages: ${STAGES[*]%%:*}" >&2
  exit 2
}

main() {
  local dry=0 only="" entry name
  ARGS="$*"
  while [ $# -gt 0 ]; do
    case $1 in
      --dry-run) dry=1 ;;
      --only) [ $# -ge 2 ] || usage; only=",$2,"; shift ;;
      --stage)
        if [ $# -ne 2 ] || ! declare -F "stage_$2" >/dev/null; then usage; fi
        STAGE_START=$SECONDS
        "stage_$2"
        exit
        ;;
      *) usage ;;
    esac
    shift
  done
  for name in ${only//,/ }; do
    [[ " ${STAGES[*]%%:*} " == *" $name "* ]] || usage
  done
  OUT=${OUT:-$ROOT/build-gpu/check}
  mkdir -p "$OUT" || { echo "device_check: error: cannot create $OUT" >&2; exit 2; }
  OUT=$(cd "$OUT" && pwd)
  export OUT
  CHECK_START=$SECONDS
  DEVICE="none (dry run)"
  [ "$dry" -eq 1 ] || require_gpu
  WORK=$(mktemp -d) || { echo "device_check: error: mktemp -d failed" >&2; exit 2; }
  trap 'rm -rf "$WORK"' EXIT
  export WORK
  [ "$dry" -eq 1 ] || prepare_binaries
  printf 'stage\tresult\tkey\tseconds\n' >"$OUT/results.tsv"
  for entry in "${STAGES[@]}"; do
    name=${entry%%:*}
    if [ "$dry" -eq 1 ]; then
      record "$name" "skipped: no GPU (dry run)" - 0
    elif [ -n "$only" ] && [[ $only != *",$name,"* ]]; then
      record "$name" "skipped: not in --only" - 0
    else
      run_stage "$name" "${entry#*:}" bash "$SELF" --stage "$name"
    fi
  done
  echo
  write_summary
  ! cut -f2 "$OUT/results.tsv" | grep -q '^FAIL'
}

main "$@"
