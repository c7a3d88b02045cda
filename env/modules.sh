# Environment modules / Lmod: the modules ringtrain builds and runs with on a cluster without
# root. Module names and versions differ between sites: `module avail` (or `module spider`)
# says what yours calls them. Source this file, then build as in README.md.
#   source env/modules.sh && cmake --preset release && cmake --build --preset release
module load cmake/3.27       # >= 3.22
module load gcc/12           # C++17; a compiler the CUDA toolkit supports
module load cuda/13.0        # nvcc, cuBLAS, NVTX (CUDA_HOME is set by the module)
module load cudnn/9          # sets CUDNN_ROOT on most sites
module load nccl/2.28        # sets NCCL_ROOT on most sites
module load openmpi/4.1      # CUDA-aware builds are fine; ringtrain moves gradients with NCCL
module load hdf5/1.14        # the C library (serial is enough)
# Not usually provided as modules; install them with Spack (env/spack.yaml) or from the
# distribution: CLI11, spdlog, nlohmann-json, toml++, GoogleTest, OpenBLAS, oneDNN.
export CUDNN_ROOT=${CUDNN_ROOT:-${CUDNN_HOME:-}}
export NCCL_ROOT=${NCCL_ROOT:-${NCCL_HOME:-}}
