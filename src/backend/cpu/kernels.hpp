#pragma once
// Templated CPU kernels behind CpuBackend, instantiated for float (training) and double (the
// finite-difference checks). Raw pointers, NCHW, shapes already checked by the caller.
#include <cstdint>

#include "ringtrain/backend/backend.hpp"
#include "ringtrain/core/thread_pool.hpp"

namespace ringtrain::cpu {

template <class T>
void conv_forward(ThreadPool& pool, const ConvGeometry& g, const T* x, const T* w, T* y);
template <class T>
void conv_backward_data(ThreadPool& pool, const ConvGeometry& g, const T* dy, const T* w, T* dx);
template <class T>
void conv_backward_filter(ThreadPool& pool, const ConvGeometry& g, const T* x, const T* dy, T* dw);

// Batch norm over [n, c, hw].
struct NormShape {
  int64_t n, c, hw;
};
// Batch norm in phases, so that SyncBatchNorm can all-reduce the sums between them.
// Forward sums: [sum x (C), sum x^2 (C), count]; backward sums: [sum g (C), sum g*xhat (C)].
template <class T>
void batch_norm_sums(ThreadPool& pool, NormShape s, const T* x, double* sums);
template <class T>
void batch_norm_forward_from_sums(ThreadPool& pool, NormShape s, const T* x, const T* gamma,
                                  const T* beta, const double* sums, double momentum, double eps,
                                  bool relu, T* y, T* save_mean, T* save_invstd, T* running_mean,
                                  T* running_var);
template <class T>
void batch_norm_forward_eval(ThreadPool& pool, NormShape s, const T* x, const T* gamma,
                             const T* beta, const T* running_mean, const T* running_var, double eps,
                             bool relu, T* y);
template <class T>
void batch_norm_backward_sums(ThreadPool& pool, NormShape s, const T* x, const T* dy,
                              const T* gamma, const T* beta, const T* save_mean,
                              const T* save_invstd, bool relu, double* sums);
template <class T>
void batch_norm_backward_from_sums(ThreadPool& pool, NormShape s, const T* x, const T* dy,
                                   const T* gamma, const T* beta, const T* save_mean,
                                   const T* save_invstd, bool relu, const double* local,
                                   const double* global, double count, T* dx, T* dgamma, T* dbeta);

template <class T>
void max_pool_forward(const PoolGeometry& g, const T* x, T* y);
template <class T>
void max_pool_backward(const PoolGeometry& g, const T* x, const T* y, const T* dy, T* dx);

// y[n,m] = x[n,k] w[m,k]^T + b[m]
template <class T>
void linear_forward(int n, int k, int m, const T* x, const T* w, const T* b, T* y);
template <class T>
void linear_backward(int n, int k, int m, const T* x, const T* w, const T* dy, T* dx, T* dw, T* db);

template <class T>
double softmax_cross_entropy(int n, int classes, const T* logits, const int* labels,
                             double smoothing, T* dlogits);

// Row-major C[m,n] = alpha op(A) op(B) + beta C through BLAS.
void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc);
void gemm(bool trans_a, bool trans_b, int m, int n, int k, double alpha, const double* a, int lda,
          const double* b, int ldb, double beta, double* c, int ldc);

}  // namespace ringtrain::cpu
