// Batch norm, NCHW: one channel is n strided planes of hw values. Channels run in parallel;
// sums are accumulated in double so that a 32k-element channel loses no precision.
#include <cmath>

#include "cpu_kernels.hpp"

namespace ringtrain::cpu {
namespace {

template <class T, class F>
void for_channel_planes(NormShape s, int64_t c, const T* base, F&& f) {
  for (int64_t n = 0; n < s.n; ++n) f(base + (n * s.c + c) * s.hw, n);
}

}  // namespace

template <class T>
void batch_norm_forward_train(ThreadPool& pool, NormShape s, const T* x, const T* gamma,
                              const T* beta, double momentum, double eps, T* y, T* save_mean,
                              T* save_invstd, T* running_mean, T* running_var) {
  const double count = static_cast<double>(s.n * s.hw);
  pool.parallel_for(s.c, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      double sum = 0;
      for_channel_planes(s, c, x, [&](const T* p, int64_t) {
        for (int64_t i = 0; i < s.hw; ++i) sum += p[i];
      });
      const double mean = sum / count;
      double sq = 0;
      for_channel_planes(s, c, x, [&](const T* p, int64_t) {
        for (int64_t i = 0; i < s.hw; ++i) sq += (p[i] - mean) * (p[i] - mean);
      });
      const double var = sq / count;
      const double invstd = 1.0 / std::sqrt(var + eps);
      save_mean[c] = static_cast<T>(mean);
      save_invstd[c] = static_cast<T>(invstd);
      const double unbiased = count > 1 ? sq / (count - 1) : var;
      running_mean[c] = static_cast<T>((1 - momentum) * running_mean[c] + momentum * mean);
      running_var[c] = static_cast<T>((1 - momentum) * running_var[c] + momentum * unbiased);
      const T scale = static_cast<T>(gamma[c] * invstd);
      const T shift = static_cast<T>(beta[c] - mean * gamma[c] * invstd);
      for_channel_planes(s, c, x, [&](const T* p, int64_t n) {
        T* out = y + (n * s.c + c) * s.hw;
        for (int64_t i = 0; i < s.hw; ++i) out[i] = p[i] * scale + shift;
      });
    }
  });
}

template <class T>
void batch_norm_forward_eval(ThreadPool& pool, NormShape s, const T* x, const T* gamma,
                             const T* beta, const T* running_mean, const T* running_var, double eps,
                             T* y) {
  pool.parallel_for(s.c, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const double invstd = 1.0 / std::sqrt(static_cast<double>(running_var[c]) + eps);
      const T scale = static_cast<T>(gamma[c] * invstd);
      const T shift = static_cast<T>(beta[c] - running_mean[c] * gamma[c] * invstd);
      for_channel_planes(s, c, x, [&](const T* p, int64_t n) {
        T* out = y + (n * s.c + c) * s.hw;
        for (int64_t i = 0; i < s.hw; ++i) out[i] = p[i] * scale + shift;
      });
    }
  });
}

// dx = gamma * invstd * (dy - mean(dy) - xhat * mean(dy * xhat))
template <class T>
void batch_norm_backward(ThreadPool& pool, NormShape s, const T* x, const T* dy, const T* gamma,
                         const T* save_mean, const T* save_invstd, T* dx, T* dgamma, T* dbeta) {
  const double count = static_cast<double>(s.n * s.hw);
  pool.parallel_for(s.c, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const double mean = save_mean[c], invstd = save_invstd[c];
      double sum_dy = 0, sum_dy_xhat = 0;
      for_channel_planes(s, c, x, [&](const T* p, int64_t n) {
        const T* g = dy + (n * s.c + c) * s.hw;
        for (int64_t i = 0; i < s.hw; ++i) {
          sum_dy += g[i];
          sum_dy_xhat += g[i] * ((p[i] - mean) * invstd);
        }
      });
      dgamma[c] = static_cast<T>(sum_dy_xhat);
      dbeta[c] = static_cast<T>(sum_dy);
      const T k = static_cast<T>(gamma[c] * invstd);
      const T mean_dy = static_cast<T>(sum_dy / count);
      const T mean_dy_xhat = static_cast<T>(sum_dy_xhat / count);
      const T m = static_cast<T>(mean), is = static_cast<T>(invstd);
      for_channel_planes(s, c, x, [&](const T* p, int64_t n) {
        const int64_t at = (n * s.c + c) * s.hw;
        for (int64_t i = 0; i < s.hw; ++i) {
          const T xhat = (p[i] - m) * is;
          dx[at + i] = k * (dy[at + i] - mean_dy - xhat * mean_dy_xhat);
        }
      });
    }
  });
}

#define RT_INSTANTIATE(T)                                                                         \
  template void batch_norm_forward_train<T>(ThreadPool&, NormShape, const T*, const T*, const T*, \
                                            double, double, T*, T*, T*, T*, T*);                  \
  template void batch_norm_forward_eval<T>(ThreadPool&, NormShape, const T*, const T*, const T*,  \
                                           const T*, const T*, double, T*);                       \
  template void batch_norm_backward<T>(ThreadPool&, NormShape, const T*, const T*, const T*,      \
                                       const T*, const T*, T*, T*, T*);
RT_INSTANTIATE(float)
RT_INSTANTIATE(double)
#undef RT_INSTANTIATE

}  // namespace ringtrain::cpu
