// Elementwise ops: the ReLU's gradient, the residual additions and scaling.
#include <algorithm>

#include "kernels.hpp"
#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/backend/op_checks.hpp"

namespace ringtrain {

using cpu::dispatch_float;
using cpu::elementwise;

void CpuBackend::relu_backward(const Tensor& y, const Tensor& dy, Tensor& dx) {
  check_same_shape("relu_backward", y, dy);
  check_same_shape("relu_backward", y, dx);
  dispatch_float("relu_backward", y, [&](auto tag) {
    using T = decltype(tag);
    const T *out = y.data<T>(), *g = dy.data<T>();
    T* d = dx.data<T>();
    // g[i] is read whatever the mask says, so that the loop vectorises.
    elementwise<T>(pool_, y.numel(), [&](int64_t i) {
      const T grad = g[i];
      d[i] = out[i] > T(0) ? grad : T(0);
    });
  });
}

void CpuBackend::add(const Tensor& a, const Tensor& b, Tensor& y) {
  check_same_shape("add", a, b);
  check_same_shape("add", a, y);
  dispatch_float("add", a, [&](auto tag) {
    using T = decltype(tag);
    const T *pa = a.data<T>(), *pb = b.data<T>();
    T* out = y.data<T>();
    elementwise<T>(pool_, a.numel(), [&](int64_t i) { out[i] = pa[i] + pb[i]; });
  });
}

void CpuBackend::scale(Tensor& t, double factor) {
  dispatch_float("scale", t, [&](auto tag) {
    using T = decltype(tag);
    T* p = t.data<T>();
    const T f = static_cast<T>(factor);
    elementwise<T>(pool_, t.numel(), [&](int64_t i) { p[i] *= f; });
  });
}

void CpuBackend::add_relu(const Tensor& a, const Tensor& b, Tensor& y) {
  check_same_shape("add_relu", a, b);
  check_same_shape("add_relu", a, y);
  dispatch_float("add_relu", a, [&](auto tag) {
    using T = decltype(tag);
    const T *pa = a.data<T>(), *pb = b.data<T>();
    T* out = y.data<T>();
    elementwise<T>(pool_, a.numel(), [&](int64_t i) { out[i] = std::max(pa[i] + pb[i], T(0)); });
  });
}

}  // namespace ringtrain
