#!/usr/bin/env bash
# Tests of tests/gpu/device_check.sh that need no GPU.
#   check_device_check.sh dry-run
#       --dry-run: exit 0, nine stages in order, each "skipped: no GPU (dry run)", in
#       results.tsv, summary.md and on stdout; and the real mode stops at once, saying why, when
#       nvidia-smi fails or lists no GPU.
#   check_device_check.sh fake-gpu RINGTRAIN_GPU_TESTS RINGTRAIN
#       the real mode against an nvidia-smi that claims a GPU, with these two binaries and a fake
#       cudnn_probe and bench_train_gpu: every stage ends in results.tsv; each GPU test ran in its
#       own process with RINGTRAIN_REQUIRE_GPU=1 and so failed, and was rerun with
#       CUDA_LAUNCH_BLOCKING=1, both logs kept; the key numbers are read from the outputs; the dp
#       stage is skipped by a ringtrain without --dp-share-device and fails on the fake GPU in
#       one with it. Exit 77
#       (skipped) where a real GPU is present.
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
stages="env cudnn tests memcheck cifar10 resnet50 dp pytorch mpi"

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
contains() { [[ $1 == *"$2"* ]]; }
# The number of files in $1 whose names match (grep -c) or do not match (grep -vc) $3.
count_files() { find "$1" -maxdepth 1 -type f -printf '%f\n' | grep "$2" "$3"; }

# A fake nvidia-smi in $1/bin that prints $2 and exits with $3.
fake_nvidia_smi() {
  mkdir -p "$1/bin"
  printf '#!/bin/sh\necho "%s"\nexit %s\n' "$2" "$3" >"$1/bin/nvidia-smi"
  chmod +x "$1/bin/nvidia-smi"
}

dry_run() {
  local out=$tmp/dry rc
  OUT=$out timeout 60 bash "$check" --dry-run >"$tmp/dry.txt" 2>&1
  rc=$?
  expect "dry run exits 0" [ "$rc" -eq 0 ]
  expect "dry run: results.tsv has the 9 stages in order, 4 columns each" well_formed "$out"
  expect "dry run: every stage 'skipped: no GPU (dry run)'" \
    [ "$(tail -n +2 "$out/results.tsv" | cut -f2 | sort -u)" = "skipped: no GPU (dry run)" ]
  expect "dry run: the table printed" has_table "$tmp/dry.txt"
  expect "dry run: the table in summary.md" has_table "$out/summary.md"
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
# driver, one NCHW pass without an algorithm), so that the check's reading of them is tested.
fake_probe_and_bench() {
  cat >"$1/cudnn_probe" <<'EOF'
#!/bin/sh
if [ "${1:-}" = --versions ]; then
  echo "CUDA driver API 12080, runtime 13000 (the probe's, static)"
  exit 0
fi
echo "conv 3x3 stride 1 pad 1 [256,3,32,32] -> [256,64,32,32] [resnet18] f32 nchw forward: NONE"
echo "cudnn_probe: 33 shapes, 792 queries, 1 NONE (0 in NHWC even zero-padded)"
EOF
  cat >"$1/bench_train_gpu" <<'EOF'
#!/bin/sh
echo "on-device data        24310 img/s    189.4 TFLOP/s  MFU 19.1%"
EOF
  chmod +x "$1/cudnn_probe" "$1/bench_train_gpu"
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

fake_gpu() {
  local gpu_tests=$1 ringtrain=$2 case=$tmp/fake rc listed
  if "$gpu_tests" --gtest_filter='CudaTraining.Bf16*' 2>&1 | grep -q '^\[  PASSED  \] [1-9]'; then
    echo "skipped: a real GPU is present (the real check runs there)"
    exit 77
  fi
  fake_nvidia_smi "$case" "GPU 0: Fake GPU (UUID: GPU-0)" 0
  mkdir -p "$case/binaries"
  ln -s "$gpu_tests" "$case/binaries/ringtrain_gpu_tests"
  ln -s "$ringtrain" "$case/binaries/ringtrain"
  fake_probe_and_bench "$case/binaries"
  tiny_image_tarball "$case/images.tar.gz"
  PATH="$case/bin:$PATH" OUT=$case/out DEVICE_CHECK_BIN=$case/binaries \
    CIFAR_TARBALL=$case/images.tar.gz timeout 420 \
    bash "$check" >"$case/stdout" 2>&1
  rc=$?
  local out=$case/out
  expect "fake GPU: exit 1 (stages failed)" [ "$rc" -eq 1 ]
  expect "fake GPU: results.tsv has the 9 stages in order, 4 columns each" well_formed "$out"
  expect "fake GPU: the table printed" has_table "$case/stdout"
  expect "fake GPU: the table in summary.md" has_table "$out/summary.md"
  expect "fake GPU: env fails, saying the driver is older than the CUDA runtime" \
    contains "$(result_of "$out" env)" "the driver supports CUDA 12080, the binaries need 13000"
  expect "fake GPU: cudnn ok" [ "$(result_of "$out" cudnn)" = ok ]
  expect "fake GPU: cudnn's key number is the NONE count" [ "$(key_of "$out" cudnn)" = "1 NONE" ]
  listed=$("$gpu_tests" --gtest_list_tests | grep -c '^  ')
  expect "fake GPU: all $listed GPU tests fail under RINGTRAIN_REQUIRE_GPU=1" \
    starts_with "$(result_of "$out" tests)" "FAIL: $listed failed: "
  expect "fake GPU: one log per test" \
    [ "$(count_files "$out/tests" -vc '\.blocking\.log$')" -eq "$listed" ]
  expect "fake GPU: one CUDA_LAUNCH_BLOCKING=1 log per test" \
    [ "$(count_files "$out/tests" -c '\.blocking\.log$')" -eq "$listed" ]
  expect "fake GPU: a test log says why it failed" \
    grep -q "RINGTRAIN_REQUIRE_GPU=1 but no CUDA device" \
    "$out/tests/CudaTraining.Bf16LossFallsOnABatchItCanMemorise.log"
  expect "fake GPU: gpu_tests.tsv has one line per test" \
    [ "$(($(wc -l <"$out/gpu_tests.tsv") - 1))" -eq "$listed" ]
  expect "fake GPU: cifar10 imports the images, then fails in ringtrain train" \
    starts_with "$(result_of "$out" cifar10)" "FAIL: ringtrain train exit"
  expect "fake GPU: cifar10's importer wrote the dataset" \
    grep -q "import-images: wrote .*: 4 train and 4 test images, 2 classes" "$out/cifar10.log"
  expect "fake GPU: resnet50 fails in ringtrain train --workers 0" \
    [ "$(result_of "$out" resnet50)" = "FAIL: ringtrain train --workers 0 failed" ]
  expect "fake GPU: resnet50 keeps the on-device rate as its key number" \
    [ "$(key_of "$out" resnet50)" = "on-device 24310 img/s" ]
  if "$ringtrain" train --help 2>&1 | grep -q -- '--dp-share-device'; then
    expect "fake GPU: dp fails in ringtrain train --mode dp" \
      starts_with "$(result_of "$out" dp)" "FAIL: ringtrain train --mode dp exit "
  else
    expect "fake GPU: dp skipped without --dp-share-device" \
      [ "$(result_of "$out" dp)" = "skipped: this build's DataParallel has no --dp-share-device" ]
  fi
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
