#pragma once
// Element types on the device and the helpers every kernel file uses.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "ringtrain/backend/kernels/element.hpp"
#include "ringtrain/backend/kernels/grid.hpp"
#include "ringtrain/core/tensor.hpp"

namespace ringtrain::kernels {

template <>
struct Element<__nv_bfloat16> {
  __host__ __device__ static float load(__nv_bfloat16 v) { return __bfloat162float(v); }
  __host__ __device__ static __nv_bfloat16 store(float v) { return __float2bfloat16_rn(v); }
};

template <>
struct Element<__half> {
  __host__ __device__ static float load(__half v) { return __half2float(v); }
  __host__ __device__ static __half store(float v) { return __float2half_rn(v); }
};

}  // namespace ringtrain::kernels

namespace ringtrain::cuda {

using kernels::blocks_for;
using kernels::from_float;
using kernels::kThreads;
using kernels::to_float;

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

}  // namespace ringtrain::cuda
