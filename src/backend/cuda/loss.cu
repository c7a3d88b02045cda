// Softmax cross-entropy with label smoothing and the accuracy count: one index per row writes
// the row's value, then one ordered sum over the rows (the same bits on every run), by the
// launch's last block. The bodies
// are in ringtrain/backend/kernels/loss.hpp, where the unit tests run them on the host.
#include <utility>
#include <vector>

#include "backend_impl.hpp"
#include "launch.cuh"
#include "ringtrain/backend/kernels/loss.hpp"
#include "ringtrain/backend/op_checks.hpp"

namespace ringtrain::cuda {
namespace {

// The sum of values[0, n) in index order into *total, by one thread: a finishing step.
template <class V>
FinishStep<kernels::ColumnSums<V, V>> row_sum(const V* values, int n, V* total) {
  return {{values, n, 1, total}, 1};
}

}  // namespace

// Note: one launch per batch. Its rows write their loss (and the gradient) and, when asked,
// whether they are correct; its last block then adds the rows in order and finds the first bad
// label (launch_then_finish).
template <class... Extra>
void CudaBackend::launch_loss(const char* op, const Tensor& logits, const Tensor& labels,
                              float smoothing, Tensor* dlogits, double grad_scale,
                              const LossOutputs& out, const FinishStep<Extra>&... extra) {
  check_logits(op, logits, labels);
  if (dlogits) check_same_shape(op, logits, *dlogits);
  const int n = static_cast<int>(logits.dim(0)), classes = static_cast<int>(logits.dim(1));
  const int* label = static_cast<const int*>(labels.raw());
  Tensor row_loss = scratch({n}, DType::f64), row_correct = scratch({n}, DType::i32);
  double* row_loss_p = static_cast<double*>(row_loss.raw());
  int* row_correct_p = static_cast<int*>(row_correct.raw());
  const auto loss_total = row_sum(static_cast<const double*>(row_loss_p), n, out.loss_sum);
  const FinishStep<kernels::FirstBadLabel> first_bad{{label, n, classes, out.bad_row}, 1};
  dispatch_float(op, logits, [&](auto tag) {
    using T = decltype(tag);
    const T* z = static_cast<const T*>(logits.raw());
    T* grad = dlogits ? static_cast<T*>(dlogits->raw()) : nullptr;
    const kernels::SoftmaxCrossEntropyRow<T> rows{z,         label, n,          classes,
                                                  smoothing, grad,  grad_scale, row_loss_p};
    if (!out.correct) {
      launch_then_finish(op, rows, n, arrivals(), compute_, loss_total, first_bad, extra...);
      return;
    }
    const kernels::RowCorrect<T> correct{z, label, classes, row_correct_p};
    launch_then_finish(op, kernels::Both<decltype(rows), decltype(correct)>{rows, correct}, n,
                       arrivals(), compute_, loss_total, first_bad,
                       row_sum(static_cast<const int*>(row_correct_p), n, out.correct), extra...);
  });
}

void CudaBackend::launch_count_correct(const char* op, const Tensor& logits, const Tensor& labels,
                                       int* correct) {
  check_logits(op, logits, labels);
  const int n = static_cast<int>(logits.dim(0)), classes = static_cast<int>(logits.dim(1));
  Tensor row_correct = scratch({n}, DType::i32);
  int* row_correct_p = static_cast<int*>(row_correct.raw());
  dispatch_float(op, logits, [&](auto tag) {
    using T = decltype(tag);
    const kernels::RowCorrect<T> body{static_cast<const T*>(logits.raw()),
                                      static_cast<const int*>(labels.raw()), classes,
                                      row_correct_p};
    launch_then_finish(op, body, n, arrivals(), compute_,
                       row_sum(static_cast<const int*>(row_correct_p), n, correct));
  });
}

void CudaBackend::check_bad_row(const char* op, int bad_row, int classes) {
  RT_CHECK(bad_row == 0, op, ": label at row ", bad_row - 1, " outside [0, ", classes,
           "); the labels must index the classifier's outputs");
}

double CudaBackend::softmax_cross_entropy(const Tensor& logits, const Tensor& labels,
                                          float smoothing, Tensor* dlogits, double grad_scale) {
  const char* op = "softmax_cross_entropy";
  Tensor loss_sum = scratch({1}, DType::f64), bad_row = scratch({1}, DType::i32);
  launch_loss(op, logits, labels, smoothing, dlogits, grad_scale,
              {static_cast<double*>(loss_sum.raw()), static_cast<int*>(bad_row.raw()), nullptr});
  check_bad_row(op, read_scalar(static_cast<const int*>(bad_row.raw())),
                static_cast<int>(logits.dim(1)));
  return read_scalar(static_cast<const double*>(loss_sum.raw())) /
         static_cast<double>(logits.dim(0));
}

int64_t CudaBackend::count_correct(const Tensor& logits, const Tensor& labels) {
  Tensor correct = scratch({1}, DType::i32);
  launch_count_correct("count_correct", logits, labels, static_cast<int*>(correct.raw()));
  return read_scalar(static_cast<const int*>(correct.raw()));
}

// Note: each batch appends to the log on the compute stream, at the slot the log's count on the
// device says (kernels::LogAppend); nothing waits until take_losses copies the log to pinned
// memory and waits for the stream once. The host counts the batches it issued (replays
// included) only to read a full log in time and to check the device's count.
void CudaBackend::record_loss(const Tensor& logits, const Tensor& labels, float smoothing,
                              Tensor& dlogits, double grad_scale) {
  if (!capture_ && log_entries_ == kernels::kLossLogSlots) read_loss_log();
  Tensor values = scratch({2}, DType::f64);  // the loss sum, then the bad row and correct count
  auto* loss_sum = static_cast<double*>(values.raw());
  auto* counts = reinterpret_cast<int*>(loss_sum + 1);
  const LossOutputs out{loss_sum, counts, counts + 1};
  const FinishStep<kernels::LogAppend> append{
      {out.loss_sum, out.bad_row, out.correct, static_cast<int>(logits.dim(0)),
       static_cast<int>(logits.dim(1)), loss_log()},
      1};
  launch_loss("record_loss", logits, labels, smoothing, &dlogits, grad_scale, out, append);
  ++(capture_ ? capture_->log_entries : log_entries_);  // a capture appends when replayed
}

void CudaBackend::read_loss_log() {
  if (log_entries_ == 0) return;
  RT_CUDA_CHECK(cudaMemcpyAsync(loss_log_host_, loss_log(), sizeof(kernels::LossLog),
                                cudaMemcpyDeviceToHost, compute_));
  RT_CUDA_CHECK(cudaMemsetAsync(&loss_log()->count, 0, sizeof(int), compute_));
  RT_CUDA_CHECK(cudaStreamSynchronize(compute_));
  count_value_read();
  const kernels::LossLog& log = *loss_log_host_;
  const int issued = std::exchange(log_entries_, 0);  // the device's count is zero again
  RT_CHECK(log.count == issued && issued <= kernels::kLossLogSlots,
           "record_loss: the device logged ", log.count, " batches where ", issued, " were issued");
  for (int i = 0; i < log.count; ++i) {
    check_bad_row("record_loss", log.bad_row[i], log.classes[i]);
    drained_.push_back({log.loss_sum[i] / log.rows[i], log.correct[i]});
  }
}

std::vector<LossValue> CudaBackend::take_losses() {
  read_loss_log();
  return std::exchange(drained_, {});
}

}  // namespace ringtrain::cuda
