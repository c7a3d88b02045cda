// Pooling, the linear classifier and the loss: the small ops at both ends of the network.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels.hpp"

namespace ringtrain::cpu {

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

template <class T>
void linear_forward(int n, int k, int m, const T* x, const T* w, const T* b, T* y) {
  for (int i = 0; i < n; ++i) std::copy(b, b + m, y + int64_t{i} * m);
  gemm(false, true, n, m, k, T(1), x, k, w, k, T(1), y, m);
}

template <class T>
void linear_backward(int n, int k, int m, const T* x, const T* w, const T* dy, T* dx, T* dw,
                     T* db) {
  if (dx) gemm(false, false, n, k, m, T(1), dy, m, w, k, T(0), dx, k);
  gemm(true, false, m, k, n, T(1), dy, m, x, k, T(0), dw, k);
  std::fill(db, db + m, T(0));
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < m; ++j) db[j] += dy[int64_t{i} * m + j];
}

// loss_i = (1 - eps) * -log p_{y_i} + eps * mean_j(-log p_j), averaged over the batch.
template <class T>
double softmax_cross_entropy(int n, int classes, const T* logits, const int* labels,
                             double smoothing, T* dlogits) {
  double total = 0;
  for (int i = 0; i < n; ++i) {
    const T* z = logits + int64_t{i} * classes;
    const double zmax = *std::max_element(z, z + classes);
    double sum = 0;
    for (int j = 0; j < classes; ++j) sum += std::exp(z[j] - zmax);
    const double log_sum = std::log(sum) + zmax;
    double mean_nll = 0;
    for (int j = 0; j < classes; ++j) mean_nll += log_sum - z[j];
    mean_nll /= classes;
    total += (1 - smoothing) * (log_sum - z[labels[i]]) + smoothing * mean_nll;
    if (!dlogits) continue;
    T* d = dlogits + int64_t{i} * classes;
    for (int j = 0; j < classes; ++j) {
      const double target = smoothing / classes + (j == labels[i] ? 1 - smoothing : 0);
      d[j] = static_cast<T>((std::exp(z[j] - log_sum) - target) / n);
    }
  }
  return total / n;
}

#define RT_INSTANTIATE(T)                                                                    \
  template void max_pool_forward<T>(const PoolGeometry&, const T*, T*);                      \
  template void max_pool_backward<T>(const PoolGeometry&, const T*, const T*, const T*, T*); \
  template void linear_forward<T>(int, int, int, const T*, const T*, const T*, T*);          \
  template void linear_backward<T>(int, int, int, const T*, const T*, const T*, T*, T*, T*); \
  template double softmax_cross_entropy<T>(int, int, const T*, const int*, double, T*);
RT_INSTANTIATE(float)
RT_INSTANTIATE(double)
#undef RT_INSTANTIATE

}  // namespace ringtrain::cpu
