// Softmax cross-entropy with label smoothing and the accuracy count: one index per row writes
// the row's value, then one ordered sum over the rows (the same bits on every run). The bodies
// are in ringtrain/backend/kernels/loss.hpp, where the unit tests run them on the host.
#include "backend_impl.hpp"
#include "launch.cuh"
#include "ringtrain/backend/kernels/loss.hpp"
#include "ringtrain/backend/op_checks.hpp"

namespace ringtrain::cuda {
namespace {

// The sum of values[0, n) in index order into *total, by one thread.
template <class V>
void launch_row_sum(const char* op, const V* values, int n, V* total, cudaStream_t s) {
  launch_grid_stride(op, kernels::ColumnSums<V, V>{values, n, 1, total}, 1, s);
}

}  // namespace

CudaBackend::LossOnDevice CudaBackend::launch_loss(const char* op, const Tensor& logits,
                                                   const Tensor& labels, float smoothing,
                                                   Tensor* dlogits, double grad_scale) {
  check_logits(op, logits, labels);
  if (dlogits) check_same_shape(op, logits, *dlogits);
  const int n = static_cast<int>(logits.dim(0)), classes = static_cast<int>(logits.dim(1));
  const int* label = static_cast<const int*>(labels.raw());
  LossOnDevice out{scratch({1}, DType::f64), scratch({1}, DType::i32), n, classes};
  Tensor row_loss = scratch({n}, DType::f64);
  double* row_loss_p = static_cast<double*>(row_loss.raw());
  dispatch_float(op, logits, [&](auto tag) {
    using T = decltype(tag);
    T* grad = dlogits ? static_cast<T*>(dlogits->raw()) : nullptr;
    const kernels::SoftmaxCrossEntropyRow<T> body{static_cast<const T*>(logits.raw()),
                                                  label,
                                                  n,
                                                  classes,
                                                  smoothing,
                                                  grad,
                                                  grad_scale,
                                                  row_loss_p};
    launch_grid_stride(op, body, n, compute_);
  });
  launch_row_sum(op, static_cast<const double*>(row_loss_p), n,
                 static_cast<double*>(out.loss_sum.raw()), compute_);
  const kernels::FirstBadLabel check{label, n, classes, static_cast<int*>(out.bad_row.raw())};
  launch_grid_stride(op, check, 1, compute_);
  return out;
}

Tensor CudaBackend::launch_count_correct(const char* op, const Tensor& logits,
                                         const Tensor& labels) {
  check_logits(op, logits, labels);
  const int n = static_cast<int>(logits.dim(0)), classes = static_cast<int>(logits.dim(1));
  Tensor row_correct = scratch({n}, DType::i32), correct = scratch({1}, DType::i32);
  int* row_correct_p = static_cast<int*>(row_correct.raw());
  dispatch_float(op, logits, [&](auto tag) {
    using T = decltype(tag);
    const kernels::RowCorrect<T> body{static_cast<const T*>(logits.raw()),
                                      static_cast<const int*>(labels.raw()), classes,
                                      row_correct_p};
    launch_grid_stride(op, body, n, compute_);
  });
  launch_row_sum(op, static_cast<const int*>(row_correct_p), n, static_cast<int*>(correct.raw()),
                 compute_);
  return correct;
}

void CudaBackend::check_bad_row(const char* op, int bad_row, int classes) {
  RT_CHECK(bad_row == 0, op, ": label at row ", bad_row - 1, " outside [0, ", classes,
           "); the labels must index the classifier's outputs");
}

double CudaBackend::softmax_cross_entropy(const Tensor& logits, const Tensor& labels,
                                          float smoothing, Tensor* dlogits, double grad_scale) {
  const char* op = "softmax_cross_entropy";
  const LossOnDevice loss = launch_loss(op, logits, labels, smoothing, dlogits, grad_scale);
  check_bad_row(op, read_scalar(static_cast<const int*>(loss.bad_row.raw())), loss.classes);
  return read_scalar(static_cast<const double*>(loss.loss_sum.raw())) / loss.n;
}

int64_t CudaBackend::count_correct(const Tensor& logits, const Tensor& labels) {
  const Tensor correct = launch_count_correct("count_correct", logits, labels);
  return read_scalar(static_cast<const int*>(correct.raw()));
}

// Note: the three values come back through one pinned slot with asynchronous copies on the
// compute stream, and an event after them: end_loss waits for that event, which has long passed
// once the host has queued backward, never for the stream.
void CudaBackend::begin_loss(const Tensor& logits, const Tensor& labels, float smoothing,
                             Tensor& dlogits, double grad_scale) {
  const char* op = "begin_loss";
  RT_CHECK(!loss_pending_, op, ": the previous begin_loss has had no end_loss");
  const LossOnDevice loss = launch_loss(op, logits, labels, smoothing, &dlogits, grad_scale);
  const Tensor correct = launch_count_correct(op, logits, labels);
  LossSlot* slot = loss_slot_;
  RT_CUDA_CHECK(cudaMemcpyAsync(&slot->loss_sum, loss.loss_sum.raw(), sizeof(double),
                                cudaMemcpyDeviceToHost, compute_));
  RT_CUDA_CHECK(cudaMemcpyAsync(&slot->correct, correct.raw(), sizeof(int), cudaMemcpyDeviceToHost,
                                compute_));
  RT_CUDA_CHECK(cudaMemcpyAsync(&slot->bad_row, loss.bad_row.raw(), sizeof(int),
                                cudaMemcpyDeviceToHost, compute_));
  RT_CUDA_CHECK(cudaEventRecord(loss_ready_, compute_));
  slot->n = loss.n;
  slot->classes = loss.classes;
  loss_pending_ = true;
}

LossValue CudaBackend::end_loss() {
  RT_CHECK(loss_pending_, "end_loss: no begin_loss before it");
  loss_pending_ = false;
  RT_CUDA_CHECK(cudaEventSynchronize(loss_ready_));
  const LossSlot& slot = *loss_slot_;
  check_bad_row("end_loss", slot.bad_row, slot.classes);
  return LossValue{slot.loss_sum / slot.n, slot.correct};
}

}  // namespace ringtrain::cuda
