# shellcheck shell=bash
# Sourced from an unpacked GPU bundle (tests/gpu/pack.sh copies this file to bundle/env.sh):
#   source bundle/env.sh
# makes the bundle work where it lies, on a machine without MPI, HDF5 or the CUDA toolkit:
# PATH and LD_LIBRARY_PATH reach the bundle's binaries (mpirun and orted among them) and
# libraries; Open MPI and PMIx find their plugins, help texts and settings in the bundle rather
# than where they were installed here; and the CUDA libraries (cuDNN, cuBLAS, NCCL, the CUDA
# runtime) are taken from the machine: PyTorch's pip wheels (site-packages/nvidia/*/lib), or
# a CUDA toolkit's lib64.
rt_bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PATH="$rt_bundle/bin:$PATH"
export OPAL_PREFIX="$rt_bundle" OPAL_EXEC_PREFIX="$rt_bundle" OPAL_BINDIR="$rt_bundle/bin" \
  OPAL_LIBDIR="$rt_bundle/lib" OPAL_PKGLIBDIR="$rt_bundle/lib/openmpi" \
  OPAL_DATAROOTDIR="$rt_bundle/share" OPAL_DATADIR="$rt_bundle/share" \
  OPAL_PKGDATADIR="$rt_bundle/share/openmpi" OPAL_SYSCONFDIR="$rt_bundle/etc"
export PMIX_PREFIX="$rt_bundle" PMIX_LIBDIR="$rt_bundle/lib" PMIX_PKGLIBDIR="$rt_bundle/lib/pmix" \
  PMIX_DATAROOTDIR="$rt_bundle/share" PMIX_DATADIR="$rt_bundle/share" \
  PMIX_PKGDATADIR="$rt_bundle/share/pmix" PMIX_SYSCONFDIR="$rt_bundle/etc"
rt_libs="$rt_bundle/lib"
for rt_dir in $(python3 -c 'import glob, os, nvidia
for p in nvidia.__path__: print(" ".join(sorted(glob.glob(os.path.join(p, "*", "lib")))))' \
  2>/dev/null) "${CUDA_HOME:-/usr/local/cuda}/lib64"; do
  if [ -d "$rt_dir" ]; then rt_libs="$rt_libs:$rt_dir"; fi
done
export LD_LIBRARY_PATH="$rt_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Note: the bundle's libstdc++ only where the machine's own is too old for the binaries.
if ! "$rt_bundle/bin/ringtrain" --version >/dev/null 2>&1; then
  LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$rt_bundle/lib-fallback"
fi
unset rt_bundle rt_libs rt_dir
