// Pooling: max pooling (the stem's) and global average pooling (before the classifier).
#include <algorithm>
#include <limits>

#include "kernels.hpp"
#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/backend/op_checks.hpp"

namespace ringtrain::cpu {
namespace {

template <class T>
void max_pool_forward(const PoolGeometry& g, const T* x, T* y) {
  const int P = g.p(), Q = g.q();
  for (int64_t plane = 0; plane < int64_t{g.n} * g.c; ++plane) {
    const T* in = x + plane * g.h * g.w;
    T* out = y + plane * P * Q;
    for (int oh = 0; oh < P; ++oh)
      for (int ow = 0; ow < Q; ++ow) {
        T best = -std::numeric_limits<T>::infinity();
        for (int i = 0; i < g.window; ++i)
          for (int j = 0; j < g.window; ++j) {
            const int ih = oh * g.stride - g.pad + i, iw = ow * g.stride - g.pad + j;
            if (ih >= 0 && ih < g.h && iw >= 0 && iw < g.w)
              best = std::max(best, in[ih * g.w + iw]);
          }
        out[oh * Q + ow] = best;
      }
  }
}

// The gradient goes to the first input equal to the maximum, as PyTorch's argmax does.
template <class T>
void max_pool_backward(const PoolGeometry& g, const T* x, const T* y, const T* dy, T* dx) {
  const int P = g.p(), Q = g.q();
  std::fill(dx, dx + int64_t{g.n} * g.c * g.h * g.w, T(0));
  for (int64_t plane = 0; plane < int64_t{g.n} * g.c; ++plane) {
    const T* in = x + plane * g.h * g.w;
    T* din = dx + plane * g.h * g.w;
    for (int oh = 0; oh < P; ++oh)
      for (int ow = 0; ow < Q; ++ow) {
        const T best = y[plane * P * Q + oh * Q + ow];
        bool done = false;
        for (int i = 0; i < g.window && !done; ++i)
          for (int j = 0; j < g.window && !done; ++j) {
            const int ih = oh * g.stride - g.pad + i, iw = ow * g.stride - g.pad + j;
            if (ih >= 0 && ih < g.h && iw >= 0 && iw < g.w && in[ih * g.w + iw] == best) {
              din[ih * g.w + iw] += dy[plane * P * Q + oh * Q + ow];
              done = true;
            }
          }
      }
  }
}

}  // namespace
}  // namespace ringtrain::cpu

namespace ringtrain {

using cpu::dispatch_float;
using cpu::elementwise;

namespace {

void check_4d(const char* op, const Tensor& t) {
  RT_CHECK(t.rank() == 4, op, ": expected a 4-D [N,C,H,W] tensor, got ", t.describe());
}

}  // namespace

void CpuBackend::max_pool_forward(const PoolGeometry& g, const Tensor& x, Tensor& y) {
  check_pool("max_pool_forward", g, x, y);
  dispatch_float("max_pool_forward", x, [&](auto tag) {
    using T = decltype(tag);
    cpu::max_pool_forward<T>(g, x.data<T>(), y.data<T>());
  });
}

void CpuBackend::max_pool_backward(const PoolGeometry& g, const Tensor& x, const Tensor& y,
                                   const Tensor& dy, Tensor& dx) {
  check_pool("max_pool_backward", g, x, y);
  check_same_shape("max_pool_backward", y, dy);
  check_same_shape("max_pool_backward", x, dx);
  dispatch_float("max_pool_backward", x, [&](auto tag) {
    using T = decltype(tag);
    cpu::max_pool_backward<T>(g, x.data<T>(), y.data<T>(), dy.data<T>(), dx.data<T>());
  });
}

void CpuBackend::global_avg_pool_forward(const Tensor& x, Tensor& y) {
  check_4d("global_avg_pool_forward", x);
  check_shape("global_avg_pool_forward", "output", y, {x.dim(0), x.dim(1)});
  dispatch_float("global_avg_pool_forward", x, [&](auto tag) {
    using T = decltype(tag);
    const int64_t hw = x.dim(2) * x.dim(3);
    const T* in = x.data<T>();
    T* out = y.data<T>();
    elementwise<T>(pool_, y.numel(), [&](int64_t i) {
      T sum = 0;
      for (int64_t j = 0; j < hw; ++j) sum += in[i * hw + j];
      out[i] = sum / static_cast<T>(hw);
    });
  });
}

void CpuBackend::global_avg_pool_backward(const Tensor& dy, Tensor& dx) {
  check_4d("global_avg_pool_backward", dx);
  check_shape("global_avg_pool_backward", "output gradient", dy, {dx.dim(0), dx.dim(1)});
  dispatch_float("global_avg_pool_backward", dx, [&](auto tag) {
    using T = decltype(tag);
    const int64_t hw = dx.dim(2) * dx.dim(3);
    const T* g = dy.data<T>();
    T* d = dx.data<T>();
    elementwise<T>(pool_, dy.numel(), [&](int64_t i) {
      std::fill(d + i * hw, d + (i + 1) * hw, g[i] / static_cast<T>(hw));
    });
  });
}

}  // namespace ringtrain
