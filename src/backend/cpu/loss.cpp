// Softmax cross-entropy with label smoothing and the accuracy count, sums in double.
#include <algorithm>
#include <cmath>
#include <utility>

#include "kernels.hpp"
#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/backend/op_checks.hpp"

namespace ringtrain::cpu {
namespace {

// loss_i = (1 - eps) * -log p_{y_i} + eps * mean_j(-log p_j), averaged over the batch.
template <class T>
double softmax_cross_entropy(int n, int classes, const T* logits, const int* labels,
                             double smoothing, T* dlogits, double grad_scale) {
  double total = 0;
  for (int i = 0; i < n; ++i) {
    const T* z = logits + int64_t{i} * classes;
    const double zmax = *std::max_element(z, z + classes);
    double sum = 0;
    for (int j = 0; j < classes; ++j) sum += std::exp(z[j] - zmax);
    const double log_sum = std::log(sum) + zmax;
    double mean_nll = 0;
    for (int j = 0; j < classes; ++j) mean_nll += log_sum - z[j];
    mean_nll /= classes;
    total += (1 - smoothing) * (log_sum - z[labels[i]]) + smoothing * mean_nll;
    if (!dlogits) continue;
    T* d = dlogits + int64_t{i} * classes;
    for (int j = 0; j < classes; ++j) {
      const double target = smoothing / classes + (j == labels[i] ? 1 - smoothing : 0);
      d[j] = static_cast<T>((std::exp(z[j] - log_sum) - target) * grad_scale / n);
    }
  }
  return total / n;
}

}  // namespace
}  // namespace ringtrain::cpu

namespace ringtrain {

using cpu::dispatch_float;

namespace {

void check_labels(const char* op, const Tensor& logits, const Tensor& labels) {
  check_logits(op, logits, labels);
  const int* l = labels.data<int>();
  for (int64_t i = 0; i < labels.numel(); ++i)
    RT_CHECK(l[i] >= 0 && l[i] < logits.dim(1), op, ": label ", l[i], " at row ", i,
             " outside [0, ", logits.dim(1), ")");
}

}  // namespace

double CpuBackend::softmax_cross_entropy(const Tensor& logits, const Tensor& labels,
                                         float smoothing, Tensor* dlogits, double grad_scale) {
  count_value_read();
  return batch_loss(logits, labels, smoothing, dlogits, grad_scale);
}

int64_t CpuBackend::count_correct(const Tensor& logits, const Tensor& labels) {
  count_value_read();
  return batch_correct(logits, labels);
}

// On the CPU the log is on the host, and a value in it is read when it is computed.
void CpuBackend::record_loss(const Tensor& logits, const Tensor& labels, float smoothing,
                             Tensor& dlogits, double grad_scale) {
  const double loss = batch_loss(logits, labels, smoothing, &dlogits, grad_scale);
  loss_log_.push_back(LossValue{loss, batch_correct(logits, labels)});
}

std::vector<LossValue> CpuBackend::take_losses() {
  if (!loss_log_.empty()) count_value_read();
  return std::exchange(loss_log_, {});
}

double CpuBackend::batch_loss(const Tensor& logits, const Tensor& labels, float smoothing,
                              Tensor* dlogits, double grad_scale) {
  check_labels("softmax_cross_entropy", logits, labels);
  if (dlogits) check_same_shape("softmax_cross_entropy", logits, *dlogits);
  double loss = 0;
  dispatch_float("softmax_cross_entropy", logits, [&](auto tag) {
    using T = decltype(tag);
    loss = cpu::softmax_cross_entropy<T>(
        static_cast<int>(logits.dim(0)), static_cast<int>(logits.dim(1)), logits.data<T>(),
        labels.data<int>(), smoothing, dlogits ? dlogits->data<T>() : nullptr, grad_scale);
  });
  return loss;
}

int64_t CpuBackend::batch_correct(const Tensor& logits, const Tensor& labels) {
  check_labels("count_correct", logits, labels);
  int64_t correct = 0;
  dispatch_float("count_correct", logits, [&](auto tag) {
    using T = decltype(tag);
    const int64_t classes = logits.dim(1);
    for (int64_t i = 0; i < logits.dim(0); ++i) {
      const T* z = logits.data<T>() + i * classes;
      correct += (std::max_element(z, z + classes) - z) == labels.data<int>()[i];
    }
  });
  return correct;
}

}  // namespace ringtrain
