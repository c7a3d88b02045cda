#pragma once
// Kernel bodies of the softmax cross-entropy (with label smoothing) and the accuracy count: one
// index per row of the [n, classes] logits (the classifier has few classes), sums in double as
// on the CPU. Each row writes its own value; ColumnSums then adds them in row order, so the
// totals are the same bits on every run whatever the launch geometry.
#include <cmath>
#include <cstdint>

#include "ringtrain/backend/kernels/element.hpp"
#include "ringtrain/backend/kernels/reduce.hpp"

namespace ringtrain::kernels {

RT_HOST_DEVICE inline bool label_ok(int label, int classes) {
  return label >= 0 && label < classes;
}

// Row i's loss (1 - s) * -log p_label + s * mean_j(-log p_j) into row_loss[i] and, when dlogits
// is set, its gradient grad_scale * (p_j - target_j) / n, scaled in double before the one
// rounding to T (see Ops::softmax_cross_entropy), the target being 1 - s + s / classes at the
// label and s / classes elsewhere. A row with a bad label writes a zero loss (FirstBadLabel reports
// it).
template <class T>
struct SoftmaxCrossEntropyRow {
  const T* logits;
  const int* labels;
  int n, classes;
  double smoothing;
  T* dlogits;
  double grad_scale;
  double* row_loss;
  RT_HOST_DEVICE void operator()(int64_t i) const {
    const int label = labels[i];
    if (!label_ok(label, classes)) {
      row_loss[i] = 0;
      return;
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
    row_loss[i] = (1 - smoothing) * (log_sum - to_float(z[label])) + smoothing * mean_nll;
    if (!dlogits) return;
    for (int j = 0; j < classes; ++j) {
      const double target = smoothing / classes + (j == label ? 1 - smoothing : 0);
      dlogits[i * classes + j] = from_float<T>(
          static_cast<float>((exp(to_float(z[j]) - log_sum) - target) * grad_scale / n));
    }
  }
};

// One index: *bad_row = 1 + the first row whose label is outside [0, classes), 0 if none.
struct FirstBadLabel {
  const int* labels;
  int64_t n;
  int classes;
  int* bad_row;
  RT_HOST_DEVICE void operator()(int64_t) const {
    int bad = 0;
    for (int64_t i = 0; i < n && bad == 0; ++i)
      if (!label_ok(labels[i], classes)) bad = static_cast<int>(i) + 1;
    *bad_row = bad;
  }
};

// The loss log (Ops::record_loss) on the device: each batch's values at the slot `count` says,
// which the batch's launch then moves on.
// Note: the slot is read on the device, not passed by the host, so that a step replayed from a
// CUDA graph appends after the last batch instead of over the batch it was captured with.
constexpr int kLossLogSlots = 1024;
struct LossLog {
  int count;  // batches logged
  int rows[kLossLogSlots], classes[kLossLogSlots];
  double loss_sum[kLossLogSlots];
  int bad_row[kLossLogSlots], correct[kLossLogSlots];
};

// One index: appends a batch of `rows` rows to the log from what its loss launch computed.
struct LogAppend {
  const double* loss_sum;
  const int* bad_row;
  const int* correct;
  int rows, classes;
  LossLog* log;
  RT_HOST_DEVICE void operator()(int64_t) const {
    const int i = log->count;
    if (i < kLossLogSlots) {
      log->rows[i] = rows;
      log->classes[i] = classes;
      log->loss_sum[i] = *loss_sum;
      log->bad_row[i] = *bad_row;
      log->correct[i] = *correct;
    }
    log->count = i + 1;
  }
};

// correct[i] = 1 when row i's first largest logit is at its label, else 0.
template <class T>
struct RowCorrect {
  const T* logits;
  const int* labels;
  int classes;
  int* correct;
  RT_HOST_DEVICE void operator()(int64_t i) const {
    const T* z = logits + i * classes;
    int best = 0;
    for (int j = 1; j < classes; ++j)
      if (to_float(z[j]) > to_float(z[best])) best = j;
    correct[i] = best == labels[i] ? 1 : 0;
  }
};

}  // namespace ringtrain::kernels
