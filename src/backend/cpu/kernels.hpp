#pragma once
// What the CPU backend's op files share: the dtype dispatch, the parallel elementwise loop and
// the GEMMs. The kernels are templated on float (training) and double (the finite-difference
// checks): raw pointers, NCHW, shapes already checked by the caller.
#include <cstdint>

#include "ringtrain/core/tensor.hpp"
#include "ringtrain/core/thread_pool.hpp"

namespace ringtrain::cpu {

// Calls f(T{}) with T the C++ type of a floating dtype.
template <class F>
void dispatch_float(const char* op, const Tensor& t, F&& f) {
  RT_CHECK(t.device().kind == DeviceKind::cpu, op, ": CPU backend got a tensor on ",
           t.device().str());
  if (t.dtype() == DType::f32) {
    f(float{});
  } else if (t.dtype() == DType::f64) {
    f(double{});
  } else {
    throw Error(str_cat(op, ": CPU backend computes in f32 or f64, got ", t.describe()));
  }
}

// Calls f(A{}, B{}) with the C++ types of a's and b's floating dtypes (casts between them).
template <class F>
void dispatch_float_pair(const char* op, const Tensor& a, const Tensor& b, F&& f) {
  dispatch_float(op, a, [&](auto x) { dispatch_float(op, b, [&](auto y) { f(x, y); }); });
}

template <class T, class F>
void elementwise(ThreadPool& pool, int64_t n, F&& f) {
  pool.parallel_for(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) f(i);
  });
}

// Pins oneDNN to one OpenMP thread on the calling thread (the first call on each thread does
// it): the pool already runs one oneDNN call per thread.
void single_threaded_onednn();

// Row-major C[m,n] = alpha op(A) op(B) + beta C through BLAS.
void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc);
void gemm(bool trans_a, bool trans_b, int m, int n, int k, double alpha, const double* a, int lda,
          const double* b, int ldb, double beta, double* c, int ldc);

}  // namespace ringtrain::cpu
