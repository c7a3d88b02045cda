// The linear classifier through the GEMM: y[n,m] = x[n,k] w[m,k]^T + b[m] and its gradients.
#include <algorithm>

#include "kernels.hpp"
#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/backend/op_checks.hpp"

namespace ringtrain::cpu {
namespace {

template <class T>
void linear_forward(int n, int k, int m, const T* x, const T* w, const T* b, T* y) {
  for (int i = 0; i < n; ++i) std::copy(b, b + m, y + int64_t{i} * m);
  gemm(false, true, n, m, k, T(1), x, k, w, k, T(1), y, m);
}

template <class T>
void linear_backward(int n, int k, int m, const T* x, const T* w, const T* dy, T* dx, T* dw,
                     T* db) {
  if (dx) gemm(false, false, n, k, m, T(1), dy, m, w, k, T(0), dx, k);
  gemm(true, false, m, k, n, T(1), dy, m, x, k, T(1), dw, k);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < m; ++j) db[j] += dy[int64_t{i} * m + j];
}

}  // namespace
}  // namespace ringtrain::cpu

namespace ringtrain {

using cpu::dispatch_float;

void CpuBackend::linear_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) {
  const LinearDims d = check_linear("linear_forward", x, w);
  check_shape("linear_forward", "bias", b, {d.m});
  check_shape("linear_forward", "output", y, {d.n, d.m});
  dispatch_float("linear_forward", x, [&](auto tag) {
    using T = decltype(tag);
    cpu::linear_forward<T>(d.n, d.k, d.m, x.data<T>(), w.data<T>(), b.data<T>(), y.data<T>());
  });
}

void CpuBackend::linear_backward(const Tensor& x, const Tensor& w, const Tensor& dy, Tensor* dx,
                                 Tensor& dw, Tensor& db) {
  const LinearDims d = check_linear("linear_backward", x, w);
  check_shape("linear_backward", "output gradient", dy, {d.n, d.m});
  check_shape("linear_backward", "weight gradient", dw, {d.m, d.k});
  check_shape("linear_backward", "bias gradient", db, {d.m});
  if (dx) check_same_shape("linear_backward", x, *dx);
  dispatch_float("linear_backward", x, [&](auto tag) {
    using T = decltype(tag);
    cpu::linear_backward<T>(d.n, d.k, d.m, x.data<T>(), w.data<T>(), dy.data<T>(),
                            dx ? dx->data<T>() : nullptr, dw.data<T>(), db.data<T>());
  });
}

}  // namespace ringtrain
