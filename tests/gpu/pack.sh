#!/usr/bin/env bash
# Builds what the GPU check runs (no GPU needed, only the CUDA toolkit) and packs it with every
# shared library a bare GPU machine lacks (MPI, HDF5, oneDNN, OpenBLAS, spdlog, ...) into
# build-gpu/bundle.tar.gz. The CUDA libraries themselves (cuDNN, cuBLAS, NCCL) are left out:
# device_check.sh finds them on the GPU machine.
#   bash tests/gpu/pack.sh      # then carry build-gpu/ and run bash tests/gpu/device_check.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
bash env/install_deps.sh
# A build of its own, for a portable x86-64 level: -march=native here would emit instructions
# (AVX-512 FP16, say) that the GPU machine's CPU may lack.
cmake -S . -B build-pack -G Ninja -DCMAKE_BUILD_TYPE=Release -DRINGTRAIN_CUDA=ON \
  -DRINGTRAIN_MARCH=x86-64-v3 >/dev/null
cmake --build build-pack -j "$(nproc)" --target ringtrain_gpu_tests bench_train_gpu cudnn_probe ringtrain

stage=build-gpu/bundle
rm -rf build-gpu
mkdir -p "$stage/bin" "$stage/lib" "$stage/lib-fallback"
cp build-pack/tests/ringtrain_gpu_tests build-pack/bench/bench_train_gpu build-pack/tests/cudnn_probe build-pack/ringtrain "$stage/bin/"
for bin in "$stage"/bin/*; do ldd "$bin"; done | awk '/=> \//{print $3}' | sort -u |
  while read -r lib; do
    case "$(basename "$lib")" in
      libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | ld-linux*) ;;  # glibc's own
      libcuda.so* | libcudnn* | libcublas* | libnccl* | libcudart*) ;;  # the GPU machine's own
      # Used only where the GPU machine's own are too old: ours need glibc 2.36.
      libstdc++.so* | libgcc_s.so*) cp -L "$lib" "$stage/lib-fallback/" ;;
      *) cp -L "$lib" "$stage/lib/" ;;
    esac
  done
tar -C build-gpu -czf build-gpu/bundle.tar.gz bundle
rm -rf "$stage"
echo "pack: build-gpu/bundle.tar.gz ($(du -h build-gpu/bundle.tar.gz | cut -f1))"
