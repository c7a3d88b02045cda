#include "ringtrain/backend/cuda/cuda_check.hpp"

#include <atomic>
#include <cstdio>

namespace ringtrain::cuda {
namespace {
// Note: one process may drive several devices (DataParallel: one host thread per replica), so
// the device an error names is the one the failing thread last bound; a thread that bound none
// names the process's rank only.
std::atomic<int> process_rank{0};
thread_local std::string thread_context;
}  // namespace

void set_error_context(int rank, int device) {
  thread_context = str_cat("rank ", rank, ", cuda:", device);
  process_rank = rank;
}

std::string error_context() {
  return thread_context.empty() ? str_cat("rank ", process_rank.load(), ", cuda:?")
                                : thread_context;
}

void throw_error(const char* library, const char* call, const char* message, int code) {
  throw Error(str_cat(library, " error on ", error_context(), ": ", call, " returned ", code, " (",
                      message, ")"));
}

void warn_on_error(cudaError_t code, const char* call) {
  if (code != cudaSuccess)
    std::fprintf(stderr, "ringtrain: warning: CUDA error on %s: %s returned %d (%s)\n",
                 error_context().c_str(), call, static_cast<int>(code), cudaGetErrorString(code));
}

void warn_on_error(cublasStatus_t code, const char* call) {
  if (code != CUBLAS_STATUS_SUCCESS)
    std::fprintf(stderr, "ringtrain: warning: cuBLAS error on %s: %s returned %d (%s)\n",
                 error_context().c_str(), call, static_cast<int>(code),
                 cublasGetStatusString(code));
}

void warn_on_error(cudnnStatus_t code, const char* call) {
  if (code != CUDNN_STATUS_SUCCESS)
    std::fprintf(stderr, "ringtrain: warning: cuDNN error on %s: %s returned %d (%s)\n",
                 error_context().c_str(), call, static_cast<int>(code), cudnnGetErrorString(code));
}

}  // namespace ringtrain::cuda
