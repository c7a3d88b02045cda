#pragma once
// Element types on the device and the helpers every kernel file uses.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "ringtrain/core/tensor.hpp"

namespace ringtrain::cuda {

// Calls f(T{}) with T the device type of a floating dtype: float, __nv_bfloat16 or __half.
template <class F>
void dispatch_float(const char* op, const Tensor& t, F&& f) {
  RT_CHECK(t.device().kind == DeviceKind::cuda, op, ": CUDA backend got a host tensor ",
           t.describe());
  switch (t.dtype()) {
    case DType::f32:
      f(float{});
      return;
    case DType::bf16:
      f(__nv_bfloat16{});
      return;
    case DType::f16:
      f(__half{});
      return;
    default:
      throw Error(str_cat(op, ": CUDA backend computes in f32, bf16 or f16, got ", t.describe()));
  }
}

template <class T>
__device__ __forceinline__ float to_float(T v) {
  return static_cast<float>(v);
}
template <class T>
__device__ __forceinline__ T from_float(float v) {
  return static_cast<T>(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}

constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n elements: enough to fill the GPU, no more.
inline unsigned blocks_for(int64_t n, int threads = kThreads) {
  const int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65536 ? 65536 : b));
}

#define RT_GRID_STRIDE(i, n)                                                \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); \
       i += int64_t{blockDim.x} * gridDim.x)

}  // namespace ringtrain::cuda
