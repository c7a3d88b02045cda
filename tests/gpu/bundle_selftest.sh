#!/usr/bin/env bash
# Proves the GPU bundle (tests/gpu/pack.sh) runs on a bare GPU machine, without one: unpacks it
# in a mount namespace where this machine's MPI, PMIx, HDF5, OpenBLAS, oneDNN, spdlog/fmt and
# CUDA libraries and MPI programs are hidden (empty tmpfs over their folders, /dev/null over
# their files), the CUDA libraries offered instead as PyTorch's pip wheels offer them
# (site-packages/nvidia/*/lib), then sources bundle/env.sh and checks:
#   - ldd: every binary and plugin finds every library, in the bundle, the stand-in wheels or
#     glibc, none in a hidden place; the bundle holds no glibc library;
#   - the binaries hold no AVX-512 instruction (pack.sh builds for x86-64-v3);
#   - ringtrain --version; a 2-step CPU training as a singleton (MPI_Init starts Open MPI's
#     orted, the bundle's) and under the bundle's mpirun -np 2;
#   - ringtrain_gpu_tests --gtest_list_tests, bench_train_gpu --help, cudnn_probe --versions (the
#     cuDNN, cuBLAS and NCCL versions, loaded from the wheels; it then stops: no GPU here).
# Prints the bundle's size and the glibc version it needs. Exits 77 (skipped) with the reason
# where there is no CUDA backend or mount namespaces are not permitted.
#   tests/gpu/bundle_selftest.sh [WITH_CUDA [BUNDLE.tar.xz]]
# WITH_CUDA: OFF skips (ctest passes the build's RINGTRAIN_WITH_CUDA); without BUNDLE it runs
# pack.sh unoptimised (an incremental build in build-pack-selftest/, no -O: what is checked is
# how the bundle is packed and loads; xz level 1, the fastest to write) into a temporary folder
# and checks that bundle, leaving build-pack/ and build-gpu/ alone.
set -u
here=$(cd "$(dirname "$0")" && pwd)
failures=0 checks=0
ok() {
  echo "ok   $1"
  checks=$((checks + 1))
}
fail() {
  echo "FAIL $1"
  [ -f "${2:-}" ] && tail -n 20 "$2" | sed 's/^/   | /'
  checks=$((checks + 1)) failures=$((failures + 1))
}
# expect STATUS WHAT [LOG]: ok WHAT when STATUS is 0, else FAIL WHAT with LOG's tail.
expect() {
  if [ "$1" -eq 0 ]; then ok "$2"; else fail "$2" "${3:-}"; fi
}
skip() {
  echo "SKIPPED: $1"
  exit 77
}

# The CUDA libraries the binaries load, offered as pip wheels do: each folder they lie in
# bind-mounted to $dir/site/nvidia/<n>/lib (before the originals are hidden).
offer_wheels() {
  local n=0 from
  for from in $(for f in "$b"/bin/*; do ldd "$f"; done |
    awk '/=> \// && $1 ~ /^lib(cuda|cudnn|cublas|nccl|cudart|nvrtc)/ {print $3}' |
    xargs -r -n 1 dirname | sort -u); do
    n=$((n + 1))
    mkdir -p "$dir/site/nvidia/wheel$n/lib"
    mount --bind "$from" "$dir/site/nvidia/wheel$n/lib" || fail "cannot offer $from as a wheel"
  done
  [ "$n" -gt 0 ] || fail "no CUDA library found for the stand-in wheels"
  export PYTHONPATH="$dir/site"
}

# hide_file PATH: /dev/null over the file PATH is or links to (once).
hide_file() {
  local target
  target=$(readlink -f "$1")
  if [ -f "$target" ] && ! grep -q " $target " /proc/self/mountinfo; then
    mount --bind /dev/null "$target" && hidden=$((hidden + 1))
  fi
}

# Hides what a bare GPU machine lacks. Libraries the machine's python3 and this script's tools
# need are kept: the GPU machine has those (the bundle's own copies come first all the same).
hide_system() {
  local arch_lib folder lib keep carried=() names
  arch_lib=/usr/lib/$(uname -m)-linux-gnu hidden=0
  names=(mpi open-rte open-pal mca_common oshmem pmix hdf5 sz aec openblas blas lapack dnnl spdlog
    fmt hwloc event cudnn cublas nccl cudart cuda nvrtc)
  for folder in "$arch_lib"/{openmpi,pmix2,hdf5,openblas*,blas,lapack} /etc/openmpi \
    /usr/share/openmpi /usr/local/cuda-* "$(readlink -f /usr/local/cuda)"; do
    [ -d "$folder" ] && mount -t tmpfs -o size=1m rt-hidden "$folder" && hidden=$((hidden + 1))
  done
  for lib in "${names[@]}"; do carried+=("$arch_lib/lib$lib"* /usr/local/lib/"lib$lib"*); done
  for lib in "$b"/lib/*.so*; do carried+=("$arch_lib/$(basename "$lib")"); done
  keep=" $(ldd "$(python3 -c 'import sys; print(sys.executable)')" /bin/bash /bin/mount \
    "$(command -v objdump)" | awk '/=> \//{print $1}' | sort -u | tr '\n' ' ')"
  for lib in "${carried[@]}"; do
    case $keep in *" $(basename "$lib") "*) continue ;; esac
    [ -e "$lib" ] && hide_file "$lib"
  done
  for lib in /usr/bin/{mpi,orte,ompi,opal,oshrun,shmemrun,h5}*; do
    [ -e "$lib" ] && hide_file "$lib"
  done
  echo "info hid $hidden system folders and files; kept for python3 and the shell tools:$keep"
}

# ldd over every binary and plugin: a library not found, or found outside the bundle, the
# stand-in wheels and glibc, fails.
check_ldd() {
  local f
  for f in "$b"/bin/* "$b"/lib/*.so* "$b"/lib/*/*.so; do
    ldd "$f" 2>&1 | awk -v f="${f#"$b"/}" -v b="$b/" -v s="$dir/site/" '
      /not found|error/ {print f ": " $0; next}
      /=> \// && index($3, b) != 1 && index($3, s) != 1 &&
        $1 !~ /^lib(c|m|mvec|dl|pthread|rt|resolv|util|stdc\+\+|gcc_s)\.so/ {
        print f ": " $1 " from " $3 " (outside the bundle)"
      }'
  done >"$dir/ldd.problems"
  [ ! -s "$dir/ldd.problems" ]
  expect $? "ldd: every binary and plugin finds every library in the bundle, the wheels or glibc" \
    "$dir/ldd.problems"
  find "$b" -regextype egrep \
    -regex '.*/(ld-linux.*|lib(c|m|mvec|dl|pthread|rt|resolv|util)\.so.*)' >"$dir/glibc.found"
  [ ! -s "$dir/glibc.found" ]
  expect $? "no glibc library in the bundle" "$dir/glibc.found"
  # Note: proves the hiding itself (a hidden library reads as an empty file).
  LD_LIBRARY_PATH='' ldd "$b/bin/ringtrain" >"$dir/ldd.hidden" 2>&1
  grep -Eq 'file too short|not found' "$dir/ldd.hidden"
  expect $? "the system's libraries are hidden: without the bundle's, ringtrain cannot start" \
    "$dir/ldd.hidden"
}

check_code() {
  local f glibc
  for f in ringtrain ringtrain_gpu_tests bench_train_gpu cudnn_probe; do
    objdump -d --no-show-raw-insn "$b/bin/$f" | grep -m 5 '%zmm' >"$dir/$f.avx512"
    [ ! -s "$dir/$f.avx512" ]
    expect $? "$f: no AVX-512 instruction (portable to any x86-64-v3 CPU)" "$dir/$f.avx512"
  done
  find "$b" -type f \( -name '*.so*' -o -path '*/bin/*' \) -exec objdump -T {} + 2>/dev/null |
    awk '/file format/ {sub(/.*\//, ""); sub(/:$/, "", $1); f = $1}
      match($0, /GLIBC_[0-9.]+/) {print substr($0, RSTART + 6, RLENGTH - 6), f}' |
    sort -uV >"$dir/glibc.needed"
  glibc=$(tail -n 1 "$dir/glibc.needed" | cut -d ' ' -f 1)
  echo "info the bundle needs glibc $glibc or newer on the GPU machine, for" \
    "$(awk -v v="$glibc" '$1 == v {print $2}' "$dir/glibc.needed" | paste -sd ' ')" \
    "(here: $(ldd --version | head -n 1))"
}

# run NAME LIMIT WANT COMMAND...: COMMAND, its output in $dir/NAME.log, exits 0 within LIMIT
# seconds and prints a line matching the regex WANT.
run() {
  local log=$dir/$1.log limit=$2 want=$3
  shift 3
  timeout "$limit" "$@" >"$log" 2>&1 && grep -Eq "$want" "$log"
  expect $? "${*//"$dir"\//}" "$log"
}

check_runs() {
  local train=(train --device cpu --data "$dir/tiny.h5" --steps 2 --depth 18 --width 0.125
    --batch-size 8 --threads 1 --workers 1 --no-eval --log-interval 1)
  cd "$dir" || return
  mkdir -p "$dir/tmp"
  export TMPDIR=$dir/tmp # Open MPI's session folders: this test's own
  [ "$(command -v mpirun)" = "$b/bin/mpirun" ] && [ "$(command -v orted)" = "$b/bin/orted" ]
  expect $? "mpirun and orted on PATH are the bundle's: $(command -v mpirun orted | tr '\n' ' ')"
  run version 20 '^ringtrain [0-9]' ringtrain --version
  run synth 60 . ringtrain data synth --out "$dir/tiny.h5" --train 64 --test 16 \
    --height 16 --width 16
  # A singleton: MPI_Init starts the bundle's orted.
  run singleton 120 'summary: 2 steps' ringtrain "${train[@]}"
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 run np2 180 '2 ranks on 1 node' \
    mpirun -np 2 --oversubscribe ringtrain "${train[@]}"
  grep -q 'summary: 2 steps' "$dir/np2.log"
  expect $? "mpirun -np 2: the 2 steps trained" "$dir/np2.log"
  run gtests 60 '^  ' ringtrain_gpu_tests --gtest_list_tests
  run bench 30 'Usage' bench_train_gpu --help
  # No GPU here: cudnn_probe prints the versions of what it loaded, then stops (exit 2).
  timeout 60 cudnn_probe --versions >"$dir/probe.log" 2>&1
  grep -q '^cuDNN [0-9]' "$dir/probe.log" && grep -q '^cuBLAS [0-9.]*, NCCL [0-9]' "$dir/probe.log"
  expect $? "cudnn_probe --versions loads cuDNN, cuBLAS and NCCL: $(grep -E '^cu(DNN|BLAS)' \
    "$dir/probe.log" | tr '\n' ' ')" "$dir/probe.log"
}

# The checks, inside the mount namespace: $1 is the folder holding the unpacked bundle/.
inside() {
  dir=$1 b=$1/bundle
  offer_wheels
  hide_system
  if [ -f "$b/env.sh" ]; then
    # shellcheck source-path=SCRIPTDIR source=bundle_env.sh
    source "$b/env.sh"
  else
    fail "no env.sh in the bundle (the checks below run with its lib/ and the wheels)"
    LD_LIBRARY_PATH="$b/lib$(printf ':%s' "$dir"/site/nvidia/*/lib)" PATH="$b/bin:$PATH"
    export LD_LIBRARY_PATH
  fi
  [[ "$LD_LIBRARY_PATH" == *"$dir/site/nvidia/"* ]]
  expect $? "env.sh adds the (stand-in) wheels' CUDA libraries: LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  if [[ "$LD_LIBRARY_PATH" == *lib-fallback* ]]; then echo "info using the bundle's libstdc++"; fi
  check_ldd
  check_code
  check_runs
  echo "bundle_selftest: $checks checks, $failures failed"
  [ "$failures" -eq 0 ]
}

if [ "${1:-}" = --inside ]; then
  inside "$2"
  exit
fi
[ "${1:-ON}" != OFF ] || skip "no CUDA backend in this build (no CUDA toolkit, cuDNN or NCCL found)"
command -v unshare >/dev/null || skip "no 'unshare' (util-linux) to make a mount namespace"
ns=(unshare --mount --propagation private)
[ "$(id -u)" -eq 0 ] || ns=(unshare --map-root-user --mount --propagation private)
"${ns[@]}" mount -t tmpfs rt-probe /mnt 2>/dev/null ||
  skip "mount namespaces not permitted here (need root, CAP_SYS_ADMIN or user namespaces)"

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
bundle=${2:-$dir/gpu/bundle.tar.xz}
if [ -z "${2:-}" ]; then
  start=$SECONDS
  if ! RINGTRAIN_PACK_XZ_LEVEL=1 RINGTRAIN_PACK_BUILD_TYPE=None \
    RINGTRAIN_PACK_BUILD_DIR=build-pack-selftest RINGTRAIN_PACK_OUT="$dir/gpu" \
    bash "$here/pack.sh" >"$dir/pack.log" 2>&1; then
    fail "pack.sh" "$dir/pack.log"
    exit 1
  fi
  echo "ok   pack.sh (build-pack-selftest/ brought up to date, unoptimised, then packed) in" \
    "$((SECONDS - start)) s"
fi
tar -C "$dir" -xJf "$bundle" || {
  fail "cannot unpack $bundle"
  exit 1
}
echo "info bundle: $(du -h "$bundle" | cut -f 1) compressed," \
  "$(du -sh "$dir/bundle" | cut -f 1) unpacked"
"${ns[@]}" bash "$0" --inside "$dir"
