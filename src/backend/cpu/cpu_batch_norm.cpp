// Batch norm (optionally fused with the ReLU after it), NCHW: one channel is n strided planes
// of hw values. Channels run in parallel; sums are accumulated in double so that a 32k-element
// channel loses no precision.
#include <cmath>

#include "cpu_kernels.hpp"

namespace ringtrain::cpu {
namespace {

template <class T, class F>
void for_channel_planes(NormShape s, int64_t c, F&& f) {
  for (int64_t n = 0; n < s.n; ++n) f((n * s.c + c) * s.hw);
}

// y = x * scale + shift. Forward and backward derive it the same way from the same stored
// values, so the backward ReLU mask is exactly the forward one.
template <class T>
struct Affine {
  T scale, shift;
  Affine(T gamma, T beta, T mean, T invstd)
      : scale(gamma * invstd), shift(beta - mean * (gamma * invstd)) {}
  T operator()(T x) const { return x * scale + shift; }
};

template <class T>
void apply_affine(NormShape s, int64_t c, const T* x, Affine<T> a, bool relu, T* y) {
  for_channel_planes<T>(s, c, [&](int64_t at) {
    if (relu) {
      for (int64_t i = 0; i < s.hw; ++i) y[at + i] = std::max(a(x[at + i]), T(0));
    } else {
      for (int64_t i = 0; i < s.hw; ++i) y[at + i] = a(x[at + i]);
    }
  });
}

}  // namespace

template <class T>
void batch_norm_forward_train(ThreadPool& pool, NormShape s, const T* x, const T* gamma,
                              const T* beta, double momentum, double eps, bool relu, T* y,
                              T* save_mean, T* save_invstd, T* running_mean, T* running_var) {
  const double count = static_cast<double>(s.n * s.hw);
  pool.parallel_for(s.c, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      double sum = 0;
      for_channel_planes<T>(s, c, [&](int64_t at) {
        for (int64_t i = 0; i < s.hw; ++i) sum += x[at + i];
      });
      const double mean = sum / count;
      double sq = 0;
      for_channel_planes<T>(s, c, [&](int64_t at) {
        for (int64_t i = 0; i < s.hw; ++i) sq += (x[at + i] - mean) * (x[at + i] - mean);
      });
      const double var = sq / count;
      save_mean[c] = static_cast<T>(mean);
      save_invstd[c] = static_cast<T>(1.0 / std::sqrt(var + eps));
      const double unbiased = count > 1 ? sq / (count - 1) : var;
      running_mean[c] = static_cast<T>((1 - momentum) * running_mean[c] + momentum * mean);
      running_var[c] = static_cast<T>((1 - momentum) * running_var[c] + momentum * unbiased);
      apply_affine(s, c, x, Affine<T>(gamma[c], beta[c], save_mean[c], save_invstd[c]), relu, y);
    }
  });
}

template <class T>
void batch_norm_forward_eval(ThreadPool& pool, NormShape s, const T* x, const T* gamma,
                             const T* beta, const T* running_mean, const T* running_var, double eps,
                             bool relu, T* y) {
  pool.parallel_for(s.c, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const T invstd = static_cast<T>(1.0 / std::sqrt(static_cast<double>(running_var[c]) + eps));
      apply_affine(s, c, x, Affine<T>(gamma[c], beta[c], running_mean[c], invstd), relu, y);
    }
  });
}

// With g = dy masked by the ReLU: dx = gamma * invstd * (g - mean(g) - xhat * mean(g * xhat)).
template <class T>
void batch_norm_backward(ThreadPool& pool, NormShape s, const T* x, const T* dy, const T* gamma,
                         const T* beta, const T* save_mean, const T* save_invstd, bool relu, T* dx,
                         T* dgamma, T* dbeta) {
  const double count = static_cast<double>(s.n * s.hw);
  pool.parallel_for(s.c, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const T m = save_mean[c], is = save_invstd[c];
      const Affine<T> a(gamma[c], beta[c], m, is);
      auto grad = [&](int64_t i) { return (!relu || a(x[i]) > T(0)) ? dy[i] : T(0); };
      double sum_dy = 0, sum_dy_xhat = 0;
      for_channel_planes<T>(s, c, [&](int64_t at) {
        for (int64_t i = at; i < at + s.hw; ++i) {
          const T g = grad(i);
          sum_dy += g;
          sum_dy_xhat += g * ((x[i] - m) * is);
        }
      });
      dgamma[c] = static_cast<T>(sum_dy_xhat);
      dbeta[c] = static_cast<T>(sum_dy);
      const T k = gamma[c] * is;
      const T mean_dy = static_cast<T>(sum_dy / count);
      const T mean_dy_xhat = static_cast<T>(sum_dy_xhat / count);
      for_channel_planes<T>(s, c, [&](int64_t at) {
        for (int64_t i = at; i < at + s.hw; ++i)
          dx[i] = k * (grad(i) - mean_dy - (x[i] - m) * is * mean_dy_xhat);
      });
    }
  });
}

#define RT_INSTANTIATE(T)                                                                         \
  template void batch_norm_forward_train<T>(ThreadPool&, NormShape, const T*, const T*, const T*, \
                                            double, double, bool, T*, T*, T*, T*, T*);            \
  template void batch_norm_forward_eval<T>(ThreadPool&, NormShape, const T*, const T*, const T*,  \
                                           const T*, const T*, double, bool, T*);                 \
  template void batch_norm_backward<T>(ThreadPool&, NormShape, const T*, const T*, const T*,      \
                                       const T*, const T*, const T*, bool, T*, T*, T*);
RT_INSTANTIATE(float)
RT_INSTANTIATE(double)
#undef RT_INSTANTIATE

}  // namespace ringtrain::cpu
