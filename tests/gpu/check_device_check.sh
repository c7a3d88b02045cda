#!/usr/bin/env bash
# Tests of tests/gpu/device_check.sh that need no GPU.
#   check_device_check.sh dry-run
#       --dry-run: exit 0, twelve stages in order, each "skipped: no GPU (dry run)", in
#       results.tsv, summary.md and on stdout; $OUT holds the six outputs and nothing the lent
#       machine would leave behind; summary.md names the commit (build-gpu/bundle/COMMIT first);
#       and the real mode stops at once, saying why, when nvidia-smi fails or lists no GPU.
#   check_device_check.sh fake-gpu RINGTRAIN_GPU_TESTS RINGTRAIN
#       the real mode against an nvidia-smi that claims a GPU, with these two binaries and a fake
#       cudnn_probe, bench_train_gpu and compute-sanitizer: every stage ends in results.tsv, $OUT
#       holds the six outputs; each GPU test ran in its own process with RINGTRAIN_REQUIRE_GPU=1
#       and so failed, and was rerun with CUDA_LAUNCH_BLOCKING=1, both logs kept in logs.tgz; the
#       key numbers and perf.tsv are read from the outputs; the algorithm cache is passed to a
#       binary that takes it; memcheck runs the f32 op tests without convolutions; warm and dp
#       are skipped by a ringtrain without the flag they need and fail on the fake GPU in one
#       with it. Then `--only tests,memcheck`: a sanitizer that refuses the device skips memcheck
#       in its own words, and failures past the rerun budget are not rerun. Exit 77 (skipped)
#       where a real GPU is present.
set -u
check=$(cd "$(dirname "$0")" && pwd)/device_check.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
ok() { echo "ok   $1"; }
bad() {
  echo "FAIL $1"
  failures=$((failures + 1))
}
expect() { # expect NAME COMMAND...: passes when the command succeeds
  local name=$1
  shift
  if "$@"; then ok "$name"; else bad "$name"; fi
}
stages="env cudnn warm tests memcheck cifar10 resnet50 dp pytorch mpi profile compile"
outputs="cudnn_algos.tsv gpu_tests.tsv logs.tgz perf.tsv results.tsv summary.md"

# results.tsv: the header, then one line of 4 tab-separated columns per stage, in order, each
# with a result of ok, FAIL or skipped.
well_formed() {
  local tsv=$1/results.tsv
  [ "$(head -1 "$tsv")" = "$(printf 'stage\tresult\tkey\tseconds')" ] &&
    [ "$(tail -n +2 "$tsv" | cut -f1 | tr '\n' ' ')" = "$stages " ] &&
    tail -n +2 "$tsv" | awk -F'\t' 'NF != 4 || $2 !~ /^(ok|FAIL|skipped)/ || $4 !~ /^[0-9]+$/ {
      print "bad line: " $0; bad = 1 } END { exit bad }'
}
# The table: a header and one row per stage, in summary.md and in what was printed.
has_table() {
  local file=$1 s
  grep -q '^| stage | result | key number | seconds |$' "$file" || return 1
  for s in $stages; do grep -q "^| $s | " "$file" || return 1; done
}
result_of() { awk -F'\t' -v s="$2" '$1 == s { print $2 }' "$1/results.tsv"; }
key_of() { awk -F'\t' -v s="$2" '$1 == s { print $3 }' "$1/results.tsv"; }
starts_with() { [[ $1 == "$2"* ]]; }
same_and_some() { [ -n "$2" ] && [ "$1" = "$2" ]; }
contains() { [[ $1 == *"$2"* ]]; }
# The number of files in $1 whose names match (grep -c) or do not match (grep -vc) $3.
count_files() { find "$1" -maxdepth 1 -type f -printf '%f\n' | grep "$2" "$3"; }

# What the lent machine returns whole: at most 8 plain files, each at most 16 MiB, none more than
# 2 folders deep ($OUT/a/b/file), every name of letters, digits, '.', '_' and '-' only.
returnable() {
  local dir=$1 files
  files=$(find "$dir" -type f | wc -l)
  [ "$files" -le 8 ] || { echo "$files files in $dir"; return 1; }
  ! find "$dir" -mindepth 1 ! -type f ! -type d | grep . &&
    ! find "$dir" -mindepth 4 | grep . &&
    ! find "$dir" -mindepth 1 -printf '%f\n' | grep -v '^[A-Za-z0-9._-]*$' &&
    ! find "$dir" -type f -size +16777216c | grep .
}
# $1 holds exactly the six outputs.
six_outputs() { [ "$(find "$1" -mindepth 1 -printf '%P\n' | sort | tr '\n' ' ')" = "$outputs " ]; }
# summary.md in $1 names the commit: $2, or any abbreviated hash (git describe --always).
has_commit() {
  local want='[0-9a-f]{7,}(-dirty)?'
  grep -Eq "^- commit: (${2:-$want})\$" "$1/summary.md"
}

# A fake nvidia-smi in $1/bin that prints $2 and exits with $3.
fake_nvidia_smi() {
  mkdir -p "$1/bin"
  printf '#!/bin/sh\necho "%s"\nexit %s\n' "$2" "$3" >"$1/bin/nvidia-smi"
  chmod +x "$1/bin/nvidia-smi"
}

# The commit comes from build-gpu/bundle/COMMIT where there is one (the copy on the GPU machine
# has no .git): the check, copied into a tree without .git, with and without such a file.
bundle_commit() {
  local root=$tmp/tree
  mkdir -p "$root/tests/gpu" "$root/build-gpu/bundle"
  cp "$check" "$(dirname "$check")/device_check_stages.sh" "$root/tests/gpu/"
  echo 0123456789ab-dirty >"$root/build-gpu/bundle/COMMIT"
  OUT=$root/out timeout 60 bash "$root/tests/gpu/device_check.sh" --dry-run >/dev/null 2>&1
  expect "dry run: the commit from build-gpu/bundle/COMMIT" \
    has_commit "$root/out" 0123456789ab-dirty
  rm "$root/build-gpu/bundle/COMMIT"
  OUT=$root/out timeout 60 bash "$root/tests/gpu/device_check.sh" --dry-run >/dev/null 2>&1
  expect "dry run: without COMMIT or git, the commit is unknown" has_commit "$root/out" unknown
}

dry_run() {
  local out=$tmp/dry rc
  OUT=$out timeout 60 bash "$check" --dry-run >"$tmp/dry.txt" 2>&1
  rc=$?
  expect "dry run exits 0" [ "$rc" -eq 0 ]
  expect "dry run: results.tsv has the 12 stages in order, 4 columns each" well_formed "$out"
  expect "dry run: every stage 'skipped: no GPU (dry run)'" \
    [ "$(tail -n +2 "$out/results.tsv" | cut -f2 | sort -u)" = "skipped: no GPU (dry run)" ]
  expect "dry run: the table printed" has_table "$tmp/dry.txt"
  expect "dry run: the table in summary.md" has_table "$out/summary.md"
  expect "dry run: \$OUT holds the six outputs" six_outputs "$out"
  expect "dry run: \$OUT is what the lent machine returns whole" returnable "$out"
  expect "dry run: summary.md names the commit" has_commit "$out"
  expect "dry run: logs.tgz holds the (empty) logs folder" [ "$(tar -tzf "$out/logs.tgz")" = logs/ ]
  bundle_commit
  OUT=$tmp/dry2 timeout 60 bash "$check" --dry-run --only tests,nonsense >/dev/null 2>&1
  expect "--only with an unknown stage is a usage error (exit 2)" [ $? -eq 2 ]

  local case=$tmp/smi_fails
  fake_nvidia_smi "$case" "NVIDIA-SMI has failed because it couldn't communicate with the driver" 9
  PATH="$case/bin:$PATH" OUT=$case/out timeout 30 bash "$check" >"$case/stdout" 2>"$case/stderr"
  rc=$?
  expect "no driver: exit 3" [ "$rc" -eq 3 ]
  expect "no driver: says there is no GPU, quoting nvidia-smi" \
    grep -q "no GPU here: nvidia-smi -L says: NVIDIA-SMI has failed" "$case/stderr"
  expect "no driver: no stage ran" [ ! -e "$case/out/results.tsv" ]

  case=$tmp/smi_empty
  fake_nvidia_smi "$case" "No devices were found" 6
  PATH="$case/bin:$PATH" OUT=$case/out timeout 30 bash "$check" >/dev/null 2>"$case/stderr"
  rc=$?
  expect "no device: exit 3" [ "$rc" -eq 3 ]
  expect "no device: says why" grep -q "no GPU here: .*No devices were found" "$case/stderr"
}

# A cudnn_probe and a bench_train_gpu that print what the real ones print on a GPU (an old
# driver, one NCHW pass without an algorithm), so that the check's reading of them is tested;
# the bench takes --conv-algo-cache and keeps its arguments in bench_train_gpu.args.
fake_probe_and_bench() {
  cat >"$1/cudnn_probe" <<'EOF'
#!/bin/sh
if [ "${1:-}" = --versions ]; then
  echo "CUDA driver API 12080, runtime 13000 (the probe's, static)"
  exit 0
fi
echo "conv 3x3 stride 1 pad 1 [256,3,32,32] -> [256,64,32,32] [resnet18] f32 nchw forward: NONE"
echo "conv 1x1 stride 1 pad 0 [8,4,2,2] -> [8,8,2,2] [resnet50] bf16 nhwc forward: GEMM(fma, 0 MiB)"
echo "conv 1x1 stride 1 pad 0 [8,4,2,2] -> [8,8,2,2] [resnet50] bf16 nhwc forward find: GEMM(fma)"
echo "cudnn_probe: 33 shapes, 792 queries, 1 NONE (0 in NHWC even zero-padded)"
EOF
  cat >"$1/bench_train_gpu" <<'EOF'
#!/bin/sh
if [ "${1:-}" = --help ]; then
  echo "  --conv-algo-cache TEXT      CUDA: the file that keeps cuDNN's algorithm searches"
  exit 0
fi
echo "$*" >>"$(dirname "$0")/bench_train_gpu.args"
echo "on-device data        24310 img/s    189.4 TFLOP/s  MFU 19.1%"
echo "real loader           23990 img/s    186.9 TFLOP/s  MFU n/a (unknown peak)"
EOF
  chmod +x "$1/cudnn_probe" "$1/bench_train_gpu"
}

# A compute-sanitizer in $1 that keeps its arguments in compute-sanitizer.args and runs nothing:
# it finds no errors or, with FAKE_SANITIZER=refuse, fails at once as on a machine where it cannot
# attach to the device.
fake_sanitizer() {
  cat >"$1/compute-sanitizer" <<'EOF'
#!/bin/sh
echo "$*" >>"$(dirname "$0")/compute-sanitizer.args"
echo "========= COMPUTE-SANITIZER"
if [ "${FAKE_SANITIZER:-}" = refuse ]; then
  echo "========= Error: Device not supported (error 999)"
  exit 1
fi
echo "========= ERROR SUMMARY: 0 errors"
EOF
  chmod +x "$1/compute-sanitizer"
}

# tiny_image_tarball FILE: a tar.gz of train/ and test/ class folders of 8x8 PNG images, for the
# cifar10 stage to import for real.
tiny_image_tarball() {
  local root
  root=$(dirname "$1")/images
  python3 - "$root" <<'PY'
import os, struct, sys, zlib
def png(path, shade):
    rows = b"".join(b"\x00" + bytes([shade, 255 - shade, 128]) * 8 for _ in range(8))
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))
    head = struct.pack(">IIBBBBB", 8, 8, 8, 2, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", head) + chunk(b"IDAT", zlib.compress(rows))
                + chunk(b"IEND", b""))
for split in ("train", "test"):
    for label, name in enumerate(("cat", "dog")):
        folder = os.path.join(sys.argv[1], split, name)
        os.makedirs(folder)
        for i in range(2):
            png(os.path.join(folder, f"{i}.png"), 60 * label + 10 * i)
PY
  tar -C "$root" -czf "$1" train test
}

# The shape of $OUT and summary.md after a run, and logs.tgz unpacked into $2.
outputs_of_run() {
  local out=$1 logs=$2 what=$3
  expect "$what: \$OUT holds the six outputs" six_outputs "$out"
  expect "$what: \$OUT is what the lent machine returns whole" returnable "$out"
  expect "$what: summary.md names the commit" has_commit "$out"
  mkdir -p "$logs"
  expect "$what: logs.tgz unpacks" tar -C "$logs" -xzf "$out/logs.tgz"
}

# The cifar10, resnet50, warm and dp stages: how each ends against the fake GPU.
training_stages() {
  local out=$1 logs=$2 help=$3
  expect "fake GPU: cifar10 imports the images, then fails in ringtrain train" \
    starts_with "$(result_of "$out" cifar10)" "FAIL: ringtrain train exit"
  expect "fake GPU: cifar10's importer wrote the dataset" \
    grep -q "import-images: wrote .*: 4 train and 4 test images, 2 classes" "$logs/logs/cifar10.log"
  expect "fake GPU: resnet50 fails in ringtrain train --workers 0" \
    [ "$(result_of "$out" resnet50)" = "FAIL: ringtrain train --workers 0 failed" ]
  expect "fake GPU: resnet50 keeps the on-device rate as its key number" \
    [ "$(key_of "$out" resnet50)" = "on-device 24310 img/s" ]
  local rate
  rate=$(printf 'resnet50\tbench_train_gpu resnet50 bf16 b256, on-device data\timg_per_s\t24310')
  expect "fake GPU: perf.tsv has bench_train_gpu's rates" grep -qF "$rate" "$out/perf.tsv"
  expect "fake GPU: perf.tsv leaves out an MFU that is not a number" \
    [ "$(grep -c 'real loader' "$out/perf.tsv")" -eq 2 ]
  if grep -q -- '--conv-algo-cache' <<<"$help"; then
    expect "fake GPU: warm fills the cache, failing in ringtrain train" \
      starts_with "$(result_of "$out" warm)" "FAIL: ringtrain train: ResNet-50 b256: exit "
  else
    expect "fake GPU: warm skipped without --conv-algo-cache" [ "$(result_of "$out" warm)" = \
      "skipped: this build's ringtrain train has no --conv-algo-cache" ]
  fi
  if grep -q -- '--dp-share-device' <<<"$help"; then
    expect "fake GPU: dp fails in ringtrain train --mode dp" \
      starts_with "$(result_of "$out" dp)" "FAIL: ringtrain train --mode dp exit "
  else
    expect "fake GPU: dp skipped without --dp-share-device" \
      [ "$(result_of "$out" dp)" = "skipped: this build's DataParallel has no --dp-share-device" ]
  fi
}

# The tests stage: every test failed, each with its two logs in logs.tgz.
tests_stage() {
  local out=$1 logs=$2 listed=$3
  expect "fake GPU: all $listed GPU tests fail under RINGTRAIN_REQUIRE_GPU=1" \
    starts_with "$(result_of "$out" tests)" "FAIL: $listed failed: "
  expect "fake GPU: one log per test in logs.tgz" \
    [ "$(count_files "$logs/logs/tests" -vc '\.blocking\.log$')" -eq "$listed" ]
  expect "fake GPU: one CUDA_LAUNCH_BLOCKING=1 log per test in logs.tgz" \
    [ "$(count_files "$logs/logs/tests" -c '\.blocking\.log$')" -eq "$listed" ]
  expect "fake GPU: a test log says why it failed" \
    grep -q "RINGTRAIN_REQUIRE_GPU=1 but no CUDA device" \
    "$logs/logs/tests/CudaTraining.Bf16LossFallsOnABatchItCanMemorise.log"
  expect "fake GPU: gpu_tests.tsv has one line per test, each rerun" \
    [ "$(awk -F'\t' 'NR > 1 && $2 != 0 && $3 != "-" && $3 != "skipped"' "$out/gpu_tests.tsv" |
      wc -l)" -eq "$listed" ]
}

# memcheck ran the fake sanitizer: a probe of one test, then the f32 op tests without the
# convolutions, a filter that selects just those from the real test binary.
memcheck_stage() {
  local out=$1 case=$2 gpu_tests=$3 filter
  expect "fake GPU: memcheck ok, no errors" \
    [ "$(result_of "$out" memcheck) / $(key_of "$out" memcheck)" = "ok / 0 errors" ]
  expect "fake GPU: memcheck probes one elementwise test first" \
    grep -q -- "--gtest_filter=\*CudaOps.ElementwiseOps/f32$" "$case/bin/compute-sanitizer.args"
  filter=$(sed -n 's/.*--gtest_filter=//p' "$case/bin/compute-sanitizer.args" | tail -1)
  local wanted
  wanted=$(test_names "$gpu_tests" | grep 'CudaOps\..*/f32$' | grep -v Convolution)
  expect "fake GPU: memcheck's filter selects the f32 op tests without convolutions" \
    same_and_some "$(test_names "$gpu_tests" --gtest_filter="$filter")" "$wanted"
}
# The full names of the tests of a gtest binary, less their parameter values.
test_names() {
  "$1" "${@:2}" --gtest_list_tests | awk '/^[^ ]/{suite=$1} /^  /{print suite $1}'
}

# The stages' use of the shared algorithm cache: passed where a binary takes it, kept in logs.
cache_use() {
  local case=$1 help=$2
  expect "fake GPU: bench_train_gpu gets --conv-algo-cache (its --help has it)" \
    grep -q -- "--conv-algo-cache .*/logs/conv_algo_cache.json" \
    "$case/binaries/bench_train_gpu.args"
  local says=no
  grep -q -- '--conv-algo-cache' <<<"$help" && says=yes
  expect "fake GPU: says whether ringtrain train takes --conv-algo-cache ($says)" \
    grep -q "^device_check: --conv-algo-cache: ringtrain train $says, bench_train_gpu yes" \
    "$case/stdout"
}

# --only tests,memcheck with a sanitizer that refuses the device and no time for reruns.
rerun_two_stages() {
  local case=$1 out=$1/out2 listed=$2
  PATH="$case/bin:$PATH" OUT=$out DEVICE_CHECK_BIN=$case/binaries FAKE_SANITIZER=refuse \
    DEVICE_CHECK_RERUN_BUDGET=0 timeout 300 bash "$check" --only tests,memcheck \
    >"$case/stdout2" 2>&1
  expect "--only tests,memcheck: the other stages skipped" \
    [ "$(awk -F'\t' '$2 == "skipped: not in --only"' "$out/results.tsv" | wc -l)" -eq 10 ]
  expect "--only: a sanitizer refusing the device skips memcheck in its words" \
    [ "$(result_of "$out" memcheck)" = "skipped: compute-sanitizer cannot run on this device:\
 Error: Device not supported (error 999)" ]
  expect "--only: no time for reruns: none run, every failure marked skipped" \
    [ "$(awk -F'\t' 'NR > 1 && $3 == "skipped"' "$out/gpu_tests.tsv" | wc -l)" -eq "$listed" ]
  mkdir -p "$case/logs2"
  tar -C "$case/logs2" -xzf "$out/logs.tgz"
  expect "--only: the tests log says the failures were not rerun" \
    grep -q "not rerun: the last $listed failures" "$case/logs2/logs/tests.log"
  expect "--only: no CUDA_LAUNCH_BLOCKING=1 logs" \
    [ "$(count_files "$case/logs2/logs/tests" -c '\.blocking\.log$')" -eq 0 ]
  expect "--only: \$OUT is what the lent machine returns whole" returnable "$out"
}

# A ringtrain_gpu_tests in $1 that answers as gtest does for three tests: Gpu.Passes passes,
# Gpu.NeedsTwo skips (as the two-GPU tests do on one GPU) and Gpu.Fails fails, together and alone.
fake_gtest() {
  cat >"$1/ringtrain_gpu_tests" <<'EOF'
#!/bin/sh
case "${1:-}" in
  --gtest_list_tests) printf 'Gpu.\n  Passes\n  NeedsTwo\n  Fails\n' ;;
  --gtest_filter=Gpu.Fails) echo "[  FAILED  ] Gpu.Fails (3 ms)"; exit 1 ;;
  *)
    echo "[       OK ] Gpu.Passes (1 ms)"
    echo "[  SKIPPED ] Gpu.NeedsTwo (0 ms)"
    echo "[  FAILED  ] Gpu.Fails (3 ms)"
    exit 1
    ;;
esac
EOF
  chmod +x "$1/ringtrain_gpu_tests"
}

# The tests stage's verdict per test: a pass together stands, a skip is counted apart (it tested
# nothing), a failure is run alone and rerun.
test_outcomes() {
  local case=$tmp/outcomes out=$tmp/outcomes/out
  fake_nvidia_smi "$case" "GPU 0: Fake GPU (UUID: GPU-0)" 0
  mkdir -p "$case/binaries"
  fake_gtest "$case/binaries"
  PATH="$case/bin:$PATH" OUT=$out DEVICE_CHECK_BIN=$case/binaries timeout 120 \
    bash "$check" --only tests >"$case/stdout" 2>&1
  expect "outcomes: a skipped test is neither passed nor failed" \
    [ "$(key_of "$out" tests)" = "1/3 passed, 1 skipped" ]
  expect "outcomes: the failure named" [ "$(result_of "$out" tests)" = "FAIL: 1 failed: Gpu.Fails" ]
  expect "outcomes: gpu_tests.tsv has 0, skipped, and the failure's exit and rerun" \
    [ "$(cut -f1-3 "$out/gpu_tests.tsv" | tail -n +2 | tr '\t\n' ',,')" = \
      "Gpu.Passes,0,-,Gpu.NeedsTwo,skipped,-,Gpu.Fails,1,1," ]
}

fake_gpu() {
  local gpu_tests=$1 ringtrain=$2 case=$tmp/fake rc listed help
  if "$gpu_tests" --gtest_filter='CudaTraining.Bf16*' 2>&1 | grep -q '^\[  PASSED  \] [1-9]'; then
    echo "skipped: a real GPU is present (the real check runs there)"
    exit 77
  fi
  fake_nvidia_smi "$case" "GPU 0: Fake GPU (UUID: GPU-0)" 0
  fake_sanitizer "$case/bin"
  mkdir -p "$case/binaries"
  ln -s "$gpu_tests" "$case/binaries/ringtrain_gpu_tests"
  ln -s "$ringtrain" "$case/binaries/ringtrain"
  fake_probe_and_bench "$case/binaries"
  tiny_image_tarball "$case/images.tar.gz"
  PATH="$case/bin:$PATH" OUT=$case/out DEVICE_CHECK_BIN=$case/binaries \
    CIFAR_TARBALL=$case/images.tar.gz timeout 420 \
    bash "$check" >"$case/stdout" 2>&1
  rc=$?
  local out=$case/out logs=$case/logs
  help=$("$ringtrain" train --help 2>&1)
  listed=$("$gpu_tests" --gtest_list_tests | grep -c '^  ')
  expect "fake GPU: exit 1 (stages failed)" [ "$rc" -eq 1 ]
  expect "fake GPU: results.tsv has the 12 stages in order, 4 columns each" well_formed "$out"
  expect "fake GPU: the table printed" has_table "$case/stdout"
  expect "fake GPU: the table in summary.md" has_table "$out/summary.md"
  expect "fake GPU: summary.md says the check finished" grep -q '^- status: finished$' \
    "$out/summary.md"
  outputs_of_run "$out" "$logs" "fake GPU"
  expect "fake GPU: logs.tgz holds every stage's log" \
    [ "$(for s in $stages; do [ -f "$logs/logs/$s.log" ] && echo "$s"; done | wc -l)" -eq 12 ]
  expect "fake GPU: env fails, saying the driver is older than the CUDA runtime" \
    contains "$(result_of "$out" env)" "the driver supports CUDA 12080, the binaries need 13000"
  expect "fake GPU: cudnn ok" [ "$(result_of "$out" cudnn)" = ok ]
  expect "fake GPU: cudnn's key number is the NONE count" [ "$(key_of "$out" cudnn)" = "1 NONE" ]
  expect "fake GPU: cudnn_algos.tsv has the probe's three lines, 7 columns" \
    [ "$(awk -F'\t' 'NF == 7' "$out/cudnn_algos.tsv" | wc -l)" -eq 4 ]
  expect "fake GPU: cudnn_algos.tsv tells heuristic answers from measured ones" \
    [ "$(cut -f6 "$out/cudnn_algos.tsv" | tr '\n' ' ')" = "method heuristic heuristic find " ]
  expect "fake GPU: profile skipped without nsys or PyTorch with CUDA" [ "$(result_of "$out" \
    profile)" = "skipped: neither Nsight Systems nor PyTorch with CUDA here" ]
  expect "fake GPU: profile asked nvidia-smi for the clocks" [ -f "$logs/logs/gpu_clocks.txt" ]
  expect "fake GPU: compile skipped without PyTorch with CUDA" \
    [ "$(result_of "$out" compile)" = "skipped: PyTorch with CUDA is not here" ]
  tests_stage "$out" "$logs" "$listed"
  memcheck_stage "$out" "$case" "$gpu_tests"
  training_stages "$out" "$logs" "$help"
  cache_use "$case" "$help"
  rerun_two_stages "$case" "$listed"
  test_outcomes
}

case ${1:-} in
  dry-run) dry_run ;;
  fake-gpu) fake_gpu "$2" "$3" ;;
  *)
    echo "usage: check_device_check.sh dry-run | fake-gpu RINGTRAIN_GPU_TESTS RINGTRAIN" >&2
    exit 2
    ;;
esac
if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all checks passed"
