#pragma once
// The kernels most ops launch: a grid-stride loop that calls a body for every index below n, and
// the same loop followed by steps its last block runs (a reduction's finish).
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

using kernels::FinishStep;

template <class Body>
__device__ void run_finish_step(const FinishStep<Body>& step) {
  __syncthreads();
  for (int64_t i = threadIdx.x; i < step.n; i += blockDim.x) step.body(i);
}

// Note: a reduction and what follows it in one launch, where two or three launches would each
// pay their start-up and their tail. Every block runs `first` over its grid-stride indices; the
// last block to get there runs the steps in turn, with a barrier before each. The steps read
// what every block wrote: each thread makes its writes visible (__threadfence) before its block
// counts itself on `arrivals`, as in CUDA's threadFenceReduction sample. `arrivals` is 0 before
// the launch, and the last block sets it back to 0, so the next launch on the stream (or a
// graph's replay) finds it so; launches sharing it must be ordered, as on one stream.
template <class First, class... Steps>
__global__ void then_finish_kernel(First first, int64_t n, unsigned* arrivals,
                                   FinishStep<Steps>... steps) {
  const kernels::GridStride g =
      kernels::grid_stride(blockIdx.x, threadIdx.x, blockDim.x, gridDim.x);
  for (int64_t i = g.first; i < n; i += g.stride) first(i);
  __threadfence();
  __syncthreads();
  __shared__ bool last;
  if (threadIdx.x == 0) last = atomicAdd(arrivals, 1u) == gridDim.x - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  (run_finish_step(steps), ...);
  if (threadIdx.x == 0) *arrivals = 0;
}

// Launches first over [0, n), then the steps by the last block (then_finish_kernel).
template <class First, class... Steps>
void launch_then_finish(const char* name, const First& first, int64_t n, unsigned* arrivals,
                        cudaStream_t stream, const FinishStep<Steps>&... steps) {
  then_finish_kernel<<<blocks_for(n), kThreads, 0, stream>>>(first, n, arrivals, steps...);
  RT_CUDA_CHECK_LAUNCH(name);
}

}  // namespace ringtrain::cuda
