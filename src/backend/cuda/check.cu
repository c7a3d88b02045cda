#include "ringtrain/backend/cuda/cuda_check.hpp"

#include <cstdio>

namespace ringtrain::cuda {
namespace {
std::string context = "rank 0, cuda:?";
}

void set_error_context(int rank, int device) {
  context = str_cat("rank ", rank, ", cuda:", device);
}

const std::string& error_context() {
  return context;
}

void throw_error(const char* library, const char* call, const char* message, int code) {
  throw Error(
      str_cat(library, " error on ", context, ": ", call, " returned ", code, " (", message, ")"));
}

void warn_on_error(cudaError_t code, const char* call) {
  if (code != cudaSuccess)
    std::fprintf(stderr, "ringtrain: warning: CUDA error on %s: %s returned %d (%s)\n",
                 context.c_str(), call, static_cast<int>(code), cudaGetErrorString(code));
}

}  // namespace ringtrain::cuda
