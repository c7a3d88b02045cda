// cuDNN and cuBLAS of the launch ledger: each function the CUDA backend calls, counted by name,
// doing nothing on the data. The algorithm searches answer with one algorithm that needs no
// workspace, as fast as any, so the backend's choice and its cache run as on a GPU.
#include <cublas_v2.h>
#include <cudnn.h>

#include "ledger.hpp"

using ringtrain::ledger::count_call;
using ringtrain::ledger::count_descriptor;

namespace {

char handles[4096];
int next_handle = 0;

template <class H>
H new_handle() {
  return reinterpret_cast<H>(&handles[next_handle++ % sizeof(handles)]);
}

// One result of an algorithm search: algorithm 1 (cuDNN's implicit precomputed GEMM for the
// forward pass, an existing one for the others), 1 ms, no workspace.
template <class Perf, class Algo>
cudnnStatus_t one_algorithm(const char* name, int* returned, Perf* results) {
  count_call(name, false);
  *returned = 1;
  results[0] = Perf{};
  results[0].algo = static_cast<Algo>(1);
  results[0].status = CUDNN_STATUS_SUCCESS;
  results[0].time = 1.0f;
  results[0].memory = 0;
  results[0].determinism = CUDNN_DETERMINISTIC;
  results[0].mathType = CUDNN_DEFAULT_MATH;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t descriptor(const char* name) {
  count_descriptor(name);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t work(const char* name) {
  count_call(name, true);
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

size_t cudnnGetVersion() {
  return CUDNN_VERSION;
}
const char* cudnnGetErrorString(cudnnStatus_t) {
  return "launch ledger";
}
cudnnStatus_t cudnnCreate(cudnnHandle_t* handle) {
  *handle = new_handle<cudnnHandle_t>();
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroy(cudnnHandle_t) {
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetStream(cudnnHandle_t, cudaStream_t) {
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* d) {
  *d = new_handle<cudnnTensorDescriptor_t>();
  return descriptor("cudnnCreateTensorDescriptor");
}
cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t) {
  return descriptor("cudnnDestroyTensorDescriptor");
}
cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t, cudnnTensorFormat_t,
                                         cudnnDataType_t, int, int, int, int) {
  return descriptor("cudnnSetTensor4dDescriptor");
}
cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* d) {
  *d = new_handle<cudnnFilterDescriptor_t>();
  return descriptor("cudnnCreateFilterDescriptor");
}
cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t) {
  return descriptor("cudnnDestroyFilterDescriptor");
}
cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t, cudnnDataType_t,
                                         cudnnTensorFormat_t, int, int, int, int) {
  return descriptor("cudnnSetFilter4dDescriptor");
}
cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* d) {
  *d = new_handle<cudnnConvolutionDescriptor_t>();
  return descriptor("cudnnCreateConvolutionDescriptor");
}
cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t) {
  return descriptor("cudnnDestroyConvolutionDescriptor");
}
cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t, int, int, int, int, int,
                                              int, cudnnConvolutionMode_t, cudnnDataType_t) {
  return descriptor("cudnnSetConvolution2dDescriptor");
}
cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t, cudnnMathType_t) {
  return descriptor("cudnnSetConvolutionMathType");
}
cudnnStatus_t cudnnCreatePoolingDescriptor(cudnnPoolingDescriptor_t* d) {
  *d = new_handle<cudnnPoolingDescriptor_t>();
  return descriptor("cudnnCreatePoolingDescriptor");
}
cudnnStatus_t cudnnDestroyPoolingDescriptor(cudnnPoolingDescriptor_t) {
  return descriptor("cudnnDestroyPoolingDescriptor");
}
cudnnStatus_t cudnnSetPooling2dDescriptor(cudnnPoolingDescriptor_t, cudnnPoolingMode_t,
                                          cudnnNanPropagation_t, int, int, int, int, int, int) {
  return descriptor("cudnnSetPooling2dDescriptor");
}

cudnnStatus_t cudnnFindConvolutionForwardAlgorithm(cudnnHandle_t, const cudnnTensorDescriptor_t,
                                                   const cudnnFilterDescriptor_t,
                                                   const cudnnConvolutionDescriptor_t,
                                                   const cudnnTensorDescriptor_t, const int,
                                                   int* returned,
                                                   cudnnConvolutionFwdAlgoPerf_t* results) {
  return one_algorithm<cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionFwdAlgo_t>(
      "cudnnFindConvolutionForwardAlgorithm", returned, results);
}
cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t, const cudnnTensorDescriptor_t,
                                                     const cudnnFilterDescriptor_t,
                                                     const cudnnConvolutionDescriptor_t,
                                                     const cudnnTensorDescriptor_t, const int,
                                                     int* returned,
                                                     cudnnConvolutionFwdAlgoPerf_t* results) {
  return one_algorithm<cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionFwdAlgo_t>(
      "cudnnGetConvolutionForwardAlgorithm_v7", returned, results);
}
cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithm(
    cudnnHandle_t, const cudnnFilterDescriptor_t, const cudnnTensorDescriptor_t,
    const cudnnConvolutionDescriptor_t, const cudnnTensorDescriptor_t, const int, int* returned,
    cudnnConvolutionBwdDataAlgoPerf_t* results) {
  return one_algorithm<cudnnConvolutionBwdDataAlgoPerf_t, cudnnConvolutionBwdDataAlgo_t>(
      "cudnnFindConvolutionBackwardDataAlgorithm", returned, results);
}
cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t, const cudnnFilterDescriptor_t, const cudnnTensorDescriptor_t,
    const cudnnConvolutionDescriptor_t, const cudnnTensorDescriptor_t, const int, int* returned,
    cudnnConvolutionBwdDataAlgoPerf_t* results) {
  return one_algorithm<cudnnConvolutionBwdDataAlgoPerf_t, cudnnConvolutionBwdDataAlgo_t>(
      "cudnnGetConvolutionBackwardDataAlgorithm_v7", returned, results);
}
cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithm(
    cudnnHandle_t, const cudnnTensorDescriptor_t, const cudnnTensorDescriptor_t,
    const cudnnConvolutionDescriptor_t, const cudnnFilterDescriptor_t, const int, int* returned,
    cudnnConvolutionBwdFilterAlgoPerf_t* results) {
  return one_algorithm<cudnnConvolutionBwdFilterAlgoPerf_t, cudnnConvolutionBwdFilterAlgo_t>(
      "cudnnFindConvolutionBackwardFilterAlgorithm", returned, results);
}
cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t, const cudnnTensorDescriptor_t, const cudnnTensorDescriptor_t,
    const cudnnConvolutionDescriptor_t, const cudnnFilterDescriptor_t, const int, int* returned,
    cudnnConvolutionBwdFilterAlgoPerf_t* results) {
  return one_algorithm<cudnnConvolutionBwdFilterAlgoPerf_t, cudnnConvolutionBwdFilterAlgo_t>(
      "cudnnGetConvolutionBackwardFilterAlgorithm_v7", returned, results);
}

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t, const void*, const cudnnTensorDescriptor_t,
                                      const void*, const cudnnFilterDescriptor_t, const void*,
                                      const cudnnConvolutionDescriptor_t, cudnnConvolutionFwdAlgo_t,
                                      void*, size_t, const void*, const cudnnTensorDescriptor_t,
                                      void*) {
  return work("cudnnConvolutionForward");
}
cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t, const void*,
                                           const cudnnFilterDescriptor_t, const void*,
                                           const cudnnTensorDescriptor_t, const void*,
                                           const cudnnConvolutionDescriptor_t,
                                           cudnnConvolutionBwdDataAlgo_t, void*, size_t,
                                           const void*, const cudnnTensorDescriptor_t, void*) {
  return work("cudnnConvolutionBackwardData");
}
cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t, const void*,
                                             const cudnnTensorDescriptor_t, const void*,
                                             const cudnnTensorDescriptor_t, const void*,
                                             const cudnnConvolutionDescriptor_t,
                                             cudnnConvolutionBwdFilterAlgo_t, void*, size_t,
                                             const void*, const cudnnFilterDescriptor_t, void*) {
  return work("cudnnConvolutionBackwardFilter");
}
cudnnStatus_t cudnnPoolingForward(cudnnHandle_t, const cudnnPoolingDescriptor_t, const void*,
                                  const cudnnTensorDescriptor_t, const void*, const void*,
                                  const cudnnTensorDescriptor_t, void*) {
  return work("cudnnPoolingForward");
}
cudnnStatus_t cudnnPoolingBackward(cudnnHandle_t, const cudnnPoolingDescriptor_t, const void*,
                                   const cudnnTensorDescriptor_t, const void*,
                                   const cudnnTensorDescriptor_t, const void*,
                                   const cudnnTensorDescriptor_t, const void*, const void*,
                                   const cudnnTensorDescriptor_t, void*) {
  return work("cudnnPoolingBackward");
}

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  *handle = new_handle<cublasHandle_t>();
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy_v2(cublasHandle_t) {
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t, cudaStream_t) {
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t, void*, size_t) {
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetProperty(libraryPropertyType, int* value) {
  *value = 0;
  return CUBLAS_STATUS_SUCCESS;
}
const char* cublasGetStatusString(cublasStatus_t) {
  return "launch ledger";
}
cublasStatus_t cublasGemmEx(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                            const void*, const void*, cudaDataType, int, const void*, cudaDataType,
                            int, const void*, void*, cudaDataType, int, cublasComputeType_t,
                            cublasGemmAlgo_t) {
  count_call("cublasGemmEx", true);
  return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
