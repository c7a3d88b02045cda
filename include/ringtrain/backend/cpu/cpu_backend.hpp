#pragma once
#include <chrono>
#include <memory>
#include <optional>

#include "ringtrain/backend/backend.hpp"
#include "ringtrain/core/id_queue.hpp"
#include "ringtrain/core/thread_pool.hpp"

namespace ringtrain {

namespace cpu {
class ConvPrimitives;
class OwnedMemory;
}  // namespace cpu

// The numerical reference: NCHW, f32 (or f64 for gradient checks). Every op splits across the
// thread pool: f32 convolutions into one part of the batch per thread, each running a
// single-threaded oneDNN convolution primitive; GEMMs run single-threaded inside each part.
class CpuBackend final : public Backend {
 public:
  // threads 0: one per hardware thread. compute: the dtype of activations, f32, or f64 for a
  // whole-model reference that the f32 gradients are measured against.
  explicit CpuBackend(int threads = 0, DType compute = DType::f32);
  ~CpuBackend() override;

  DeviceId device_id() const override { return DeviceId{}; }
  std::string name() const override { return "cpu"; }
  // "cpu with 2 threads per rank (oneDNN kernels up to avx2)".
  std::string description() const override;
  DType compute_dtype() const override { return compute_; }
  Layout layout() const override { return Layout::nchw; }
  int threads() const { return pool_.size() + 1; }
  // The most capable instruction set oneDNN's convolution and GEMM kernels may use here ("avx2",
  // "avx512_core", ...): the CPU's best, or less where ONEDNN_MAX_CPU_ISA says so.
  static std::string kernel_isa();

  Tensor zeros(const Shape& shape, DType dtype) override;
  void fill(Tensor& t, double value) override;
  void copy(const Tensor& src, Tensor& dst) override;
  void write(const void* host, std::size_t bytes, Tensor& dst) override;
  void cast(const Tensor& src, Tensor& dst) override;
  void accumulate(Tensor& src, Tensor& dst) override;
  void synchronize() override {}
  void bind_thread() override {}
  int64_t mark(const char* label) override;
  double seconds_between(int64_t from, int64_t to) override;
  void release_marks(int64_t before) override;
  std::shared_ptr<void> host_buffer(std::size_t bytes) override;
  // There is no copy stream on the CPU: the copy is done when the call returns.
  void copy_to_device_async(const Tensor& host, Tensor& device) override { copy(host, device); }
  void wait_for_copies() override {}

  void augment(const Tensor& raw, const Tensor& crops, const Tensor& table, int pad,
               Tensor& out) override;

  void conv_forward(const ConvGeometry& g, const Tensor& x, const Tensor& w, Tensor& y) override;
  void conv_backward_data(const ConvGeometry& g, const Tensor& dy, const Tensor& w,
                          Tensor& dx) override;
  void conv_backward_filter(const ConvGeometry& g, const Tensor& x, const Tensor& dy,
                            Tensor& dw) override;

  void batch_norm_sums(const Tensor& x, Tensor& sums) override;
  void batch_norm_forward_from_sums(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                    const Tensor& sums, float momentum, float eps, bool relu,
                                    Tensor& y, Tensor& save_mean, Tensor& save_invstd,
                                    Tensor& running_mean, Tensor& running_var) override;
  void batch_norm_forward_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                               const Tensor& running_mean, const Tensor& running_var, float eps,
                               bool relu, Tensor& y) override;
  void batch_norm_backward_sums(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                const Tensor& beta, const Tensor& save_mean,
                                const Tensor& save_invstd, bool relu, Tensor& sums) override;
  void batch_norm_add_relu(const Tensor& x, const Tensor& affine, const Tensor& r,
                           const Tensor* r_affine, Tensor& y) override;
  void batch_norm_train_affine(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                               float momentum, float eps, Tensor& sums, Tensor& save_mean,
                               Tensor& save_invstd, Tensor& running_mean, Tensor& running_var,
                               Tensor& affine) override;
  void batch_norm_eval_affine(const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                              const Tensor& running_var, float eps, Tensor& affine) override;
  void batch_norm_backward_from_sums(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                     const Tensor& beta, const Tensor& save_mean,
                                     const Tensor& save_invstd, bool relu, const Tensor& local_sums,
                                     const Tensor& global_sums, double count, Tensor& dx,
                                     Tensor& dgamma, Tensor& dbeta) override;

  void relu_backward(const Tensor& y, const Tensor& dy, Tensor& dx) override;
  void add(const Tensor& a, const Tensor& b, Tensor& y) override;
  void scale(Tensor& t, double factor) override;
  void add_relu(const Tensor& a, const Tensor& b, Tensor& y) override;

  void max_pool_forward(const PoolGeometry& g, const Tensor& x, Tensor& y) override;
  void max_pool_backward(const PoolGeometry& g, const Tensor& x, const Tensor& y, const Tensor& dy,
                         Tensor& dx) override;
  void global_avg_pool_forward(const Tensor& x, Tensor& y) override;
  void global_avg_pool_backward(const Tensor& dy, Tensor& dx) override;

  void linear_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) override;
  void linear_backward(const Tensor& x, const Tensor& w, const Tensor& dy, Tensor* dx, Tensor& dw,
                       Tensor& db) override;

  double softmax_cross_entropy(const Tensor& logits, const Tensor& labels, float smoothing,
                               Tensor* dlogits, double grad_scale) override;
  int64_t count_correct(const Tensor& logits, const Tensor& labels) override;
  void record_loss(const Tensor& logits, const Tensor& labels, float smoothing, Tensor& dlogits,
                   double grad_scale) override;
  std::vector<LossValue> take_losses() override;
  bool all_finite(const Tensor& t) override;

  void optimizer_step(const DeviceRule& rule, const std::vector<DecayRun>& runs, Tensor& params,
                      const Tensor& grads, const std::vector<Tensor*>& state,
                      const Tensor& run_values) override;
  void sum_squares_per_run(const Tensor& x, const std::vector<DecayRun>& runs,
                           Tensor& out) override;

 private:
  DType compute_;
  ThreadPool pool_;
  std::unique_ptr<cpu::ConvPrimitives> conv_;  // f32 convolutions, one primitive per shape
  std::shared_ptr<cpu::OwnedMemory> memory_;   // what the CPU backends' zeros() handed out
  IdQueue<std::chrono::steady_clock::time_point> marks_;
  std::vector<LossValue> loss_log_;  // record_loss's, until take_losses
  double batch_loss(const Tensor& logits, const Tensor& labels, float smoothing, Tensor* dlogits,
                    double grad_scale);
  int64_t batch_correct(const Tensor& logits, const Tensor& labels);
};

}  // namespace ringtrain
