#!/usr/bin/env bash
# The stages of tests/gpu/device_check.sh and the helpers they use, sourced by it: each stage_NAME
# runs in its own process (device_check.sh --stage NAME) under the stage's deadline, with
# STAGE_NAME, STAGE_DEADLINE, STAGE_START, OUT, LOGS, WORK and BIN set, and the constants of
# device_check.sh. A stage ends with key() for its key number and fail() or skip() for its result.
# shellcheck disable=SC2154  # the variables above are set by device_check.sh

# ---- helpers run inside a stage (STAGE_NAME, STAGE_DEADLINE, STAGE_START, OUT, LOGS, WORK, BIN) --

# Records the stage's key number.
key() { printf '%s\n' "$*" >"$LOGS/$STAGE_NAME.key"; }
# Ends the stage as failed, saying why.
fail() {
  printf 'FAIL: %s\n' "$*" | tee "$LOGS/$STAGE_NAME.result"
  exit 1
}
# Ends the stage as skipped, saying why.
skip() {
  printf 'skipped: %s\n' "$*" | tee "$LOGS/$STAGE_NAME.result"
  exit 0
}
# Appends a throughput figure to perf.tsv: CONFIGURATION METRIC VALUE; a value not read ("?")
# is left out.
perf() {
  [[ $3 =~ ^[0-9]+(\.[0-9]+)?$ ]] || return 0
  printf '%s\t%s\t%s\t%s\n' "$STAGE_NAME" "$1" "$2" "$3" >>"$OUT/perf.tsv"
}
# A figure perf.tsv already holds (STAGE CONFIGURATION METRIC), or "?".
perf_value() {
  awk -F'\t' -v s="$1" -v c="$2" -v m="$3" '$1 == s && $2 == c && $3 == m {v = $4} END {
    print (v == "" ? "?" : v) }' "$OUT/perf.tsv"
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
# The arguments joined by "; ".
joined() {
  printf '%s' "$1"
  shift
  [ $# -eq 0 ] || printf '; %s' "$@"
}
# The first capture group of an extended regex (no '#' in it) in a file, or "?".
grab() { sed -nE "s#.*$1.*#\\1#p" "$2" 2>/dev/null | head -1 | grep . || echo "?"; }
# ringtrain train on the GPU, with the shared cuDNN algorithm cache where the build takes it
# (TRAIN_CACHE is empty otherwise), so no stage searches a convolution an earlier one searched.
train_cuda() {
  within "$BIN/ringtrain" train --device cuda ${TRAIN_CACHE:+--conv-algo-cache "$TRAIN_CACHE"} "$@"
}
# The entries of the algorithm cache (one "algo" key each), 0 without a file.
cache_entries() { grep -o '"algo"' "$RINGTRAIN_CONV_ALGO_CACHE" 2>/dev/null | wc -l; }

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
    within "$BIN/cudnn_probe" --versions | tee "$LOGS/env.versions" ||
      problems+=("cudnn_probe --versions failed")
    driver=$(grab 'CUDA driver API ([0-9]+),' "$LOGS/env.versions")
    runtime=$(grab 'runtime ([0-9]+) ' "$LOGS/env.versions")
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
  [ ${#problems[@]} -eq 0 ] || fail "$(joined "${problems[@]}")"
}

# cudnn_probe's lines, "SHAPE [MODELS] DTYPE LAYOUT PASS[ find]: ALGORITHMS", as cudnn_algos.tsv;
# "find" marks an answer measured (cudnnFind*, cudnn_probe --find), the rest are heuristics'.
cudnn_table() {
  local line='^(conv .*) \[([^]]*)\] (f32|bf16) (nhwc|nchw) ([a-z-]+)( find)?: (.*)$'
  printf 'shape\tmodels\tdtype\tlayout\tpass\tmethod\talgorithms\n'
  sed -nE "s/$line/\\1\\t\\2\\t\\3\\t\\4\\t\\5\\t\\6\\t\\7/p" "$LOGS/cudnn.log" |
    awk -F'\t' -v OFS='\t' '{ $6 = ($6 == " find" ? "find" : "heuristic") } 1'
}

stage_cudnn() {
  need_bin cudnn_probe
  # The backend's own question (cudnnFind*, measured) where this probe can ask it.
  local usage find=()
  usage=$("$BIN/cudnn_probe" --usage 2>&1)
  grep -q -- '--find' <<<"$usage" && find=(--find)
  within "$BIN/cudnn_probe" "${find[@]}"
  local rc=$?
  cudnn_table >"$OUT/cudnn_algos.tsv"
  key "$(grab ' ([0-9]+) NONE' "$LOGS/cudnn.log") NONE"
  case $rc in
    0) ;;
    1) fail "$(grab '\(([0-9]+) in NHWC' "$LOGS/cudnn.log") NHWC passes without an algorithm" ;;
    124 | 137) fail "deadline" ;;
    *) fail "cudnn_probe exit $rc" ;;
  esac
}

# Note: the cache is keyed by convolution (geometry, dtype, layout, pass), so 2 steps of each
# model and per-device batch the later stages train search everything they will meet: ResNet-50
# batch 256 (resnet50), ResNet-18 batch 256 (cifar10, and mpi's defaults), ResNet-50 batch 128
# (dp: 256 split over 2 replicas); all bf16, the cifar stem, 32x32 images.
stage_warm() {
  need_bin ringtrain
  [ -n "$TRAIN_CACHE" ] || skip "this build's ringtrain train has no --conv-algo-cache"
  within "$BIN/ringtrain" data synth --out "$WORK/warm.h5" --train 512 --test 256 ||
    fail "ringtrain data synth exit $?"
  local config depth batch start times=() failed=()
  for config in 50:256 18:256 50:128; do
    depth=${config%:*} batch=${config#*:} start=$SECONDS
    echo "-- ringtrain train: ResNet-$depth, batch $batch, bf16, 2 steps"
    (cd "$WORK" && train_cuda --data "$WORK/warm.h5" --depth "$depth" --batch-size "$batch" \
      --amp bf16 --steps 2 --workers 0 --no-eval --checkpoint-dir "$WORK/warm_checkpoints" \
      ${NO_FINAL_CHECKPOINT:+"$NO_FINAL_CHECKPOINT"}) || failed+=("ResNet-$depth b$batch: exit $?")
    times+=("$((SECONDS - start)) s")
    key "$(cache_entries) cache entries; runs: ${times[*]}"
  done
  [ ${#failed[@]} -eq 0 ] || fail "ringtrain train: $(joined "${failed[@]}")"
}

# ---- the tests stage: each GPU test alone; gpu_tests.tsv rewritten as results come -------------

# The log of a test, less its suffix: test names hold '/'.
test_log() { echo "$LOGS/tests/${1//\//_}"; }

# run_test NAME LOG SECONDS [VAR=VALUE...]: one GPU test in its own process, under SECONDS and
# the stage's deadline, with RINGTRAIN_REQUIRE_GPU=1 (a skip is a failure) and the VARs.
run_test() {
  local name=$1 log=$2 limit=$3
  shift 3
  within env RINGTRAIN_REQUIRE_GPU=1 "$@" timeout "$limit" "$BIN/ringtrain_gpu_tests" \
    --gtest_filter="$name" >"$log" 2>&1
}

# gpu_tests.tsv from the arrays of stage_tests: NAME, first exit, rerun exit ("-": passed,
# "skipped": over the rerun budget), seconds of both runs.
write_test_table() {
  local name
  {
    printf 'test\texit\tblocking_rerun_exit\tseconds\n'
    for name in "${names[@]}"; do
      [ -n "${first[$name]:-}" ] || continue
      printf '%s\t%s\t%s\t%s\n' "$name" "${first[$name]}" "${rerun[$name]:--}" "${secs[$name]}"
    done
  } >"$OUT/gpu_tests.tsv"
}

# Reruns the failed tests with CUDA_LAUNCH_BLOCKING=1, which makes an asynchronous error show at
# the kernel that caused it, in order, while RERUN_BUDGET lasts: when every test fails, the
# reruns must not eat the time of the stages after.
rerun_failures() {
  local name start spent=0 left not_rerun=0
  for name in "${failed[@]}"; do
    left=$((RERUN_BUDGET - spent))
    if [ "$left" -lt 2 ]; then
      rerun[$name]=skipped
      not_rerun=$((not_rerun + 1))
      continue
    fi
    start=$SECONDS
    run_test "$name" "$(test_log "$name").blocking.log" $((left < TEST_DEADLINE ? left : \
      TEST_DEADLINE)) CUDA_LAUNCH_BLOCKING=1
    rerun[$name]=$?
    spent=$((spent + SECONDS - start))
    secs[$name]=$((${secs[$name]} + SECONDS - start))
    echo "rerun $name with CUDA_LAUNCH_BLOCKING=1: exit ${rerun[$name]}"
    write_test_table
  done
  write_test_table
  [ "$not_rerun" -eq 0 ] || echo "not rerun: the last $not_rerun failures (the reruns had" \
    "used their $RERUN_BUDGET s)"
}

# Note: one process per test costs a CUDA context, cuDNN and cuBLAS each (1-2 s, about 45
# tests), so the tests first run together in one process; only those that did not pass there
# (failed, or never reached after a crash) run again alone, and a failure alone is rerun
# synchronously. A test that passed together passed; one that fails alone failed.
stage_tests() {
  need_bin ringtrain_gpu_tests
  mkdir -p "$LOGS/tests"
  local names=() failed=() name start rc passed=0 skipped=0 together=$LOGS/tests_together.log
  local -A first=() rerun=() secs=()
  mapfile -t names < <(within "$BIN/ringtrain_gpu_tests" --gtest_list_tests |
    awk '/^[^ ]/{suite=$1} /^  /{print suite $1}')
  [ ${#names[@]} -gt 0 ] || fail "ringtrain_gpu_tests --gtest_list_tests listed no tests"
  echo "-- all ${#names[@]} tests in one process"
  within env RINGTRAIN_REQUIRE_GPU=1 timeout "$TOGETHER_DEADLINE" "$BIN/ringtrain_gpu_tests" \
    >"$together" 2>&1
  echo "one process: exit $?"
  for name in "${names[@]}"; do
    start=$SECONDS
    if grep -qF "[       OK ] $name (" "$together"; then
      rc=0
    elif grep -qF "[  SKIPPED ] $name (" "$together"; then
      rc=skipped
    else
      run_test "$name" "$(test_log "$name").log" "$TEST_DEADLINE"
      rc=$?
      [ "$rc" -ne 0 ] || ! grep -qF "[  SKIPPED ] $name (" "$(test_log "$name").log" || rc=skipped
    fi
    first[$name]=$rc
    secs[$name]=$((SECONDS - start))
    if [ "$rc" = skipped ]; then
      # Note: under RINGTRAIN_REQUIRE_GPU=1 only a test that needs more GPUs than the machine
      # has may skip (the two-GPU DataParallel tests on one GPU); it has tested nothing.
      skipped=$((skipped + 1))
      echo "skip $name"
    elif [ "$rc" -eq 0 ]; then
      passed=$((passed + 1))
      echo "ok   $name"
    else
      failed+=("$name")
      echo "FAIL $name (exit $rc, alone)"
    fi
    write_test_table
    key "$passed/${#names[@]} passed$([ "$skipped" -eq 0 ] || echo ", $skipped skipped")"
  done
  [ ${#failed[@]} -eq 0 ] || rerun_failures
  [ ${#failed[@]} -le 3 ] || failed=("${failed[@]:0:3}" "...")
  [ ${#failed[@]} -eq 0 ] || fail "$((${#names[@]} - passed - skipped)) failed: ${failed[*]}"
}

# ---- memcheck ----------------------------------------------------------------------------------

# The compute-sanitizer to use, or nothing.
find_sanitizer() {
  local candidate
  for candidate in "$(command -v compute-sanitizer)" \
    "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer" \
    "$ROOT/build-gpu/compute-sanitizer/compute-sanitizer"; do
    if [ -x "$candidate" ]; then
      echo "$candidate"
      return
    fi
  done
}

# One tiny test under memcheck first: where the tool cannot attach to this device ("Device not
# supported", or CUDA error 999 at start-up, as under gVisor) it says so in seconds, and the
# stage skips in the tool's own words rather than running into its deadline.
memcheck_probe() {
  local sanitizer=$1 said rc refusal
  echo "-- probe: $MEMCHECK_PROBE under memcheck (10 s at most)"
  said=$(RINGTRAIN_REQUIRE_GPU=1 within timeout 10 "$sanitizer" --tool memcheck \
    --error-exitcode 9 "$BIN/ringtrain_gpu_tests" --gtest_filter="$MEMCHECK_PROBE" 2>&1)
  rc=$?
  printf '%s\n' "$said"
  [ "$rc" -ne 0 ] || return 0
  refusal=$(grep -m1 -E 'Device not supported|error 999|Internal Sanitizer Error|^=+ Error:' \
    <<<"$said" | sed -E 's/^=+ *//')
  [ -z "$refusal" ] || skip "compute-sanitizer cannot run on this device: $refusal"
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    fail "compute-sanitizer did not finish one elementwise test in 10 s"
  fi
  # Otherwise the test itself failed under the tool: the full run names the errors.
}

stage_memcheck() {
  need_bin ringtrain_gpu_tests
  local sanitizer rc
  sanitizer=$(find_sanitizer)
  [ -n "$sanitizer" ] || skip "no compute-sanitizer here (it comes with the CUDA toolkit)"
  memcheck_probe "$sanitizer"
  echo "-- memcheck: $MEMCHECK_FILTER"
  RINGTRAIN_REQUIRE_GPU=1 within "$sanitizer" --tool memcheck --error-exitcode 9 --print-limit 20 \
    "$BIN/ringtrain_gpu_tests" --gtest_filter="$MEMCHECK_FILTER"
  rc=$?
  key "$(grab 'ERROR SUMMARY: ([0-9]+) error' "$LOGS/memcheck.log") errors"
  case $rc in
    0) ;;
    9) fail "memcheck found errors (memcheck.log)" ;;
    124 | 137) fail "deadline" ;;
    *) fail "the CUDA op tests failed under memcheck (exit $rc)" ;;
  esac
}

# ---- training stages ---------------------------------------------------------------------------

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
  (cd "$WORK" && train_cuda --data "$WORK/cifar10.h5" --depth 18 --epochs 1 --amp bf16 \
    --workers "$(workers)" --summary "$LOGS/cifar10_summary.json") ||
    fail "ringtrain train exit $?"
  local acc rate config="ringtrain train resnet18 bf16 b256, 1 epoch"
  acc=$(grab 'final test accuracy ([0-9.]+)%' "$LOGS/cifar10.log")
  rate=$(grab 'summary: .*, ([0-9.]+) img/s' "$LOGS/cifar10.log")
  perf "$config" test_accuracy_pct "$acc"
  perf "$config" img_per_s "$rate"
  key "test accuracy $acc%, $rate img/s"
  # Note: one epoch of ResNet-18 lands well above 10% (chance); 20% leaves room for a bad seed.
  awk -v a="$acc" 'BEGIN{exit !(a > 20)}' ||
    fail "test accuracy $acc% after one epoch (chance: 10%)"
}

# ringtrain train on the synthetic set with W loader threads, 2 epochs; prints the second
# epoch's img/s and mean GPU utilisation in % ("?" where not measured) from the metrics file.
loader_rate() {
  local w=$1
  shift
  local metrics="$LOGS/resnet50_workers$w${1:+_graph}.jsonl"
  echo "-- ringtrain train, real loader, --workers $w $*" >&2
  (cd "$WORK" && train_cuda --data "$WORK/synth.h5" --depth 50 --batch-size 256 --amp bf16 \
    --workers "$w" --epochs 2 --no-eval --metrics "$metrics" "$@") >&2 || return 1
  python3 - "$metrics" <<'EOF'
import json, sys
last = [json.loads(l) for l in open(sys.argv[1])][-1]
util = last.get("gpu_util_mean")
print(f"{last['images_per_s']:.0f} {'?' if util is None else f'{util:.0f}'}")
EOF
}

# bench_train_gpu's three rates ("LABEL  N img/s  T TFLOP/s  MFU M%") into perf.tsv.
bench_perf() {
  local label rate tflops mfu
  local line='^(on-device data|on-device, graph|real loader|loader, GPU aug) +([0-9.]+) img/s +([0-9.]+) TFLOP/s'
  while IFS=$'\t' read -r label rate tflops mfu; do
    perf "bench_train_gpu resnet50 bf16 b256, $label" img_per_s "$rate"
    perf "bench_train_gpu resnet50 bf16 b256, $label" tflops "$tflops"
    perf "bench_train_gpu resnet50 bf16 b256, $label" mfu_pct "$mfu"
  done < <(sed -nE "s#$line +MFU ([0-9.]*).*#\\1\\t\\2\\t\\3\\t\\4#p" "$LOGS/resnet50.log")
}

# Records a loader run's rate and GPU utilisation: W "RATE UTIL"; prints "RATE img/s (GPU U%)".
loader_perf() {
  local rate=${2% *} util=${2#* }
  perf "ringtrain train resnet50 bf16 b256, --workers $1" img_per_s "$rate"
  perf "ringtrain train resnet50 bf16 b256, --workers $1" gpu_util_pct "$util"
  echo "$rate img/s (GPU $util%)"
}

stage_resnet50() {
  need_bin bench_train_gpu
  need_bin ringtrain
  local n on_device zero many graph
  n=$(workers)
  echo "-- bench_train_gpu (on-device data, the loader, the loader with GPU augmentation)"
  within "$BIN/bench_train_gpu" --depth 50 --batch-size 256 --amp bf16 --workers "$n" \
    --steps 30 --warmup 10 ${BENCH_CACHE:+--conv-algo-cache "$BENCH_CACHE"} ||
    fail "bench_train_gpu exit $?"
  bench_perf
  on_device=$(grab 'on-device data +([0-9]+) img/s' "$LOGS/resnet50.log")
  key "on-device $on_device img/s"
  within "$BIN/ringtrain" data synth --out "$WORK/synth.h5" --train 25600 --test 256 ||
    fail "ringtrain data synth exit $?"
  zero=$(loader_rate 0) || fail "ringtrain train --workers 0 failed"
  zero=$(loader_perf 0 "$zero")
  key "on-device $on_device img/s; loader, 0 workers: $zero"
  many=$(loader_rate "$n") || fail "ringtrain train --workers $n failed"
  many=$(loader_perf "$n" "$many")
  key "on-device $on_device img/s; loader, 0 workers: $zero; $n workers: $many"
  graph=$(loader_rate "$n" --cuda-graph) || fail "ringtrain train --cuda-graph failed"
  graph=$(loader_perf "$n --cuda-graph" "$graph")
  key "on-device $on_device img/s; loader, 0 workers: $zero; $n workers: $many; with" \
    "--cuda-graph: $graph"
}

# Note: two replicas share GPU 0 (--dp-share-device), so the stage runs on a one-GPU machine;
# its img/s is not DataParallel's on two GPUs, but every phase of the step runs on the device.
stage_dp() {
  need_bin ringtrain
  # Note: the help is read whole first: grep -q in a pipe would end it early (pipefail).
  local help data=$WORK/synth.h5 rate
  help=$(within "$BIN/ringtrain" train --help 2>&1)
  grep -q -- '--dp-share-device' <<<"$help" ||
    skip "this build's DataParallel has no --dp-share-device"
  if [ ! -f "$data" ]; then
    data=$WORK/dp_synth.h5
    within "$BIN/ringtrain" data synth --out "$data" --train 5120 --test 256 ||
      fail "ringtrain data synth exit $?"
  fi
  echo "-- ringtrain train --mode dp --devices 2 --dp-share-device (20 steps)"
  (cd "$WORK" && train_cuda --mode dp --devices 2 --dp-share-device --data "$data" --depth 50 \
    --batch-size 256 --amp bf16 --workers 0 --steps 20 --no-eval \
    --summary "$LOGS/dp_summary.json") ||
    fail "ringtrain train --mode dp exit $?"
  rate=$(grab 'summary: .*, ([0-9.]+) img/s' "$LOGS/dp.log")
  perf "ringtrain train --mode dp, 2 replicas on 1 GPU, resnet50 bf16 b256" img_per_s "$rate"
  key "$rate img/s"
}

stage_pytorch() {
  python3 -c 'import torch' 2>/dev/null || skip "PyTorch is not installed here"
  within python3 -c 'import torch; assert torch.cuda.is_available(), "no CUDA device"
print("torch", torch.__version__, "CUDA", torch.version.cuda, "cuDNN",
      torch.backends.cudnn.version(), "NCCL", torch.cuda.nccl.version())' ||
    skip "PyTorch sees no CUDA device"
  within python3 "$ROOT/bench/pytorch_train_gpu.py" --depth 50 --batch-size 256 --steps 30 \
    --warmup 10 || fail "pytorch_train_gpu.py exit $?"
  local eager ours ratio
  eager=$(grab 'eager .*: +([0-9]+) img/s' "$LOGS/pytorch.log")
  ours=$(perf_value resnet50 "bench_train_gpu resnet50 bf16 b256, on-device data" img_per_s)
  ratio=$(awk -v a="$ours" -v b="$eager" \
    'BEGIN{if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "?"}')
  perf "pytorch eager resnet50 bf16 b256 channels_last" img_per_s "$eager"
  perf "ringtrain on-device / pytorch eager, resnet50 bf16 b256" ratio "$ratio"
  key "eager $eager img/s; ringtrain on-device / eager: $ratio"
}

# Where this machine has Nsight Systems: on the PATH, or where CUDA and NVIDIA install it.
find_nsys() {
  local candidate
  for candidate in "$(command -v nsys)" /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys; do
    [ -x "$candidate" ] && echo "$candidate" && return 0
  done
  return 1
}

# The kernel time of a step, grouped (tools/kernel_groups.py), ringtrain's beside PyTorch eager's
# in kernel_groups.md; and the GPU's clocks, power and performance state, once, so that a
# throttled or shared GPU shows. ringtrain's is bench_train_gpu under Nsight Systems where the
# machine has it: 52 steps (3 + 10 eager and again from a CUDA graph, 2 x 13 with the loader;
# its stem micro-benchmark's few convolutions count too); PyTorch's, 5 eager steps under
# torch.profiler.
stage_profile() {
  need_bin bench_train_gpu
  within nvidia-smi -q -d CLOCK,POWER,PERFORMANCE >"$LOGS/gpu_clocks.txt" 2>&1 ||
    echo "nvidia-smi -q -d CLOCK,POWER,PERFORMANCE: exit $?"
  local runs=() nsys
  if nsys=$(find_nsys); then
    echo "-- $nsys profile bench_train_gpu (52 steps)"
    within "$nsys" profile -t cuda -o "$WORK/ringtrain" --force-overwrite true \
      "$BIN/bench_train_gpu" --depth 50 --batch-size 256 --amp bf16 --steps 10 --warmup 3 \
      --rounds 1 --workers "$(workers)" ${BENCH_CACHE:+--conv-algo-cache "$BENCH_CACHE"} ||
      fail "nsys profile bench_train_gpu exit $?"
    within "$nsys" stats -q -r cuda_gpu_kern_sum -f csv -o "$WORK/ringtrain" \
      "$WORK/ringtrain.nsys-rep" || fail "nsys stats exit $?"
    runs+=("ringtrain=$WORK/ringtrain_cuda_gpu_kern_sum.csv:52")
  else
    echo "-- no nsys here: ringtrain's kernels are not profiled"
  fi
  if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    within python3 "$ROOT/bench/pytorch_train_gpu.py" --depth 50 --batch-size 256 --steps 5 \
      --warmup 5 --kernel-csv "$WORK/pytorch_kernels.csv" --profile-steps 5 ||
      fail "pytorch_train_gpu.py --kernel-csv exit $?"
    runs+=("pytorch-eager=$WORK/pytorch_kernels.csv:5")
  fi
  [ ${#runs[@]} -gt 0 ] || skip "neither Nsight Systems nor PyTorch with CUDA here"
  python3 "$ROOT/tools/kernel_groups.py" "${runs[@]}" >"$LOGS/kernel_groups.md" ||
    fail "kernel_groups.py exit $?"
  cat "$LOGS/kernel_groups.md"
  key "kernel ms/step $(grep '^| total' "$LOGS/kernel_groups.md" | tr -s ' ')"
}

# torch.compile (default mode) beside eager, in one process: the rate ringtrain's graph is to
# reach. Last, because compiling ResNet-50 takes a minute or more: the check's limit cuts it
# short before it cuts anything else.
stage_compile() {
  python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null ||
    skip "PyTorch with CUDA is not here"
  within python3 "$ROOT/bench/pytorch_train_gpu.py" --depth 50 --batch-size 256 --steps 30 \
    --warmup 10 --compile || fail "pytorch_train_gpu.py --compile exit $?"
  local eager compiled
  eager=$(grab 'eager .*: +([0-9]+) img/s' "$LOGS/compile.log")
  compiled=$(grab 'compile .*: +([0-9]+) img/s' "$LOGS/compile.log")
  perf "pytorch torch.compile resnet50 bf16 b256 channels_last" img_per_s "$compiled"
  key "eager $eager img/s; torch.compile $compiled img/s"
}

stage_mpi() {
  need_bin ringtrain
  command -v mpirun >/dev/null || skip "no mpirun on this machine"
  echo "-- mpirun -np 1 ringtrain train --device cuda (20 steps)"
  (cd "$WORK" && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 within mpirun -np 1 \
    "$BIN/ringtrain" train --device cuda ${TRAIN_CACHE:+--conv-algo-cache "$TRAIN_CACHE"} \
    --depth 18 --steps 20 --amp bf16 --no-eval --synth-path "$WORK/mpi_synthetic.h5") ||
    fail "mpirun -np 1 ringtrain train exit $?"
  local rate
  rate=$(grab 'summary: .*, ([0-9.]+) img/s' "$LOGS/mpi.log")
  perf "mpirun -np 1 ringtrain train resnet18 bf16 b256" img_per_s "$rate"
  key "$rate img/s"
}
