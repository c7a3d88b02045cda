// Batch norm (optionally fused with the ReLU after it), NCHW: one channel is n strided planes
// of hw values. Channels run in parallel; sums are accumulated in double so that a 32k-element
// channel loses no precision.
#include <algorithm>
#include <cmath>
#include <initializer_list>

#include "kernels.hpp"
#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/backend/op_checks.hpp"

namespace ringtrain::cpu {
namespace {

// Batch norm over [n, c, hw].
struct NormShape {
  int64_t n, c, hw;
};

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

// Batch norm in phases, so that SyncBatchNorm can all-reduce the sums between them.
// Forward sums: [sum x (C), sum x^2 (C), count]; backward sums: [sum g (C), sum g*xhat (C)].
template <class T>
void batch_norm_sums(ThreadPool& pool, NormShape s, const T* x, double* sums) {
  pool.parallel_for(s.c, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      double sum = 0, sq = 0;
      for_channel_planes<T>(s, c, [&](int64_t at) {
        for (int64_t i = 0; i < s.hw; ++i) {
          const double v = x[at + i];
          sum += v;
          sq += v * v;
        }
      });
      sums[c] = sum;
      sums[s.c + c] = sq;
    }
  });
  sums[2 * s.c] = static_cast<double>(s.n * s.hw);
}

template <class T>
void batch_norm_forward_from_sums(ThreadPool& pool, NormShape s, const T* x, const T* gamma,
                                  const T* beta, const double* sums, double momentum, double eps,
                                  bool relu, T* y, T* save_mean, T* save_invstd, T* running_mean,
                                  T* running_var) {
  const double count = sums[2 * s.c];
  pool.parallel_for(s.c, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const double mean = sums[c] / count;
      const double var = std::max(sums[s.c + c] / count - mean * mean, 0.0);
      save_mean[c] = static_cast<T>(mean);
      save_invstd[c] = static_cast<T>(1.0 / std::sqrt(var + eps));
      const double unbiased = count > 1 ? var * count / (count - 1) : var;
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

// g = dy masked by the ReLU, recomputed from x and the affine map.
template <class T>
struct MaskedGradient {
  const T *x, *dy;
  Affine<T> a;
  bool relu;
  T operator()(int64_t i) const { return (!relu || a(x[i]) > T(0)) ? dy[i] : T(0); }
};

template <class T>
void batch_norm_backward_sums(ThreadPool& pool, NormShape s, const T* x, const T* dy,
                              const T* gamma, const T* beta, const T* save_mean,
                              const T* save_invstd, bool relu, double* sums) {
  pool.parallel_for(s.c, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const T m = save_mean[c], is = save_invstd[c];
      const MaskedGradient<T> grad{x, dy, Affine<T>(gamma[c], beta[c], m, is), relu};
      double sum_dy = 0, sum_dy_xhat = 0;
      for_channel_planes<T>(s, c, [&](int64_t at) {
        for (int64_t i = at; i < at + s.hw; ++i) {
          const T g = grad(i);
          sum_dy += g;
          sum_dy_xhat += g * ((x[i] - m) * is);
        }
      });
      sums[c] = sum_dy;
      sums[s.c + c] = sum_dy_xhat;
    }
  });
}

// dgamma, dbeta from this rank's sums (added to them); dx = gamma * invstd * (g - mean(g) - xhat *
// mean(g xhat)) with the means over the whole (possibly all-reduced) batch of `count` values.
template <class T>
void batch_norm_backward_from_sums(ThreadPool& pool, NormShape s, const T* x, const T* dy,
                                   const T* gamma, const T* beta, const T* save_mean,
                                   const T* save_invstd, bool relu, const double* local,
                                   const double* global, double count, T* dx, T* dgamma, T* dbeta) {
  pool.parallel_for(s.c, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const T m = save_mean[c], is = save_invstd[c];
      const MaskedGradient<T> grad{x, dy, Affine<T>(gamma[c], beta[c], m, is), relu};
      dbeta[c] += static_cast<T>(local[c]);
      dgamma[c] += static_cast<T>(local[s.c + c]);
      const T k = gamma[c] * is;
      const T mean_dy = static_cast<T>(global[c] / count);
      const T mean_dy_xhat = static_cast<T>(global[s.c + c] / count);
      for_channel_planes<T>(s, c, [&](int64_t at) {
        for (int64_t i = at; i < at + s.hw; ++i)
          dx[i] = k * (grad(i) - mean_dy - (x[i] - m) * is * mean_dy_xhat);
      });
    }
  });
}

}  // namespace
}  // namespace ringtrain::cpu

namespace ringtrain {

using cpu::dispatch_float;

namespace {

cpu::NormShape norm_shape(const Tensor& x) {
  return {x.dim(0), x.dim(1), x.dim(2) * x.dim(3)};
}

}  // namespace

void CpuBackend::batch_norm_sums(const Tensor& x, Tensor& sums) {
  check_norm("batch_norm_sums", x, {}, {{"f64 sums", &sums, true}}, {});
  const auto s = norm_shape(x);
  dispatch_float("batch_norm_sums", x, [&](auto tag) {
    using T = decltype(tag);
    cpu::batch_norm_sums<T>(pool_, s, x.data<T>(), sums.data<double>());
  });
}

void CpuBackend::batch_norm_forward_from_sums(const Tensor& x, const Tensor& gamma,
                                              const Tensor& beta, const Tensor& sums,
                                              float momentum, float eps, bool relu, Tensor& y,
                                              Tensor& save_mean, Tensor& save_invstd,
                                              Tensor& running_mean, Tensor& running_var) {
  const char* op = "batch_norm_forward_from_sums";
  check_norm(op, x, {&y}, {{"f64 sums", &sums, true}},
             {&gamma, &beta, &save_mean, &save_invstd, &running_mean, &running_var});
  const auto s = norm_shape(x);
  dispatch_float(op, x, [&](auto tag) {
    using T = decltype(tag);
    cpu::batch_norm_forward_from_sums<T>(pool_, s, x.data<T>(), gamma.data<T>(), beta.data<T>(),
                                         sums.data<double>(), momentum, eps, relu, y.data<T>(),
                                         save_mean.data<T>(), save_invstd.data<T>(),
                                         running_mean.data<T>(), running_var.data<T>());
  });
}

void CpuBackend::batch_norm_forward_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                         const Tensor& running_mean, const Tensor& running_var,
                                         float eps, bool relu, Tensor& y) {
  check_norm("batch_norm_forward_eval", x, {&y}, {}, {&gamma, &beta, &running_mean, &running_var});
  const auto s = norm_shape(x);
  dispatch_float("batch_norm_forward_eval", x, [&](auto tag) {
    using T = decltype(tag);
    cpu::batch_norm_forward_eval<T>(pool_, s, x.data<T>(), gamma.data<T>(), beta.data<T>(),
                                    running_mean.data<T>(), running_var.data<T>(), eps, relu,
                                    y.data<T>());
  });
}

void CpuBackend::batch_norm_backward_sums(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                          const Tensor& beta, const Tensor& save_mean,
                                          const Tensor& save_invstd, bool relu, Tensor& sums) {
  const char* op = "batch_norm_backward_sums";
  check_norm(op, x, {&dy}, {{"f64 sums", &sums, false}}, {&gamma, &beta, &save_mean, &save_invstd});
  const auto s = norm_shape(x);
  dispatch_float(op, x, [&](auto tag) {
    using T = decltype(tag);
    cpu::batch_norm_backward_sums<T>(pool_, s, x.data<T>(), dy.data<T>(), gamma.data<T>(),
                                     beta.data<T>(), save_mean.data<T>(), save_invstd.data<T>(),
                                     relu, sums.data<double>());
  });
}

void CpuBackend::batch_norm_backward_from_sums(const Tensor& x, const Tensor& dy,
                                               const Tensor& gamma, const Tensor& beta,
                                               const Tensor& save_mean, const Tensor& save_invstd,
                                               bool relu, const Tensor& local_sums,
                                               const Tensor& global_sums, double count, Tensor& dx,
                                               Tensor& dgamma, Tensor& dbeta) {
  const char* op = "batch_norm_backward_from_sums";
  check_norm(op, x, {&dy, &dx},
             {{"f64 local sums", &local_sums, false}, {"f64 global sums", &global_sums, false}},
             {&gamma, &beta, &save_mean, &save_invstd, &dgamma, &dbeta});
  const auto s = norm_shape(x);
  dispatch_float(op, x, [&](auto tag) {
    using T = decltype(tag);
    cpu::batch_norm_backward_from_sums<T>(
        pool_, s, x.data<T>(), dy.data<T>(), gamma.data<T>(), beta.data<T>(), save_mean.data<T>(),
        save_invstd.data<T>(), relu, local_sums.data<double>(), global_sums.data<double>(), count,
        dx.data<T>(), dgamma.data<T>(), dbeta.data<T>());
  });
}

}  // namespace ringtrain
