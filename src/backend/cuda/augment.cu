// The loader's augmentation on the device (--augment-on device): pad, crop, flip, normalise and
// cast a uint8 batch in one kernel, after a copy of half the bytes of a bf16 batch. The body is
// in ringtrain/backend/kernels/augment.hpp, where the unit tests run it on the host.
#include <initializer_list>

#include "backend_impl.hpp"
#include "ringtrain/backend/kernels/augment.hpp"
#include "ringtrain/backend/op_checks.hpp"

namespace ringtrain::cuda {
namespace {

// Every block first stages the normalisation table (c x 256 floats) in shared memory, then walks
// grid_stride_kernel's loop (launch.cuh) with the staged copy. The staging needs shared memory
// and a barrier, so it is device-only: the unit tests hand the body the global table instead.
template <class T>
__global__ void augment_kernel(kernels::Augment<T> body, const float* table, int64_t n) {
  extern __shared__ float values[];
  for (int i = threadIdx.x; i < body.c * 256; i += blockDim.x) values[i] = table[i];
  __syncthreads();
  const kernels::GridStride g =
      kernels::grid_stride(blockIdx.x, threadIdx.x, blockDim.x, gridDim.x);
  for (int64_t i = g.first; i < n; i += g.stride) body(i, values);
}

}  // namespace

void CudaBackend::augment(const Tensor& raw, const Tensor& crops, const Tensor& table, int pad,
                          Tensor& out) {
  check_augment("augment", raw, crops, table, pad, out);
  for (const Tensor* t : std::initializer_list<const Tensor*>{&raw, &crops, &table, &out})
    check_on_device("augment", *t);
  const std::size_t shared = static_cast<std::size_t>(table.numel()) * sizeof(float);
  RT_CHECK(shared <= 48 * 1024, "augment: the table of ", raw.dim(1),
           " channels does not fit 48 KB of shared memory");
  dispatch_float("augment", out, [&](auto tag) {
    using T = decltype(tag);
    const kernels::Augment<T> body{raw.data<uint8_t>(),
                                   crops.data<int32_t>(),
                                   static_cast<T*>(out.raw()),
                                   static_cast<int>(raw.dim(1)),
                                   static_cast<int>(raw.dim(2)),
                                   static_cast<int>(raw.dim(3)),
                                   pad,
                                   out.layout() == Layout::nhwc};
    augment_kernel<<<blocks_for(out.numel()), kThreads, shared, compute_>>>(
        body, table.data<float>(), out.numel());
    RT_CUDA_CHECK_LAUNCH("augment");
  });
}

}  // namespace ringtrain::cuda
