// Batch norm (optionally fused with the ReLU after it), NCHW: one channel is n strided planes
// of hw values. Channels run in parallel; a channel's sums end in double so that a 32k-element
// channel loses no precision.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <type_traits>

#include "kernels.hpp"
#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/backend/op_checks.hpp"

namespace ringtrain::cpu {
namespace {

// Batch norm over [n, c, hw].
struct NormShape {
  int64_t n, c, hw;
};

template <class F>
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
  for_channel_planes(s, c, [&](int64_t at) {
    if (relu) {
      for (int64_t i = 0; i < s.hw; ++i) y[at + i] = std::max(a(x[at + i]), T(0));
    } else {
      for (int64_t i = 0; i < s.hw; ++i) y[at + i] = a(x[at + i]);
    }
  });
}

// Note: a channel's sums are the hot loop of batch norm's two sum passes. One running double
// sum is a chain of dependent scalar adds, which the compiler may not reorder; kLanes
// independent double sums vectorise, and are added together at the end. The terms are the same
// values as in one running sum, added in another order fixed by the shape alone: as precise,
// and bit-identical run to run. The terms of a block go through a small array first, so that
// the loop computing them (with the ReLU's mask) vectorises on its own.
constexpr int kLanes = 16;

// Over every plane of channel c: terms(i, u, v) writes value i's two terms, of type Term, which
// are added into sum_a and sum_b.
template <class Term, class F>
void channel_sums(NormShape s, int64_t c, F&& terms, double& sum_a, double& sum_b) {
  double a[kLanes] = {}, b[kLanes] = {};
  for_channel_planes(s, c, [&](int64_t at) {
    for (int64_t i = at; i < at + s.hw; i += kLanes) {
      const int lanes = static_cast<int>(std::min<int64_t>(kLanes, at + s.hw - i));
      Term u[kLanes], v[kLanes];
      for (int j = 0; j < lanes; ++j) terms(i + j, u[j], v[j]);
      for (int j = 0; j < lanes; ++j) {
        a[j] += u[j];
        b[j] += v[j];
      }
    }
  });
  sum_a = sum_b = 0;
  for (int j = 0; j < kLanes; ++j) {
    sum_a += a[j];
    sum_b += b[j];
  }
}

// Batch norm in phases, so that SyncBatchNorm can all-reduce the sums between them.
// Forward sums: [sum x (C), sum x^2 (C), count]; backward sums: [sum g (C), sum g*xhat (C)].
template <class T>
void batch_norm_sums(ThreadPool& pool, NormShape s, const T* x, double* sums) {
  pool.parallel_for(s.c, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      channel_sums<double>(
          s, c,
          [&](int64_t i, double& v, double& square) {
            v = x[i];
            square = v * v;
          },
          sums[c], sums[s.c + c]);
    }
  });
  sums[2 * s.c] = static_cast<double>(s.n * s.hw);
}

// The per-channel values of a training pass: gamma and beta in, the batch statistics kept and
// the running ones updated.
template <class T>
struct TrainChannels {
  const T *gamma, *beta;
  T *save_mean, *save_invstd, *running_mean, *running_var;
};

template <class T>
TrainChannels<T> train_channels(const Tensor& gamma, const Tensor& beta, Tensor& save_mean,
                                Tensor& save_invstd, Tensor& running_mean, Tensor& running_var) {
  return {gamma.data<T>(),       beta.data<T>(),         save_mean.data<T>(),
          save_invstd.data<T>(), running_mean.data<T>(), running_var.data<T>()};
}

// Channel c's batch statistics from the forward sums [sum x, sum x^2, count]: keeps mean and
// 1/std, updates the running statistics as PyTorch does (unbiased running variance), and
// returns the affine map they give.
template <class T>
Affine<T> train_statistics(NormShape s, int64_t c, const double* sums, double momentum, double eps,
                           const TrainChannels<T>& v) {
  const double count = sums[2 * s.c];
  const double mean = sums[c] / count;
  const double var = std::max(sums[s.c + c] / count - mean * mean, 0.0);
  v.save_mean[c] = static_cast<T>(mean);
  v.save_invstd[c] = static_cast<T>(1.0 / std::sqrt(var + eps));
  const double unbiased = count > 1 ? var * count / (count - 1) : var;
  v.running_mean[c] = static_cast<T>((1 - momentum) * v.running_mean[c] + momentum * mean);
  v.running_var[c] = static_cast<T>((1 - momentum) * v.running_var[c] + momentum * unbiased);
  return Affine<T>(v.gamma[c], v.beta[c], v.save_mean[c], v.save_invstd[c]);
}

// Channel c's affine map in evaluation, from the running statistics.
template <class T>
Affine<T> eval_statistics(int64_t c, const T* gamma, const T* beta, const T* running_mean,
                          const T* running_var, double eps) {
  const T invstd = static_cast<T>(1.0 / std::sqrt(static_cast<double>(running_var[c]) + eps));
  return Affine<T>(gamma[c], beta[c], running_mean[c], invstd);
}

template <class T>
void batch_norm_forward_from_sums(ThreadPool& pool, NormShape s, const T* x, const double* sums,
                                  double momentum, double eps, bool relu, const TrainChannels<T>& v,
                                  T* y) {
  pool.parallel_for(s.c, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c)
      apply_affine(s, c, x, train_statistics(s, c, sums, momentum, eps, v), relu, y);
  });
}

template <class T>
void batch_norm_forward_eval(ThreadPool& pool, NormShape s, const T* x, const T* gamma,
                             const T* beta, const T* running_mean, const T* running_var, double eps,
                             bool relu, T* y) {
  pool.parallel_for(s.c, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c)
      apply_affine(s, c, x, eval_statistics(c, gamma, beta, running_mean, running_var, eps), relu,
                   y);
  });
}

template <class T>
void store_affine(NormShape s, int64_t c, Affine<T> a, T* affine) {
  affine[c] = a.scale;
  affine[s.c + c] = a.shift;
}

// y = relu(x * scale + shift + r * r_scale + r_shift), with r_affine's map or, without it,
// r_scale 1 and r_shift 0 (exact: r itself).
template <class T>
void batch_norm_add_relu(ThreadPool& pool, NormShape s, const T* x, const T* affine, const T* r,
                         const T* r_affine, T* y) {
  pool.parallel_for(s.c, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const T scale = affine[c], shift = affine[s.c + c];
      const T r_scale = r_affine ? r_affine[c] : T(1),
              r_shift = r_affine ? r_affine[s.c + c] : T(0);
      for_channel_planes(s, c, [&](int64_t at) {
        for (int64_t i = at; i < at + s.hw; ++i)
          y[i] = std::max(x[i] * scale + shift + (r[i] * r_scale + r_shift), T(0));
      });
    }
  });
}

// g = dy masked by the ReLU, recomputed from x and the affine map. Compiled once with the mask
// and once without (with_relu), and dy[i] read whatever the mask says: a branch or a load under
// the condition inside the loops keeps the compiler from vectorising them.
template <class T, bool Relu>
struct MaskedGradient {
  const T *x, *dy;
  Affine<T> a;
  T operator()(int64_t i) const {
    const T g = dy[i];
    if constexpr (Relu) return a(x[i]) > T(0) ? g : T(0);
    return g;
  }
};

// Calls f(std::true_type{}) or f(std::false_type{}) as relu says.
template <class F>
void with_relu(bool relu, F&& f) {
  if (relu) {
    f(std::true_type{});
  } else {
    f(std::false_type{});
  }
}

template <class T>
void batch_norm_backward_sums(ThreadPool& pool, NormShape s, const T* x, const T* dy,
                              const T* gamma, const T* beta, const T* save_mean,
                              const T* save_invstd, bool relu, double* sums) {
  with_relu(relu, [&](auto mask) {
    pool.parallel_for(s.c, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        const T m = save_mean[c], is = save_invstd[c];
        const MaskedGradient<T, mask()> grad{x, dy, Affine<T>(gamma[c], beta[c], m, is)};
        channel_sums<T>(
            s, c,
            [&](int64_t i, T& g, T& g_xhat) {
              g = grad(i);
              g_xhat = g * ((x[i] - m) * is);
            },
            sums[c], sums[s.c + c]);
      }
    });
  });
}

// dgamma, dbeta from this rank's sums (added to them); dx = gamma * invstd * (g - mean(g) - xhat *
// mean(g xhat)) with the means over the whole (possibly all-reduced) batch of `count` values.
template <class T>
void batch_norm_backward_from_sums(ThreadPool& pool, NormShape s, const T* x, const T* dy,
                                   const T* gamma, const T* beta, const T* save_mean,
                                   const T* save_invstd, bool relu, const double* local,
                                   const double* global, double count, T* dx, T* dgamma, T* dbeta) {
  with_relu(relu, [&](auto mask) {
    pool.parallel_for(s.c, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        const T m = save_mean[c], is = save_invstd[c];
        const MaskedGradient<T, mask()> grad{x, dy, Affine<T>(gamma[c], beta[c], m, is)};
        dbeta[c] += static_cast<T>(local[c]);
        dgamma[c] += static_cast<T>(local[s.c + c]);
        const T k = gamma[c] * is;
        const T mean_dy = static_cast<T>(global[c] / count);
        const T mean_dy_xhat = static_cast<T>(global[s.c + c] / count);
        for_channel_planes(s, c, [&](int64_t at) {
          for (int64_t i = at; i < at + s.hw; ++i)
            dx[i] = k * (grad(i) - mean_dy - (x[i] - m) * is * mean_dy_xhat);
        });
      }
    });
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
    const auto v =
        cpu::train_channels<T>(gamma, beta, save_mean, save_invstd, running_mean, running_var);
    cpu::batch_norm_forward_from_sums<T>(pool_, s, x.data<T>(), sums.data<double>(), momentum, eps,
                                         relu, v, y.data<T>());
  });
}

void CpuBackend::batch_norm_train_affine(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                         float momentum, float eps, Tensor& sums, Tensor& save_mean,
                                         Tensor& save_invstd, Tensor& running_mean,
                                         Tensor& running_var, Tensor& affine) {
  const char* op = "batch_norm_train_affine";
  check_norm(op, x, {}, {{"f64 sums", &sums, true}},
             {&gamma, &beta, &save_mean, &save_invstd, &running_mean, &running_var});
  check_shape(op, "affine", affine, {2 * x.dim(1)});
  batch_norm_sums(x, sums);
  const auto s = norm_shape(x);
  dispatch_float(op, x, [&](auto tag) {
    using T = decltype(tag);
    const auto v =
        cpu::train_channels<T>(gamma, beta, save_mean, save_invstd, running_mean, running_var);
    for (int64_t c = 0; c < s.c; ++c)
      cpu::store_affine(s, c, cpu::train_statistics(s, c, sums.data<double>(), momentum, eps, v),
                        affine.data<T>());
  });
}

void CpuBackend::batch_norm_eval_affine(const Tensor& gamma, const Tensor& beta,
                                        const Tensor& running_mean, const Tensor& running_var,
                                        float eps, Tensor& affine) {
  const char* op = "batch_norm_eval_affine";
  check_same_shape(op, gamma, beta);
  check_shape(op, "affine", affine, {2 * gamma.numel()});
  const cpu::NormShape s{1, gamma.numel(), 1};
  dispatch_float(op, gamma, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t c = 0; c < s.c; ++c)
      cpu::store_affine(s, c,
                        cpu::eval_statistics(c, gamma.data<T>(), beta.data<T>(),
                                             running_mean.data<T>(), running_var.data<T>(), eps),
                        affine.data<T>());
  });
}

void CpuBackend::batch_norm_add_relu(const Tensor& x, const Tensor& affine, const Tensor& r,
                                     const Tensor* r_affine, Tensor& y) {
  const char* op = "batch_norm_add_relu";
  check_norm(op, x, {&r, &y}, {}, {});
  check_shape(op, "affine", affine, {2 * x.dim(1)});
  if (r_affine) check_shape(op, "shortcut affine", *r_affine, {2 * x.dim(1)});
  const auto s = norm_shape(x);
  dispatch_float(op, x, [&](auto tag) {
    using T = decltype(tag);
    cpu::batch_norm_add_relu<T>(pool_, s, x.data<T>(), affine.data<T>(), r.data<T>(),
                                r_affine ? r_affine->data<T>() : nullptr, y.data<T>());
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
