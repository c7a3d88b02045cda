#!/usr/bin/env bash
# Builds what the GPU check runs (no GPU needed, only the CUDA toolkit) and packs it into
# build-gpu/bundle.tar.xz for a bare GPU machine (a driver and Python with PyTorch; no MPI, HDF5,
# oneDNN or OpenBLAS): the binaries, every shared library they need except glibc's and CUDA's,
# and Open MPI's runtime (mpirun, orted, its plugins, help texts and settings, PMIx's plugins).
# The CUDA libraries (cuDNN, cuBLAS, NCCL) stay out: `source bundle/env.sh` takes them from
# PyTorch's pip wheels on the GPU machine. tests/gpu/bundle_selftest.sh proves the bundle runs
# with all of those hidden.
#   bash tests/gpu/pack.sh      # then carry build-gpu/ and run bash tests/gpu/device_check.sh
set -euo pipefail
shopt -s nullglob
cd "$(dirname "$0")/../.."
bash env/install_deps.sh
# A build of its own, for a portable x86-64 level: -march=native here would emit instructions
# (AVX-512 FP16, say) that the GPU machine's CPU may lack. HDF5 is linked statically and a binary
# keeps only the shared libraries it calls (--as-needed): the shared HDF5 would bring libcurl and
# OpenSSL for its S3 driver, which ringtrain never uses: a sixth of the bundle.
# Note: CMake's FindHDF5 leaves the static library's own dependencies (szip, zlib) off the link.
# The GPU machines lent are Hopper (H100, H200): the bundle's kernels are built for sm_90 (and its
# PTX) alone, RINGTRAIN_PACK_CUDA_ARCHITECTURES to change it; the default list for a build on a
# machine without a GPU takes twice as long. RINGTRAIN_PACK_BUILD_TYPE (default Release) is for
# bundle_selftest.sh in the test command, which checks how the bundle is packed and loads, not
# how fast it runs, and builds it unoptimised, in a folder of its own (RINGTRAIN_PACK_BUILD_DIR,
# default build-pack) and packs it into another (RINGTRAIN_PACK_OUT, default build-gpu), so that
# the bundle carried to a GPU machine is never that one.
build=${RINGTRAIN_PACK_BUILD_DIR:-build-pack}
out=${RINGTRAIN_PACK_OUT:-build-gpu}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${RINGTRAIN_PACK_BUILD_TYPE:-Release}" \
  -DRINGTRAIN_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="${RINGTRAIN_PACK_CUDA_ARCHITECTURES:-90}" \
  -DRINGTRAIN_MARCH=x86-64-v3 -U "HDF5_*" -DHDF5_USE_STATIC_LIBRARIES=ON \
  -DCMAKE_EXE_LINKER_FLAGS=-Wl,--as-needed "-DCMAKE_CXX_STANDARD_LIBRARIES=-lsz -lz" >/dev/null
cmake --build "$build" -j "$(nproc)" \
  --target ringtrain_gpu_tests bench_train_gpu cudnn_probe ringtrain

stage=$out/bundle
rm -rf "$stage" "$out/bundle.tar.xz"
mkdir -p "$stage"/{bin,lib/openmpi,lib/pmix,lib-fallback,share/openmpi,share/pmix,etc}

# ompi_path NAME: one of Open MPI's install folders (bindir, pkglibdir, pkgdatadir, sysconfdir).
ompi_path() { ompi_info --path "$1" --parsable | awk -F : -v k="$1" '$2 == k && !n++ {print $3}'; }

# deps FILE...: the shared libraries FILEs load (ldd, transitively), one path a line.
deps() { for f in "$@"; do ldd "$f"; done | awk '/=> \//{print $3}' | sort -u; }

# Open MPI plugins (and PMIx's) that need nothing but the bundle: those of InfiniBand, UCX,
# libfabric and PSM networks, and OpenSHMEM's, are left out (a bare GPU machine has none of
# their libraries, and one GPU node needs only shared memory and TCP).
carry_plugins() {
  local from=$1 to=$2 plugin needs
  local unwanted='not found|lib(uc[mpst]|fabric|psm|infinipath|ibverbs|rdmacm|efa|nl-|oshmem)'
  for plugin in "$from"/*.so; do
    needs=$(ldd "$plugin")
    if ! grep -Eq "$unwanted" <<<"$needs"; then
      cp -L "$plugin" "$to/"
    fi
  done
}

carry_open_mpi() {
  local bindir pmix pmix_lib
  bindir=$(ompi_path bindir)
  cp -L "$bindir/orted" "$bindir/mpirun" "$bindir/mpiexec" "$stage/bin/"
  carry_plugins "$(ompi_path pkglibdir)" "$stage/lib/openmpi"
  cp "$(ompi_path pkgdatadir)"/help-*.txt "$stage/share/openmpi/"
  cp -r "$(ompi_path pkgdatadir)/amca-param-sets" "$stage/share/openmpi/"
  cp "$(ompi_path sysconfdir)"/openmpi-{mca-params.conf,default-hostfile} "$stage/etc/"
  # PMIx (Open MPI's process manager interface) keeps its plugins beside its own library.
  pmix=$(deps "$stage"/lib/openmpi/*.so | awk '/\/libpmix\./ && !n++')
  if [ -n "$pmix" ]; then
    pmix_lib=$(dirname "$(readlink -f "$pmix")")
    carry_plugins "$pmix_lib/pmix" "$stage/lib/pmix"
    cp "$pmix_lib"/../share/pmix/help-*.txt "$stage/share/pmix/"
  fi
}

carry_libraries() {
  local lib
  deps "$stage"/bin/* "$stage"/lib/openmpi/*.so "$stage"/lib/pmix/*.so | while read -r lib; do
    case "$(basename "$lib")" in
      # glibc's own: the GPU machine's, which must be the same or newer (bundle_selftest.sh
      # prints the version the binaries need).
      ld-linux* | lib[cm].so* | libmvec.so* | libdl.so* | libpthread.so* | librt.so* | \
        libresolv.so* | libutil.so* | libanl.so* | libnsl.so* | libnss_*) ;;
      # The GPU machine's own: its driver and PyTorch's wheels.
      libcuda.so* | libcudnn* | libcublas* | libnccl* | libcudart* | libnvrtc* | libnvJitLink*) ;;
      # Used only where the GPU machine's own are too old: ours need glibc 2.36.
      libstdc++.so* | libgcc_s.so*) cp -L "$lib" "$stage/lib-fallback/" ;;
      *) cp -L "$lib" "$stage/lib/" ;;
    esac
  done
}

cp "$build"/ringtrain "$build"/tests/{ringtrain_gpu_tests,cudnn_probe} \
  "$build"/bench/bench_train_gpu "$stage/bin/"
carry_open_mpi
carry_libraries
cp tests/gpu/bundle_env.sh "$stage/env.sh"
# The commit the binaries come from, for device_check.sh's summary: the copy of the tree on the
# GPU machine has no .git.
{ git describe --always --dirty --abbrev=12 2>/dev/null || echo unknown; } >"$stage/COMMIT"
# Note: xz, not gzip: the bundle travels with the CIFAR-10 tarball (19 MB) in the lent machine's
# 64 MiB, and oneDNN, OpenBLAS and ICU's data (libarchive's libxml2) compress to 31 MB in xz
# against 54 MB in gzip. Level 6 takes about 30 s on 2 cores; bundle_selftest.sh, which only
# unpacks the bundle, sets RINGTRAIN_PACK_XZ_LEVEL=1 (40 MB, 5 s).
level=${RINGTRAIN_PACK_XZ_LEVEL:-6}
case $level in
  [0-9]) ;;
  *)
    echo "pack: RINGTRAIN_PACK_XZ_LEVEL=$level: give an xz level, 0 to 9" >&2
    exit 2
    ;;
esac
tar -C "$out" -cf - bundle | xz -T0 "-$level" >"$out/bundle.tar.xz"
rm -rf "$stage"
echo "pack: $out/bundle.tar.xz ($(du -h "$out/bundle.tar.xz" | cut -f1))"
carried=0
for file in "$out/bundle.tar.xz" "$out/cifar10.tar.gz"; do
  if [ -f "$file" ]; then carried=$((carried + $(stat -c %s "$file"))); fi
done
if [ "$carried" -gt $((60 << 20)) ]; then
  echo "pack: warning: $out/ carries $((carried >> 20)) MiB; with the working tree it must" \
    "stay under the GPU machine's 64 MiB"
fi
