#pragma once
#include <string>

namespace ringtrain::cli {

// `ringtrain --version`: the version, git commit, build type and compiler, and every library's
// version as built against and as running (CUDA runtime and driver, cuDNN, cuBLAS, NCCL, MPI,
// HDF5).
std::string version_text();

}  // namespace ringtrain::cli
