// Elementwise ops: the ReLU's gradient, the residual additions and scaling. The bodies are in
// ringtrain/backend/kernels/elementwise.hpp, where the unit tests run them on the host.
#include "backend_impl.hpp"
#include "launch.cuh"
#include "ringtrain/backend/kernels/elementwise.hpp"

namespace ringtrain::cuda {

void CudaBackend::relu_backward(const Tensor& y, const Tensor& dy, Tensor& dx) {
  check_same_shape("relu_backward", y, dy);
  check_same_shape("relu_backward", y, dx);
  dispatch_float("relu_backward", y, [&](auto tag) {
    using T = decltype(tag);
    const kernels::ReluBackward<T> body{static_cast<const T*>(y.raw()),
                                        static_cast<const T*>(dy.raw()), static_cast<T*>(dx.raw())};
    launch_grid_stride("relu_backward", body, y.numel(), compute_);
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
    const kernels::Add<T> body{static_cast<const T*>(a.raw()), static_cast<const T*>(b.raw()),
                               static_cast<T*>(y.raw()), relu};
    launch_grid_stride(op, body, a.numel(), compute_);
  });
}

void CudaBackend::scale(Tensor& t, double factor) {
  dispatch_float("scale", t, [&](auto tag) {
    using T = decltype(tag);
    const kernels::Scale<T> body{static_cast<T*>(t.raw()), static_cast<float>(factor)};
    launch_grid_stride("scale", body, t.numel(), compute_);
  });
}

}  // namespace ringtrain::cuda
