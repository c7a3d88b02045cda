#pragma once
// Every CUDA, cuDNN and cuBLAS call goes through one of these checks. The error names the call,
// the library's message, the rank and the device, so one log line from a large job is enough.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <string>

#include "ringtrain/core/error.hpp"

namespace ringtrain::cuda {

// Set by the backend for the calling thread (at construction and bind_thread): "rank R, cuda:D".
void set_error_context(int rank, int device);
std::string error_context();

[[noreturn]] void throw_error(const char* library, const char* call, const char* message, int code);

inline void check(cudaError_t code, const char* call) {
  if (code != cudaSuccess) throw_error("CUDA", call, cudaGetErrorString(code), code);
}
inline void check(cudnnStatus_t code, const char* call) {
  if (code != CUDNN_STATUS_SUCCESS) throw_error("cuDNN", call, cudnnGetErrorString(code), code);
}
inline void check(cublasStatus_t code, const char* call) {
  if (code != CUBLAS_STATUS_SUCCESS) throw_error("cuBLAS", call, cublasGetStatusString(code), code);
}

}  // namespace ringtrain::cuda

#define RT_CUDA_CHECK(call) ::ringtrain::cuda::check((call), #call)
// After a kernel launch: a bad launch configuration surfaces here, not at the next call.
#define RT_CUDA_CHECK_LAUNCH(kernel) ::ringtrain::cuda::check(cudaGetLastError(), kernel)

namespace ringtrain::cuda {
// For destructors and deleters, which must not throw: the failure is printed instead.
void warn_on_error(cudaError_t code, const char* call);
void warn_on_error(cudnnStatus_t code, const char* call);
void warn_on_error(cublasStatus_t code, const char* call);
}  // namespace ringtrain::cuda
