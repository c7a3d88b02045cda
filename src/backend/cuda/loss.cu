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

double CudaBackend::softmax_cross_entropy(const Tensor& logits, const Tensor& labels,
                                          float smoothing, Tensor* dlogits, double grad_scale) {
  const char* op = "softmax_cross_entropy";
  check_logits(op, logits, labels);
  if (dlogits) check_same_shape(op, logits, *dlogits);
  const int n = static_cast<int>(logits.dim(0)), classes = static_cast<int>(logits.dim(1));
  const int* label = static_cast<const int*>(labels.raw());
  Tensor row_loss = scratch({n}, DType::f64), loss = scratch({1}, DType::f64);
  Tensor bad_row = scratch({1}, DType::i32);
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
  launch_row_sum(op, static_cast<const double*>(row_loss_p), n, static_cast<double*>(loss.raw()),
                 compute_);
  const kernels::FirstBadLabel check{label, n, classes, static_cast<int*>(bad_row.raw())};
  launch_grid_stride(op, check, 1, compute_);
  const int bad = read_scalar(static_cast<const int*>(bad_row.raw()));
  RT_CHECK(bad == 0, op, ": label at row ", bad - 1, " outside [0, ", classes,
           "); the labels must index the classifier's outputs");
  return read_scalar(static_cast<const double*>(loss.raw())) / n;
}

int64_t CudaBackend::count_correct(const Tensor& logits, const Tensor& labels) {
  const char* op = "count_correct";
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
  return read_scalar(static_cast<const int*>(correct.raw()));
}

}  // namespace ringtrain::cuda
