// Batch norm in NHWC with our kernels, in the phases the Backend interface defines (so that
// SyncBatchNorm can all-reduce the per-channel sums between them). x is a [rows, C] matrix
// with rows = N*H*W; per-channel values are f32; sums are f64 as on the CPU.
#include "backend_impl.hpp"
#include "ringtrain/backend/op_checks.hpp"

namespace ringtrain::cuda {
namespace {

constexpr int kColumns = 32, kRows = 8;  // block shape of the per-channel reductions

// sums[c] += sum over rows of pair(row, c).x, sums[C + c] += ... .y. Each block reduces a
// 32-channel strip over a slice of rows in shared memory, then adds it with one f64 atomic.
template <class Pair>
__global__ void channel_sums_kernel(Pair pair, int64_t rows, int channels, double* sums) {
  __shared__ float2 partial[kRows][kColumns];
  const int c = blockIdx.x * kColumns + threadIdx.x;
  float2 acc = make_float2(0.f, 0.f);
  if (c < channels) {
    for (int64_t r = blockIdx.y * int64_t{kRows} + threadIdx.y; r < rows;
         r += int64_t{gridDim.y} * kRows) {
      const float2 v = pair(r * channels + c, c);
      acc.x += v.x;
      acc.y += v.y;
    }
  }
  partial[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y != 0 || c >= channels) return;
  double sx = 0, sy = 0;
  for (int i = 0; i < kRows; ++i) {
    sx += partial[i][threadIdx.x].x;
    sy += partial[i][threadIdx.x].y;
  }
  atomicAdd(&sums[c], sx);
  atomicAdd(&sums[channels + c], sy);
}

template <class T>
struct SumAndSquare {
  const T* x;
  __device__ float2 operator()(int64_t i, int) const {
    const float v = to_float(x[i]);
    return make_float2(v, v * v);
  }
};

// (g, g * xhat) with g the output gradient masked by the fused ReLU, whose mask is recomputed
// from x with the forward's affine map.
template <class T>
struct GradientSums {
  const T *x, *dy;
  const float *gamma, *beta, *mean, *invstd;
  bool relu;
  __device__ float2 operator()(int64_t i, int c) const {
    const float xv = to_float(x[i]), xhat = (xv - mean[c]) * invstd[c];
    const float scale = gamma[c] * invstd[c], shift = beta[c] - mean[c] * scale;
    const float g = (!relu || xv * scale + shift > 0.f) ? to_float(dy[i]) : 0.f;
    return make_float2(g, g * xhat);
  }
};

template <class Pair>
void launch_channel_sums(Pair pair, int64_t rows, int channels, double* sums, cudaStream_t s) {
  RT_CUDA_CHECK(cudaMemsetAsync(sums, 0, sizeof(double) * 2 * channels, s));
  // Note: an empty input (no rows, or no channels) sums to zero, as on the CPU; a launch with a
  // grid dimension of 0 would be an invalid-configuration error.
  if (rows == 0 || channels == 0) return;
  const int64_t row_blocks = (rows + kRows - 1) / kRows;
  const dim3 grid((channels + kColumns - 1) / kColumns,
                  static_cast<unsigned>(row_blocks < 1024 ? row_blocks : 1024));
  channel_sums_kernel<<<grid, dim3(kColumns, kRows), 0, s>>>(pair, rows, channels, sums);
  RT_CUDA_CHECK_LAUNCH("channel_sums_kernel");
}

// Batch statistics from the sums, PyTorch's running-statistics update (unbiased variance), and
// the affine map y = x * scale + shift.
__global__ void train_stats_kernel(const double* sums, int channels, float momentum, float eps,
                                   const float* gamma, const float* beta, float* save_mean,
                                   float* save_invstd, float* running_mean, float* running_var,
                                   float* scale, float* shift) {
  RT_GRID_STRIDE(c, channels) {
    const double count = sums[2 * channels];
    const double mean = sums[c] / count;
    const double var = fmax(sums[channels + c] / count - mean * mean, 0.0);
    const float invstd = static_cast<float>(1.0 / sqrt(var + eps));
    save_mean[c] = static_cast<float>(mean);
    save_invstd[c] = invstd;
    const double unbiased = count > 1 ? var * count / (count - 1) : var;
    running_mean[c] = static_cast<float>((1 - momentum) * running_mean[c] + momentum * mean);
    running_var[c] = static_cast<float>((1 - momentum) * running_var[c] + momentum * unbiased);
    scale[c] = gamma[c] * invstd;
    shift[c] = beta[c] - save_mean[c] * scale[c];
  }
}

__global__ void eval_stats_kernel(int channels, float eps, const float* gamma, const float* beta,
                                  const float* running_mean, const float* running_var, float* scale,
                                  float* shift) {
  RT_GRID_STRIDE(c, channels) {
    const float invstd = static_cast<float>(1.0 / sqrt(double(running_var[c]) + eps));
    scale[c] = gamma[c] * invstd;
    shift[c] = beta[c] - running_mean[c] * scale[c];
  }
}

template <class T>
__global__ void affine_kernel(const T* x, T* y, int64_t n, int channels, const float* scale,
                              const float* shift, bool relu) {
  RT_GRID_STRIDE(i, n) {
    const int c = static_cast<int>(i % channels);
    const float v = to_float(x[i]) * scale[c] + shift[c];
    y[i] = from_float<T>(relu ? fmaxf(v, 0.f) : v);
  }
}

template <class G>
__global__ void norm_param_grads_kernel(const double* local, int channels, G* dgamma, G* dbeta) {
  RT_GRID_STRIDE(c, channels) {
    dbeta[c] = from_float<G>(to_float(dbeta[c]) + static_cast<float>(local[c]));
    dgamma[c] = from_float<G>(to_float(dgamma[c]) + static_cast<float>(local[channels + c]));
  }
}

// dx = gamma * invstd * (g - mean(g) - xhat * mean(g * xhat)), the means over `count` values.
template <class T>
__global__ void input_grad_kernel(GradientSums<T> grad, const double* global, double count,
                                  int64_t n, int channels, T* dx) {
  RT_GRID_STRIDE(i, n) {
    const int c = static_cast<int>(i % channels);
    const float2 g = grad(i, c);
    const float xhat = (to_float(grad.x[i]) - grad.mean[c]) * grad.invstd[c];
    const float mean_g = static_cast<float>(global[c] / count);
    const float mean_gx = static_cast<float>(global[channels + c] / count);
    dx[i] = from_float<T>(grad.gamma[c] * grad.invstd[c] * (g.x - mean_g - xhat * mean_gx));
  }
}

const float* f32(const Tensor& t) {
  return static_cast<const float*>(t.raw());
}
float* f32(Tensor& t) {
  return static_cast<float*>(t.raw());
}
double* f64(const Tensor& t) {
  return static_cast<double*>(t.raw());
}

struct NormDims {
  int64_t rows;
  int channels;
};

// check_norm, with per-channel vectors in f32 whatever the compute dtype.
NormDims check_operands(const char* op, const Tensor& x,
                        std::initializer_list<const Tensor*> like_x,
                        std::initializer_list<NormSums> sums,
                        std::initializer_list<const Tensor*> vectors) {
  const int64_t c = check_norm(op, x, like_x, sums, vectors);
  check_dtype(op, vectors, DType::f32);
  return {c > 0 ? x.numel() / c : 0, static_cast<int>(c)};
}

// The gradient sums' functor for one backward pass.
template <class T>
GradientSums<T> gradient_sums(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                              const Tensor& beta, const Tensor& mean, const Tensor& invstd,
                              bool relu) {
  return {static_cast<const T*>(x.raw()),
          static_cast<const T*>(dy.raw()),
          f32(gamma),
          f32(beta),
          f32(mean),
          f32(invstd),
          relu};
}

}  // namespace

void CudaBackend::batch_norm_sums(const Tensor& x, Tensor& sums) {
  const NormDims d = check_operands("batch_norm_sums", x, {}, {{"f64 sums", &sums, true}}, {});
  dispatch_float("batch_norm_sums", x, [&](auto tag) {
    using T = decltype(tag);
    launch_channel_sums(SumAndSquare<T>{static_cast<const T*>(x.raw())}, d.rows, d.channels,
                        f64(sums), compute_);
  });
  Tensor count = sums.slice(2 * d.channels, {1});
  fill(count, static_cast<double>(d.rows));
}

void CudaBackend::batch_norm_forward_from_sums(const Tensor& x, const Tensor& gamma,
                                               const Tensor& beta, const Tensor& sums,
                                               float momentum, float eps, bool relu, Tensor& y,
                                               Tensor& save_mean, Tensor& save_invstd,
                                               Tensor& running_mean, Tensor& running_var) {
  const char* op = "batch_norm_forward_from_sums";
  const NormDims d =
      check_operands(op, x, {&y}, {{"f64 sums", &sums, true}},
                     {&gamma, &beta, &save_mean, &save_invstd, &running_mean, &running_var});
  Tensor affine = scratch({2 * d.channels}, DType::f32);
  float* scale = f32(affine);
  train_stats_kernel<<<blocks_for(d.channels), kThreads, 0, compute_>>>(
      f64(sums), d.channels, momentum, eps, f32(gamma), f32(beta), f32(save_mean), f32(save_invstd),
      f32(running_mean), f32(running_var), scale, scale + d.channels);
  RT_CUDA_CHECK_LAUNCH("train_stats_kernel");
  apply_affine(x, y, affine, relu);
}

void CudaBackend::batch_norm_forward_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                          const Tensor& running_mean, const Tensor& running_var,
                                          float eps, bool relu, Tensor& y) {
  const char* op = "batch_norm_forward_eval";
  const NormDims d = check_operands(op, x, {&y}, {}, {&gamma, &beta, &running_mean, &running_var});
  Tensor affine = scratch({2 * d.channels}, DType::f32);
  float* scale = f32(affine);
  eval_stats_kernel<<<blocks_for(d.channels), kThreads, 0, compute_>>>(
      d.channels, eps, f32(gamma), f32(beta), f32(running_mean), f32(running_var), scale,
      scale + d.channels);
  RT_CUDA_CHECK_LAUNCH("eval_stats_kernel");
  apply_affine(x, y, affine, relu);
}

void CudaBackend::apply_affine(const Tensor& x, Tensor& y, const Tensor& affine, bool relu) {
  const int channels = static_cast<int>(x.dim(1));
  const float* scale = f32(affine);
  dispatch_float("batch_norm affine", x, [&](auto tag) {
    using T = decltype(tag);
    affine_kernel<<<blocks_for(x.numel()), kThreads, 0, compute_>>>(
        static_cast<const T*>(x.raw()), static_cast<T*>(y.raw()), x.numel(), channels, scale,
        scale + channels, relu);
    RT_CUDA_CHECK_LAUNCH("affine_kernel");
  });
}

void CudaBackend::batch_norm_backward_sums(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                           const Tensor& beta, const Tensor& save_mean,
                                           const Tensor& save_invstd, bool relu, Tensor& sums) {
  const char* op = "batch_norm_backward_sums";
  const NormDims d = check_operands(op, x, {&dy}, {{"f64 sums", &sums, false}},
                                    {&gamma, &beta, &save_mean, &save_invstd});
  dispatch_float(op, x, [&](auto tag) {
    using T = decltype(tag);
    const GradientSums<T> grad = gradient_sums<T>(x, dy, gamma, beta, save_mean, save_invstd, relu);
    launch_channel_sums(grad, d.rows, d.channels, f64(sums), compute_);
  });
}

void CudaBackend::batch_norm_backward_from_sums(const Tensor& x, const Tensor& dy,
                                                const Tensor& gamma, const Tensor& beta,
                                                const Tensor& save_mean, const Tensor& save_invstd,
                                                bool relu, const Tensor& local_sums,
                                                const Tensor& global_sums, double count, Tensor& dx,
                                                Tensor& dgamma, Tensor& dbeta) {
  const char* op = "batch_norm_backward_from_sums";
  const NormDims d = check_operands(
      op, x, {&dy, &dx},
      {{"f64 local sums", &local_sums, false}, {"f64 global sums", &global_sums, false}},
      {&gamma, &beta, &save_mean, &save_invstd});
  check_same_shape(op, dgamma, dbeta);
  check_shape(op, "dgamma", dgamma, {d.channels});
  dispatch_float(op, dgamma, [&](auto tag) {
    using G = decltype(tag);
    norm_param_grads_kernel<<<blocks_for(d.channels), kThreads, 0, compute_>>>(
        f64(local_sums), d.channels, static_cast<G*>(dgamma.raw()), static_cast<G*>(dbeta.raw()));
    RT_CUDA_CHECK_LAUNCH("norm_param_grads_kernel");
  });
  dispatch_float(op, x, [&](auto tag) {
    using T = decltype(tag);
    const GradientSums<T> grad = gradient_sums<T>(x, dy, gamma, beta, save_mean, save_invstd, relu);
    input_grad_kernel<<<blocks_for(x.numel()), kThreads, 0, compute_>>>(
        grad, f64(global_sums), count, x.numel(), d.channels, static_cast<T*>(dx.raw()));
    RT_CUDA_CHECK_LAUNCH("input_grad_kernel");
  });
}

}  // namespace ringtrain::cuda
