// Softmax cross-entropy with label smoothing and the accuracy count: one thread per row (the
// classifier has few classes), sums in double as on the CPU.
#include "backend_impl.hpp"
#include "ringtrain/backend/op_checks.hpp"

namespace ringtrain::cuda {
namespace {

// bad_row: set to (row + 1) of a label outside [0, classes).
template <class T>
__global__ void softmax_cross_entropy_kernel(const T* logits, const int* labels, int n, int classes,
                                             float smoothing, T* dlogits, double* loss_sum,
                                             int* bad_row) {
  RT_GRID_STRIDE(i, n) {
    const int label = labels[i];
    if (label < 0 || label >= classes) {
      atomicExch(bad_row, static_cast<int>(i) + 1);
      continue;
    }
    const T* z = logits + i * classes;
    double zmax = to_float(z[0]);
    for (int j = 1; j < classes; ++j) zmax = fmax(zmax, double(to_float(z[j])));
    double sum = 0;
    for (int j = 0; j < classes; ++j) sum += exp(to_float(z[j]) - zmax);
    const double log_sum = log(sum) + zmax;
    double mean_nll = 0;
    for (int j = 0; j < classes; ++j) mean_nll += log_sum - to_float(z[j]);
    mean_nll /= classes;
    atomicAdd(loss_sum, (1 - smoothing) * (log_sum - to_float(z[label])) + smoothing * mean_nll);
    if (!dlogits) continue;
    for (int j = 0; j < classes; ++j) {
      const double target = double(smoothing) / classes + (j == label ? 1 - smoothing : 0);
      dlogits[i * classes + j] =
          from_float<T>(static_cast<float>((exp(to_float(z[j]) - log_sum) - target) / n));
    }
  }
}

template <class T>
__global__ void count_correct_kernel(const T* logits, const int* labels, int n, int classes,
                                     int* correct) {
  RT_GRID_STRIDE(i, n) {
    const T* z = logits + i * classes;
    int best = 0;
    for (int j = 1; j < classes; ++j)
      if (to_float(z[j]) > to_float(z[best])) best = j;
    if (best == labels[i]) atomicAdd(correct, 1);
  }
}

}  // namespace

double CudaBackend::softmax_cross_entropy(const Tensor& logits, const Tensor& labels,
                                          float smoothing, Tensor* dlogits) {
  check_logits("softmax_cross_entropy", logits, labels);
  if (dlogits) check_same_shape("softmax_cross_entropy", logits, *dlogits);
  const int n = static_cast<int>(logits.dim(0)), classes = static_cast<int>(logits.dim(1));
  Tensor loss = zeros({1}, DType::f64), bad_row = zeros({1}, DType::i32);
  dispatch_float("softmax_cross_entropy", logits, [&](auto tag) {
    using T = decltype(tag);
    softmax_cross_entropy_kernel<<<blocks_for(n), kThreads, 0, compute_>>>(
        static_cast<const T*>(logits.raw()), static_cast<const int*>(labels.raw()), n, classes,
        smoothing, dlogits ? static_cast<T*>(dlogits->raw()) : nullptr,
        static_cast<double*>(loss.raw()), static_cast<int*>(bad_row.raw()));
    RT_CUDA_CHECK_LAUNCH("softmax_cross_entropy_kernel");
  });
  const int bad = read_scalar(static_cast<const int*>(bad_row.raw()));
  RT_CHECK(bad == 0, "softmax_cross_entropy: label at row ", bad - 1, " outside [0, ", classes,
           ")");
  return read_scalar(static_cast<const double*>(loss.raw())) / n;
}

int64_t CudaBackend::count_correct(const Tensor& logits, const Tensor& labels) {
  check_logits("count_correct", logits, labels);
  const int n = static_cast<int>(logits.dim(0)), classes = static_cast<int>(logits.dim(1));
  Tensor correct = zeros({1}, DType::i32);
  dispatch_float("count_correct", logits, [&](auto tag) {
    using T = decltype(tag);
    count_correct_kernel<<<blocks_for(n), kThreads, 0, compute_>>>(
        static_cast<const T*>(logits.raw()), static_cast<const int*>(labels.raw()), n, classes,
        static_cast<int*>(correct.raw()));
    RT_CUDA_CHECK_LAUNCH("count_correct_kernel");
  });
  return read_scalar(static_cast<const int*>(correct.raw()));
}

}  // namespace ringtrain::cuda
