// Pooling: max pooling through cuDNN (NHWC, deterministic backward) and global average pooling
// (our kernels, whose bodies are in ringtrain/backend/kernels/pool.hpp).
#include "backend_impl.hpp"
#include "launch.cuh"
#include "ringtrain/backend/kernels/pool.hpp"
#include "ringtrain/backend/op_checks.hpp"

namespace ringtrain::cuda {
namespace {

struct PoolDescriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnPoolingDescriptor_t pool = nullptr;

  PoolDescriptors(const PoolGeometry& g, DType dtype) {
    const cudnnDataType_t t = cudnn_dtype(dtype);
    RT_CUDA_CHECK(cudnnCreateTensorDescriptor(&x));
    RT_CUDA_CHECK(cudnnCreateTensorDescriptor(&y));
    RT_CUDA_CHECK(cudnnCreatePoolingDescriptor(&pool));
    RT_CUDA_CHECK(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NHWC, t, g.n, g.c, g.h, g.w));
    RT_CUDA_CHECK(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NHWC, t, g.n, g.c, g.p(), g.q()));
    RT_CUDA_CHECK(cudnnSetPooling2dDescriptor(pool, CUDNN_POOLING_MAX_DETERMINISTIC,
                                              CUDNN_NOT_PROPAGATE_NAN, g.window, g.window, g.pad,
                                              g.pad, g.stride, g.stride));
  }
  ~PoolDescriptors() {
    cudnnDestroyPoolingDescriptor(pool);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyTensorDescriptor(x);
  }
  PoolDescriptors(const PoolDescriptors&) = delete;
  PoolDescriptors& operator=(const PoolDescriptors&) = delete;
};

}  // namespace

void CudaBackend::max_pool_forward(const PoolGeometry& g, const Tensor& x, Tensor& y) {
  check_pool("max_pool_forward", g, x, y);
  const PoolDescriptors d(g, x.dtype());
  const float one = 1.f, zero = 0.f;
  RT_CUDA_CHECK(cudnnPoolingForward(cudnn_, d.pool, &one, d.x, x.raw(), &zero, d.y, y.raw()));
}

void CudaBackend::max_pool_backward(const PoolGeometry& g, const Tensor& x, const Tensor& y,
                                    const Tensor& dy, Tensor& dx) {
  check_pool("max_pool_backward", g, x, y);
  check_same_shape("max_pool_backward", y, dy);
  check_same_shape("max_pool_backward", x, dx);
  const PoolDescriptors d(g, x.dtype());
  const float one = 1.f, zero = 0.f;
  RT_CUDA_CHECK(cudnnPoolingBackward(cudnn_, d.pool, &one, d.y, y.raw(), d.y, dy.raw(), d.x,
                                     x.raw(), &zero, d.x, dx.raw()));
}

void CudaBackend::global_avg_pool_forward(const Tensor& x, Tensor& y) {
  RT_CHECK(x.rank() == 4, "global_avg_pool_forward: expected [N,C,H,W], got ", x.describe());
  check_shape("global_avg_pool_forward", "output", y, {x.dim(0), x.dim(1)});
  dispatch_float("global_avg_pool_forward", x, [&](auto tag) {
    using T = decltype(tag);
    const kernels::AvgPoolForward<T> body{static_cast<const T*>(x.raw()), static_cast<T*>(y.raw()),
                                          x.dim(2) * x.dim(3), x.dim(1)};
    launch_grid_stride("global_avg_pool_forward", body, y.numel(), compute_);
  });
}

void CudaBackend::global_avg_pool_backward(const Tensor& dy, Tensor& dx) {
  RT_CHECK(dx.rank() == 4, "global_avg_pool_backward: expected [N,C,H,W], got ", dx.describe());
  check_shape("global_avg_pool_backward", "output gradient", dy, {dx.dim(0), dx.dim(1)});
  dispatch_float("global_avg_pool_backward", dx, [&](auto tag) {
    using T = decltype(tag);
    const kernels::AvgPoolBackward<T> body{static_cast<const T*>(dy.raw()),
                                           static_cast<T*>(dx.raw()), dx.dim(2) * dx.dim(3),
                                           dx.dim(1)};
    launch_grid_stride("global_avg_pool_backward", body, dx.numel(), compute_);
  });
}

}  // namespace ringtrain::cuda
