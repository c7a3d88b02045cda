// Batch norm in NHWC with our kernels, in the phases the Backend interface defines (so that
// SyncBatchNorm can all-reduce the per-channel sums between them). The bodies are in
// ringtrain/backend/kernels/batch_norm.hpp, where the unit tests run them on the host.
#include "backend_impl.hpp"
#include "launch.cuh"
#include "ringtrain/backend/kernels/batch_norm.hpp"
#include "ringtrain/backend/op_checks.hpp"

namespace ringtrain::cuda {
namespace {

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

// The f64 elements of the first pass's partial sums.
int64_t partials_size(NormDims d) {
  return kernels::channel_chunks(d.rows).chunks * 2 * d.channels;
}

// sums = [sum over rows of pair(.).first (C), ... .second (C)] in two ordered passes through
// `partials` (partials_size(d) values), the second by the first's last block (launch_then_finish),
// which then runs `more`, the steps that read the sums.
template <class Pair, class Columns, class... More>
void launch_channel_sums(const char* op, Pair pair, NormDims d, double* partials,
                         const Columns& columns, unsigned* arrivals, cudaStream_t s,
                         const FinishStep<More>&... more) {
  const kernels::ChannelChunks chunks = kernels::channel_chunks(d.rows);
  const kernels::ChunkSums<Pair> first{pair, d.rows, chunks.rows_per_chunk, d.channels, partials};
  launch_then_finish(op, first, chunks.chunks * d.channels, arrivals, s, columns, more...);
}

// The second pass of launch_channel_sums over the first's partials, into sums.
kernels::ColumnSums<double, double> column_sums(NormDims d, const double* partials, double* sums) {
  return {partials, kernels::channel_chunks(d.rows).chunks, 2 * d.channels, sums};
}

// The forward sums of x into sums = [sum x (C), sum x^2 (C), count], through `partials`
// (partials_size(d) values), in one launch whose last block then runs `more`.
template <class... More>
void launch_forward_sums(const char* op, const Tensor& x, NormDims d, const Tensor& partials,
                         Tensor& sums, unsigned* arrivals, cudaStream_t s,
                         const FinishStep<More>&... more) {
  const FinishStep<kernels::SumsWithCount> totals{
      {column_sums(d, f64(partials), f64(sums)), static_cast<double>(d.rows)}, 2 * d.channels + 1};
  dispatch_float(op, x, [&](auto tag) {
    using T = decltype(tag);
    const kernels::SumAndSquare<T> pair{static_cast<const T*>(x.raw())};
    launch_channel_sums(op, pair, d, f64(partials), totals, arrivals, s, more...);
  });
}

// Note: an empty input (no rows, or no channels) sums to zero, as on the CPU, with no launch
// over its rows; the steps after the sums then run as a plain launch.
bool no_rows(NormDims d) {
  return d.rows == 0 || d.channels == 0;
}

// The gradient sums' functor for one backward pass.
template <class T>
kernels::GradientSums<T> gradient_sums(const Tensor& x, const Tensor& dy, const Tensor& gamma,
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

// TrainStats over d.channels, writing the affine map into affine = [scale (C), shift (C)].
kernels::TrainStats train_stats(const Tensor& sums, NormDims d, float momentum, float eps,
                                const Tensor& gamma, const Tensor& beta, Tensor& save_mean,
                                Tensor& save_invstd, Tensor& running_mean, Tensor& running_var,
                                Tensor& affine) {
  float* scale = f32(affine);
  return {f64(sums),         d.channels,       momentum,       eps,
          f32(gamma),        f32(beta),        f32(save_mean), f32(save_invstd),
          f32(running_mean), f32(running_var), scale,          scale + d.channels};
}

// ChannelGradients over d.channels, writing dx's per-channel values into table [4C].
kernels::ChannelGradients channel_gradients(const Tensor& local, const Tensor& global, double count,
                                            NormDims d, const Tensor& gamma, const Tensor& beta,
                                            const Tensor& mean, const Tensor& invstd,
                                            Tensor& dgamma, Tensor& dbeta, Tensor& table) {
  return {f64(local), f64(global), count,       d.channels, f32(gamma), f32(beta),
          f32(mean),  f32(invstd), f32(dgamma), f32(dbeta), f32(table)};
}

}  // namespace

void CudaBackend::batch_norm_sums(const Tensor& x, Tensor& sums) {
  const char* op = "batch_norm_sums";
  const NormDims d = check_operands(op, x, {}, {{"f64 sums", &sums, true}}, {});
  if (no_rows(d)) {
    RT_CUDA_CHECK(cudaMemsetAsync(sums.raw(), 0, sums.nbytes(), compute_));
    return;
  }
  const Tensor partials = scratch({partials_size(d)}, DType::f64);
  launch_forward_sums(op, x, d, partials, sums, arrivals(), compute_);
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
  launch_grid_stride(op,
                     train_stats(sums, d, momentum, eps, gamma, beta, save_mean, save_invstd,
                                 running_mean, running_var, affine),
                     d.channels, compute_);
  apply_affine(x, y, affine, relu);
}

void CudaBackend::batch_norm_train_affine(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                          float momentum, float eps, Tensor& sums,
                                          Tensor& save_mean, Tensor& save_invstd,
                                          Tensor& running_mean, Tensor& running_var,
                                          Tensor& affine) {
  const char* op = "batch_norm_train_affine";
  const NormDims d =
      check_operands(op, x, {}, {{"f64 sums", &sums, true}},
                     {&gamma, &beta, &save_mean, &save_invstd, &running_mean, &running_var});
  check_shape(op, "affine", affine, {2 * int64_t{d.channels}});
  check_dtype(op, {&affine}, DType::f32);
  const kernels::TrainStats stats = train_stats(sums, d, momentum, eps, gamma, beta, save_mean,
                                                save_invstd, running_mean, running_var, affine);
  if (no_rows(d)) {
    batch_norm_sums(x, sums);
    launch_grid_stride(op, stats, d.channels, compute_);
    return;
  }
  const Tensor partials = scratch({partials_size(d)}, DType::f64);
  launch_forward_sums(op, x, d, partials, sums, arrivals(), compute_,
                      FinishStep<kernels::TrainStats>{stats, d.channels});
}

void CudaBackend::batch_norm_forward_train(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                           float momentum, float eps, bool relu, Tensor& sums,
                                           Tensor& y, Tensor& save_mean, Tensor& save_invstd,
                                           Tensor& running_mean, Tensor& running_var) {
  check_same_shape("batch_norm_forward_train", x, y);
  Tensor affine = scratch({2 * x.dim(1)}, DType::f32);
  batch_norm_train_affine(x, gamma, beta, momentum, eps, sums, save_mean, save_invstd, running_mean,
                          running_var, affine);
  apply_affine(x, y, affine, relu);
}

void CudaBackend::batch_norm_eval_affine(const Tensor& gamma, const Tensor& beta,
                                         const Tensor& running_mean, const Tensor& running_var,
                                         float eps, Tensor& affine) {
  const char* op = "batch_norm_eval_affine";
  check_same_shape(op, gamma, beta);
  check_dtype(op, {&gamma, &beta, &running_mean, &running_var, &affine}, DType::f32);
  check_shape(op, "affine", affine, {2 * gamma.numel()});
  const int channels = static_cast<int>(gamma.numel());
  float* scale = f32(affine);
  const kernels::EvalStats stats{
      eps, f32(gamma), f32(beta), f32(running_mean), f32(running_var), scale, scale + channels};
  launch_grid_stride(op, stats, channels, compute_);
}

void CudaBackend::batch_norm_forward_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                          const Tensor& running_mean, const Tensor& running_var,
                                          float eps, bool relu, Tensor& y) {
  const char* op = "batch_norm_forward_eval";
  const NormDims d = check_operands(op, x, {&y}, {}, {&gamma, &beta, &running_mean, &running_var});
  Tensor affine = scratch({2 * int64_t{d.channels}}, DType::f32);
  batch_norm_eval_affine(gamma, beta, running_mean, running_var, eps, affine);
  apply_affine(x, y, affine, relu);
}

void CudaBackend::batch_norm_add_relu(const Tensor& x, const Tensor& affine, const Tensor& r,
                                      const Tensor* r_affine, Tensor& y) {
  const char* op = "batch_norm_add_relu";
  const NormDims d = check_operands(op, x, {&r, &y}, {}, {});
  check_shape(op, "affine", affine, {2 * int64_t{d.channels}});
  if (r_affine) check_shape(op, "shortcut affine", *r_affine, {2 * int64_t{d.channels}});
  check_dtype(op, {&affine}, DType::f32);
  if (r_affine) check_dtype(op, {r_affine}, DType::f32);
  dispatch_float(op, x, [&](auto tag) {
    using T = decltype(tag);
    const kernels::NormAddRelu<T> body{static_cast<const T*>(x.raw()),
                                       static_cast<const T*>(r.raw()),
                                       static_cast<T*>(y.raw()),
                                       d.channels,
                                       f32(affine),
                                       r_affine ? f32(*r_affine) : nullptr};
    launch_grid_stride(op, body, x.numel(), compute_);
  });
}

void CudaBackend::apply_affine(const Tensor& x, Tensor& y, const Tensor& affine, bool relu) {
  const int channels = static_cast<int>(x.dim(1));
  const float* scale = f32(affine);
  dispatch_float("batch_norm affine", x, [&](auto tag) {
    using T = decltype(tag);
    const kernels::ChannelAffine<T> body{static_cast<const T*>(x.raw()),
                                         static_cast<T*>(y.raw()),
                                         channels,
                                         scale,
                                         scale + channels,
                                         relu};
    launch_grid_stride("batch_norm affine", body, x.numel(), compute_);
  });
}

void CudaBackend::batch_norm_backward_sums(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                           const Tensor& beta, const Tensor& save_mean,
                                           const Tensor& save_invstd, bool relu, Tensor& sums) {
  const char* op = "batch_norm_backward_sums";
  const NormDims d = check_operands(op, x, {&dy}, {{"f64 sums", &sums, false}},
                                    {&gamma, &beta, &save_mean, &save_invstd});
  if (no_rows(d)) {
    RT_CUDA_CHECK(cudaMemsetAsync(sums.raw(), 0, sums.nbytes(), compute_));
    return;
  }
  Tensor partials = scratch({partials_size(d)}, DType::f64);
  const FinishStep<kernels::ColumnSums<double, double>> totals{
      column_sums(d, f64(partials), f64(sums)), 2 * d.channels};
  dispatch_float(op, x, [&](auto tag) {
    using T = decltype(tag);
    const auto pair = gradient_sums<T>(x, dy, gamma, beta, save_mean, save_invstd, relu);
    launch_channel_sums(op, pair, d, f64(partials), totals, arrivals(), compute_);
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
      {&gamma, &beta, &save_mean, &save_invstd, &dgamma, &dbeta});
  Tensor table = scratch({4 * d.channels}, DType::f32);
  launch_grid_stride(op,
                     channel_gradients(local_sums, global_sums, count, d, gamma, beta, save_mean,
                                       save_invstd, dgamma, dbeta, table),
                     d.channels, compute_);
  apply_input_grad(x, dy, save_mean, save_invstd, table, relu, dx);
}

void CudaBackend::batch_norm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                      const Tensor& beta, const Tensor& save_mean,
                                      const Tensor& save_invstd, bool relu, Tensor& sums,
                                      Tensor& dx, Tensor& dgamma, Tensor& dbeta) {
  const char* op = "batch_norm_backward";
  const NormDims d = check_operands(op, x, {&dy, &dx}, {{"f64 sums", &sums, false}},
                                    {&gamma, &beta, &save_mean, &save_invstd, &dgamma, &dbeta});
  if (no_rows(d)) {
    Ops::batch_norm_backward(x, dy, gamma, beta, save_mean, save_invstd, relu, sums, dx, dgamma,
                             dbeta);
    return;
  }
  Tensor partials = scratch({partials_size(d)}, DType::f64);
  Tensor table = scratch({4 * d.channels}, DType::f32);
  const FinishStep<kernels::ColumnSums<double, double>> totals{
      column_sums(d, f64(partials), f64(sums)), 2 * d.channels};
  const FinishStep<kernels::ChannelGradients> per_channel{
      channel_gradients(sums, sums, static_cast<double>(d.rows), d, gamma, beta, save_mean,
                        save_invstd, dgamma, dbeta, table),
      d.channels};
  dispatch_float(op, x, [&](auto tag) {
    using T = decltype(tag);
    const auto pair = gradient_sums<T>(x, dy, gamma, beta, save_mean, save_invstd, relu);
    launch_channel_sums(op, pair, d, f64(partials), totals, arrivals(), compute_, per_channel);
  });
  apply_input_grad(x, dy, save_mean, save_invstd, table, relu, dx);
}

void CudaBackend::apply_input_grad(const Tensor& x, const Tensor& dy, const Tensor& save_mean,
                                   const Tensor& save_invstd, const Tensor& table, bool relu,
                                   Tensor& dx) {
  const int channels = static_cast<int>(x.dim(1));
  dispatch_float("batch_norm input gradient", x, [&](auto tag) {
    using T = decltype(tag);
    const kernels::InputGrad<T> body{static_cast<const T*>(x.raw()),
                                     static_cast<const T*>(dy.raw()),
                                     f32(save_mean),
                                     f32(save_invstd),
                                     f32(table),
                                     relu,
                                     channels,
                                     static_cast<T*>(dx.raw())};
    launch_grid_stride("batch_norm input gradient", body, x.numel(), compute_);
  });
}

}  // namespace ringtrain::cuda
