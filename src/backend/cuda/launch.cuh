#pragma once
// The one kernel most ops launch: a grid-stride loop that calls a body for every index below n.
// The bodies live in include/ringtrain/backend/kernels/, where the unit tests run them through
// a host emulator of this same loop; this file is the thin device half.
#include "ringtrain/backend/cuda/cuda_check.hpp"
#include "types.cuh"

namespace ringtrain::cuda {

template <class Body>
__global__ void grid_stride_kernel(Body body, int64_t n) {
  const kernels::GridStride g =
      kernels::grid_stride(blockIdx.x, threadIdx.x, blockDim.x, gridDim.x);
  for (int64_t i = g.first; i < n; i += g.stride) body(i);
}

// Launches body over [0, n) on `stream`; `name` names the kernel in a launch error.
template <class Body>
void launch_grid_stride(const char* name, const Body& body, int64_t n, cudaStream_t stream) {
  grid_stride_kernel<<<blocks_for(n), kThreads, 0, stream>>>(body, n);
  RT_CUDA_CHECK_LAUNCH(name);
}

}  // namespace ringtrain::cuda
