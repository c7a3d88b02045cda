// The classifier's GEMMs through cuBLAS with f32 accumulation. Row-major [rows, cols] matrices
// are column-major [cols, rows] to cuBLAS, so each product is written transposed.
#include "backend_impl.hpp"
#include "launch.cuh"
#include "ringtrain/backend/kernels/classifier.hpp"
#include "ringtrain/backend/op_checks.hpp"

namespace ringtrain::cuda {
namespace {

cudaDataType_t cublas_dtype(DType t) {
  switch (t) {
    case DType::f32:
      return CUDA_R_32F;
    case DType::bf16:
      return CUDA_R_16BF;
    case DType::f16:
      return CUDA_R_16F;
    default:
      throw Error(str_cat("cuBLAS: no data type for ", dtype_name(t)));
  }
}

// C[m,n] = op(A) op(B) + beta C in cuBLAS's column-major terms, all operands of one dtype.
void gemm(cublasHandle_t h, DType t, cublasOperation_t op_a, cublasOperation_t op_b, int m, int n,
          int k, const void* a, int lda, const void* b, int ldb, float beta, void* c, int ldc) {
  const float one = 1.f;
  const cudaDataType_t dt = cublas_dtype(t);
  RT_CUDA_CHECK(cublasGemmEx(h, op_a, op_b, m, n, k, &one, a, dt, lda, b, dt, ldb, &beta, c, dt,
                             ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace

void CudaBackend::linear_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) {
  const LinearDims d = check_linear("linear_forward", x, w);
  check_dtype("linear_forward", {&w, &b, &y}, x.dtype());
  check_shape("linear_forward", "bias", b, {d.m});
  check_shape("linear_forward", "output", y, {d.n, d.m});
  // y^T[m,n] = w[m,k] x^T[k,n]
  gemm(cublas_, x.dtype(), CUBLAS_OP_T, CUBLAS_OP_N, d.m, d.n, d.k, w.raw(), d.k, x.raw(), d.k, 0.f,
       y.raw(), d.m);
  dispatch_float("linear_forward", y, [&](auto tag) {
    using T = decltype(tag);
    const kernels::AddBias<T> body{static_cast<T*>(y.raw()), static_cast<const T*>(b.raw()), d.m};
    launch_grid_stride("linear_forward (bias)", body, y.numel(), compute_);
  });
}

void CudaBackend::linear_backward(const Tensor& x, const Tensor& w, const Tensor& dy, Tensor* dx,
                                  Tensor& dw, Tensor& db) {
  const LinearDims d = check_linear("linear_backward", x, w);
  check_dtype("linear_backward", {&w, &dy, &dw, &db}, x.dtype());
  check_shape("linear_backward", "output gradient", dy, {d.n, d.m});
  check_shape("linear_backward", "weight gradient", dw, {d.m, d.k});
  check_shape("linear_backward", "bias gradient", db, {d.m});
  if (dx) check_same_shape("linear_backward", x, *dx);
  // dw^T[k,m] += x^T[k,n] dy[n,m]
  gemm(cublas_, x.dtype(), CUBLAS_OP_N, CUBLAS_OP_T, d.k, d.m, d.n, x.raw(), d.k, dy.raw(), d.m,
       1.f, dw.raw(), d.k);
  // dx^T[k,n] = w^T[k,m] dy^T[m,n]
  if (dx)
    gemm(cublas_, x.dtype(), CUBLAS_OP_N, CUBLAS_OP_N, d.k, d.n, d.m, w.raw(), d.k, dy.raw(), d.m,
         0.f, dx->raw(), d.k);
  dispatch_float("linear_backward", dy, [&](auto tag) {
    using T = decltype(tag);
    const kernels::BiasGradient<T> body{static_cast<const T*>(dy.raw()), static_cast<T*>(db.raw()),
                                        d.n, d.m};
    launch_grid_stride("linear_backward (bias gradient)", body, d.m, compute_);
  });
}

}  // namespace ringtrain::cuda
