#!/usr/bin/env bash
# The GPU check: twelve stages for one short turn on a machine with an NVIDIA GPU, each under its
# own hard deadline, the whole check under 7 minutes (420 s), each recorded the moment it ends, so
# that a check killed half-way still leaves what it found.
#
#   bash tests/gpu/device_check.sh              # on the GPU machine, build-gpu/ carried
#   bash tests/gpu/device_check.sh --only tests,memcheck    # a rerun of some stages
#   bash tests/gpu/device_check.sh --dry-run    # anywhere: every stage skipped, same outputs
#
# Stages, in order (tests/gpu/README.md says what each proves):
#   env       ldd of every binary, nvidia-smi, driver / CUDA / cuDNN / cuBLAS / NCCL versions
#   cudnn     cudnn_probe: cuDNN's algorithms for every ResNet-18/-50 convolution
#   warm      fills the shared cuDNN algorithm cache with the configurations the later stages run
#   tests     ringtrain_gpu_tests in one process, then each test that did not pass alone, and
#             its failures rerun synchronously
#   memcheck  compute-sanitizer memcheck of our own kernels' op tests (f32, no convolutions)
#   cifar10   ResNet-18, one epoch of real CIFAR-10 (JPEG class folders in $CIFAR_TARBALL,
#             default build-gpu/cifar10.tar.gz)
#   resnet50  ResNet-50 bf16 throughput: on-device data, real loader with 0 and N workers
#   dp        ResNet-50 bf16 under DataParallel: 2 replicas sharing the GPU, its phase table
#   pytorch   PyTorch eager on the same model and device, for the ratio
#   mpi       ringtrain train under mpirun -np 1
#   profile   a step's kernel time grouped, ringtrain (under nsys) beside PyTorch eager; clocks
#   compile   torch.compile beside eager, the rate to reach
#
# Output, in $OUT (default build-gpu/check), six files, because the lent machine returns at most
# 8 files, 2 folders deep: summary.md (rewritten after every stage), results.tsv (stage, result,
# key number, seconds), gpu_tests.tsv, perf.tsv (stage, configuration, metric, value),
# cudnn_algos.tsv and logs.tgz (every log, re-packed after every stage). Scratch files live in a
# work folder outside $OUT.
# This file is the driver (deadlines, outputs, --only, --dry-run); the stages are in
# device_check_stages.sh beside it.
# Binaries: from $DEVICE_CHECK_BIN when set, else build-gpu/bundle.tar.xz (tests/gpu/pack.sh),
# else build/.
# Exit status: 0 when no stage failed, 1 when one did, 2 on a usage error, 3 without a GPU.
# shellcheck source-path=SCRIPTDIR
set -u
set -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SELF="$ROOT/tests/gpu/device_check.sh"
# name:deadline in seconds, and what the stage runs with the seconds it took on an H200 in the
# first run (2026-12-04: 108 s in all; docs/perf/gpu-runs/). The first ten deadlines sum to 390
# s; with up to 2 s for each stage to die after its deadline, 410 s. CHECK_LIMIT cuts a late
# stage's deadline short (or skips it) should the start-up have taken long; profile and compile
# come last and get what the stages before them left (the first run's left about 300 s).
STAGES=(
  env:15      # ldd x4, nvidia-smi, cudnn_probe --versions, 1 CPU step of a tiny model: 2 s
  cudnn:30    # cudnn_probe --find: 696 heuristic queries, the 348 NHWC ones measured: 7 s
  warm:40     # 3 x ringtrain train, 2 steps each, every convolution searched once: 11 s
  tests:50    # 43 tests in one process, those that did not pass alone, reruns capped: 5 s
  memcheck:25 # a probe of one test, then 9 f32 op tests under memcheck: 2 s
  cifar10:40  # untar, import 60,000 JPEGs on 16 cores, 1 epoch of ResNet-18 b256 + eval: 7 s
  resnet50:90 # bench_train_gpu 3 x 40 steps, synth 25,600 images, 2 x 2 epochs train: 37 s;
              # since, 3 rounds of eager and graph steps and a third train, --cuda-graph: untimed
  dp:20       # 20 steps of 2 replicas x 128, ResNet-50, one GPU: 5 s
  pytorch:60  # import torch twice, 40 eager steps of ResNet-50 b256 (cudnn.benchmark): ~22 s
  mpi:20      # mpirun -np 1, 20 steps of ResNet-18 b256 on synthetic data: 5 s
  profile:45  # nvidia-smi -q, bench_train_gpu under nsys (52 steps), 5 PyTorch steps profiled
  compile:90  # torch.compile of ResNet-50 beside eager, 30 steps each; cut short by CHECK_LIMIT
)
CHECK_LIMIT=410  # seconds from the start by which every stage has ended, leaving 10 s to spare
KILL_MARGIN=2    # timeout --kill-after: what a stage that ignores SIGTERM gets to die
TOGETHER_DEADLINE=40 # every GPU test in one process
TEST_DEADLINE=20     # one GPU test alone
# All the CUDA_LAUNCH_BLOCKING=1 reruns together; later failures are not rerun. (The variable is
# for check_device_check.sh, which tests the cut.)
RERUN_BUDGET=${DEVICE_CHECK_RERUN_BUDGET:-30}
# memcheck: one tiny elementwise test as the probe, then our own kernels' op tests in f32: the
# convolutions are cuDNN's, not ours, and its algorithm search is slow under the tool.
MEMCHECK_PROBE='*CudaOps.ElementwiseOps/f32'
MEMCHECK_FILTER='*CudaOps.*/f32-*Convolution*'
OUT_FILES=(summary.md results.tsv gpu_tests.tsv perf.tsv cudnn_algos.tsv logs.tgz)
RETURN_LIMIT=16777216 # bytes: the largest file the lent machine returns

# The stages and their helpers.
# shellcheck source=device_check_stages.sh
source "$ROOT/tests/gpu/device_check_stages.sh"

# ---- the outputs ---------------------------------------------------------------------------------

# Appends one result line (tabs and line ends in it made spaces) and shows it.
record() {
  local result=${2//[$'\t\n']/ } key=${3//[$'\t\n']/ }
  printf '%s\t%s\t%s\t%s\n' "$1" "$result" "$key" "$4" >>"$OUT/results.tsv"
  printf '== %-9s %-40s %s (%s s)\n' "$1" "$result" "$key" "$4"
}

# The commit the binaries were built from: the bundle's COMMIT (pack.sh writes it; the copy on
# the GPU machine has no .git), else git's, else "unknown".
commit_id() {
  if [ -s "$ROOT/build-gpu/bundle/COMMIT" ]; then
    head -1 "$ROOT/build-gpu/bundle/COMMIT"
  else
    git -C "$ROOT" describe --always --dirty --abbrev=12 2>/dev/null || echo unknown
  fi
}

# A TSV file (header first) as a markdown table, '|' escaped.
markdown_table() {
  awk -F'\t' '{
    gsub(/\|/, "\\|")
    row = "|"
    for (i = 1; i <= NF; i++) row = row " " $i " |"
    print row
    if (NR == 1) {
      sep = "|"
      for (i = 1; i <= NF; i++) sep = sep "---|"
      print sep
    }
  }' "$1"
}

# summary.md: what ran where, the results so far, the throughput figures. Rewritten after every
# stage, so that a check killed at any point leaves it.
write_summary() {
  local recorded status=finished
  recorded=$(($(wc -l <"$OUT/results.tsv") - 1))
  if [ "$recorded" -lt ${#STAGES[@]} ]; then
    status="running: $recorded of ${#STAGES[@]} stages recorded"
  fi
  {
    echo "# GPU check, $(date -u '+%F %H:%M UTC')"
    echo
    echo "- device: $DEVICE"
    echo "- command: tests/gpu/device_check.sh $ARGS"
    echo "- commit: $COMMIT"
    echo "- status: $status"
    echo
    sed "1s/\tkey\t/\tkey number\t/" "$OUT/results.tsv" | markdown_table /dev/stdin
    if [ "$(wc -l <"$OUT/perf.tsv")" -gt 1 ]; then
      echo
      echo "## Throughput"
      echo
      markdown_table "$OUT/perf.tsv"
    fi
    echo
    echo "total: $((SECONDS - CHECK_START)) s; logs: logs.tgz"
  } >"$WORK/summary.md" && mv -f "$WORK/summary.md" "$OUT/summary.md"
}

# logs.tgz: the work folder's logs/ (stage logs, per-test logs, key and result files, metrics,
# the algorithm cache), replaced whole. Should it pass what the machine returns, the per-test
# logs of passed tests are left out, saying so.
pack_logs() {
  local part=$WORK/logs.tgz.part
  tar -C "$WORK" --exclude='*.lock' --exclude='*.tmp' -czf "$part" logs || return
  if [ "$(stat -c %s "$part")" -gt "$RETURN_LIMIT" ]; then
    echo "logs.tgz was over $RETURN_LIMIT bytes: passed tests' logs left out" >"$LOGS/PACKING"
    awk -F'\t' 'NR > 1 && $2 == 0 { gsub("/", "_", $1); print "logs/tests/" $1 ".log" }' \
      "$OUT/gpu_tests.tsv" >"$WORK/pack.exclude"
    tar -C "$WORK" --exclude='*.lock' --exclude='*.tmp' -X "$WORK/pack.exclude" -czf "$part" logs
  fi
  mv -f "$part" "$OUT/logs.tgz"
}

# The six outputs, empty but for their headers, before any stage runs.
start_outputs() {
  local file
  for file in "${OUT_FILES[@]}"; do rm -f "$OUT/$file"; done
  printf 'stage\tresult\tkey\tseconds\n' >"$OUT/results.tsv"
  printf 'test\texit\tblocking_rerun_exit\tseconds\n' >"$OUT/gpu_tests.tsv"
  printf 'stage\tconfiguration\tmetric\tvalue\n' >"$OUT/perf.tsv"
  printf 'shape\tmodels\tdtype\tlayout\tpass\tmethod\talgorithms\n' >"$OUT/cudnn_algos.tsv"
  write_summary
  pack_logs
}

# ---- the driver ----------------------------------------------------------------------------------

# run_stage NAME DEADLINE: the stage under a hard deadline (cut to what CHECK_LIMIT leaves), its
# output in logs/NAME.log; its result appended to results.tsv, summary.md and logs.tgz at once.
run_stage() {
  local name=$1 deadline=$2 start=$SECONDS rc result left
  left=$((CHECK_LIMIT - (SECONDS - CHECK_START) - KILL_MARGIN))
  if [ "$left" -lt 5 ]; then
    record "$name" "skipped: no time left (the check ends by $CHECK_LIMIT s)" - 0
    return
  fi
  [ "$left" -ge "$deadline" ] || deadline=$left
  rm -f "$LOGS/$name.key" "$LOGS/$name.result"
  echo "== $name: running (deadline $deadline s)"
  STAGE_NAME=$name STAGE_DEADLINE=$deadline timeout --kill-after=$KILL_MARGIN "$deadline" \
    bash "$SELF" --stage "$name" >"$LOGS/$name.log" 2>&1
  rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    result="FAIL: deadline $deadline s"
  elif [ -f "$LOGS/$name.result" ]; then
    result=$(head -1 "$LOGS/$name.result")
  elif [ "$rc" -eq 0 ]; then
    result=ok
  else
    result="FAIL: exit $rc"
  fi
  tail -n 8 "$LOGS/$name.log" | sed 's/^/   | /'
  record "$name" "$result" "$(cat "$LOGS/$name.key" 2>/dev/null || echo -)" $((SECONDS - start))
}

# Extracts the bundle (or finds a build) and sets BIN and LD_LIBRARY_PATH for the stages.
prepare_binaries() {
  local dir site
  if [ -n "${DEVICE_CHECK_BIN:-}" ]; then
    BIN=$(cd "$DEVICE_CHECK_BIN" && pwd) || BIN=$DEVICE_CHECK_BIN
  elif [ -f "$ROOT/build-gpu/bundle.tar.xz" ]; then
    rm -rf "$ROOT/build-gpu/bundle" # no stale COMMIT or binaries from an older bundle
    # Python's tarfile reads xz where the machine's tar has no xz program to call.
    timeout 30 tar -C "$ROOT/build-gpu" -xJf "$ROOT/build-gpu/bundle.tar.xz" ||
      timeout 60 python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
        "$ROOT/build-gpu/bundle.tar.xz" "$ROOT/build-gpu" ||
      echo "device_check: cannot unpack build-gpu/bundle.tar.xz"
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
    ! timeout 10 "$BIN/ringtrain_gpu_tests" --gtest_list_tests >/dev/null 2>&1; then
    export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$ROOT/build-gpu/bundle/lib-fallback"
  fi
}

yes_no() { if [ -n "$1" ]; then echo yes; else echo no; fi; }

# Which of the newer flags this build's binaries take, read from their --help (read whole: grep
# -q in a pipe could end it early under pipefail). A flag a binary lacks is left out.
detect_flags() {
  local help
  TRAIN_CACHE="" BENCH_CACHE="" NO_FINAL_CHECKPOINT=""
  help=$(timeout 10 "$BIN/ringtrain" train --help 2>&1)
  grep -q -- '--conv-algo-cache' <<<"$help" && TRAIN_CACHE=$RINGTRAIN_CONV_ALGO_CACHE
  grep -q -- '--no-final-checkpoint' <<<"$help" && NO_FINAL_CHECKPOINT=--no-final-checkpoint
  help=$(timeout 10 "$BIN/bench_train_gpu" --help 2>&1)
  grep -q -- '--conv-algo-cache' <<<"$help" && BENCH_CACHE=$RINGTRAIN_CONV_ALGO_CACHE
  export TRAIN_CACHE BENCH_CACHE NO_FINAL_CHECKPOINT
  echo "device_check: --conv-algo-cache: ringtrain train $(yes_no "$TRAIN_CACHE")," \
    "bench_train_gpu $(yes_no "$BENCH_CACHE"); cache $RINGTRAIN_CONV_ALGO_CACHE"
}

# Stops with exit 3 where there is no GPU: nothing a stage could do there.
require_gpu() {
  local gpus
  if ! command -v nvidia-smi >/dev/null; then
    echo "device_check: error: no GPU here: nvidia-smi is not installed" \
      "(--dry-run checks the script alone)" >&2
    exit 3
  fi
  gpus=$(timeout 15 nvidia-smi -L 2>&1)
  if ! grep -q '^GPU ' <<<"$gpus"; then
    echo "device_check: error: no GPU here: nvidia-smi -L says: ${gpus:-nothing}" \
      "(--dry-run checks the script alone)" >&2
    exit 3
  fi
  DEVICE=$(timeout 15 nvidia-smi --query-gpu=name,driver_version,memory.total \
    --format=csv,noheader 2>/dev/null | head -1)
}

usage() {
  echo "usage: device_check.sh [--dry-run] [--only STAGE[,STAGE...]]   stages: ${STAGES[*]%%:*}" >&2
  exit 2
}

# The work folder: logs/ (what logs.tgz holds, the algorithm cache among it) and the datasets.
# It is removed only after the last logs.tgz is written.
make_work() {
  WORK=$(mktemp -d) || { echo "device_check: error: mktemp -d failed" >&2; exit 2; }
  trap 'rm -rf "$WORK"' EXIT
  LOGS=$WORK/logs
  mkdir -p "$LOGS"
  # One cache for every stage: ringtrain_gpu_tests reads the variable, ringtrain train and
  # bench_train_gpu get --conv-algo-cache (detect_flags).
  RINGTRAIN_CONV_ALGO_CACHE=$LOGS/conv_algo_cache.json
  TRAIN_CACHE="" BENCH_CACHE="" NO_FINAL_CHECKPOINT=""
  export WORK LOGS RINGTRAIN_CONV_ALGO_CACHE TRAIN_CACHE BENCH_CACHE NO_FINAL_CHECKPOINT
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
  make_work
  COMMIT=$(commit_id)
  start_outputs
  if [ "$dry" -eq 0 ]; then
    prepare_binaries
    detect_flags
    COMMIT=$(commit_id)
  fi
  for entry in "${STAGES[@]}"; do
    name=${entry%%:*}
    if [ "$dry" -eq 1 ]; then
      record "$name" "skipped: no GPU (dry run)" - 0
    elif [ -n "$only" ] && [[ $only != *",$name,"* ]]; then
      record "$name" "skipped: not in --only" - 0
    else
      run_stage "$name" "${entry#*:}"
    fi
    write_summary
    pack_logs
  done
  echo
  cat "$OUT/summary.md"
  ! cut -f2 "$OUT/results.tsv" | grep -q '^FAIL'
}

main "$@"
