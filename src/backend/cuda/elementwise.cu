// Elementwise ops: the ReLU's gradient, the residual additions and scaling.
#include "backend_impl.hpp"

namespace ringtrain::cuda {
namespace {

template <class T>
__global__ void relu_backward_kernel(const T* y, const T* dy, T* dx, int64_t n) {
  RT_GRID_STRIDE(i, n) dx[i] = to_float(y[i]) > 0.f ? dy[i] : from_float<T>(0.f);
}

template <class T, bool kRelu>
__global__ void add_kernel(const T* a, const T* b, T* y, int64_t n) {
  RT_GRID_STRIDE(i, n) {
    const float v = to_float(a[i]) + to_float(b[i]);
    y[i] = from_float<T>(kRelu ? fmaxf(v, 0.f) : v);
  }
}

template <class T>
__global__ void scale_kernel(T* p, int64_t n, float factor) {
  RT_GRID_STRIDE(i, n) p[i] = from_float<T>(to_float(p[i]) * factor);
}

}  // namespace

void CudaBackend::relu_backward(const Tensor& y, const Tensor& dy, Tensor& dx) {
  check_same_shape("relu_backward", y, dy);
  check_same_shape("relu_backward", y, dx);
  dispatch_float("relu_backward", y, [&](auto tag) {
    using T = decltype(tag);
    relu_backward_kernel<<<blocks_for(y.numel()), kThreads, 0, compute_>>>(
        static_cast<const T*>(y.raw()), static_cast<const T*>(dy.raw()), static_cast<T*>(dx.raw()),
        y.numel());
    RT_CUDA_CHECK_LAUNCH("relu_backward_kernel");
  });
}

void CudaBackend::add(const Tensor& a, const Tensor& b, Tensor& y) {
  launch_add(a, b, y, false);
}

void CudaBackend::add_relu(const Tensor& a, const Tensor& b, Tensor& y) {
  launch_add(a, b, y, true);
}

void CudaBackend::launch_add(const Tensor& a, const Tensor& b, Tensor& y, bool relu) {
  const char* op = relu ? "add_relu" : "add";
  check_same_shape(op, a, b);
  check_same_shape(op, a, y);
  dispatch_float(op, a, [&](auto tag) {
    using T = decltype(tag);
    const auto kernel = relu ? add_kernel<T, true> : add_kernel<T, false>;
    kernel<<<blocks_for(a.numel()), kThreads, 0, compute_>>>(static_cast<const T*>(a.raw()),
                                                             static_cast<const T*>(b.raw()),
                                                             static_cast<T*>(y.raw()), a.numel());
    RT_CUDA_CHECK_LAUNCH(op);
  });
}

void CudaBackend::scale(Tensor& t, double factor) {
  dispatch_float("scale", t, [&](auto tag) {
    using T = decltype(tag);
    scale_kernel<<<blocks_for(t.numel()), kThreads, 0, compute_>>>(
        static_cast<T*>(t.raw()), t.numel(), static_cast<float>(factor));
    RT_CUDA_CHECK_LAUNCH("scale_kernel");
  });
}

}  // namespace ringtrain::cuda
