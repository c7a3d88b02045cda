#pragma once
#include <cstdint>
#include <vector>

#include "ringtrain/backend/device_rule.hpp"
#include "ringtrain/backend/geometry.hpp"
#include "ringtrain/backend/kernels/update_rules.hpp"
#include "ringtrain/core/tensor.hpp"

namespace ringtrain {

// A batch's mean loss and its count of correct rows, as take_losses gives them.
struct LossValue {
  double loss = 0;
  int64_t correct = 0;
};

// Every op the model needs, on one device. Ops never allocate their outputs: the caller passes
// tensors of the right shape (Caffe's contract), so the same activations are reused every step.
// Activations are 4-D [N,C,H,W] in the device's layout. Parameter gradients (dw, dgamma,
// dbeta, db) are added to what their tensors hold, as every framework's backward does: gradient
// accumulation over micro-batches and DataParallel's reduce need no buffers of their own, and a
// step starts with ParameterSet::zero_grad().
class Ops {
 public:
  virtual ~Ops() = default;

  // The loader's augmentation, done after the copy (--augment-on device). raw: uint8 images
  // [N,C,H,W] in NHWC, as the dataset stores them; crops: i32 [N,3], each sample's (dy, dx,
  // flip); table: f32 [C*256], the normalised value of every pixel value (normalization_table).
  // Writes out [N,C,H,W], padded with `pad`, cropped, flipped and normalised, value for value
  // what the loader's threads write (cpu::augment_image).
  virtual void augment(const Tensor& raw, const Tensor& crops, const Tensor& table, int pad,
                       Tensor& out) = 0;

  // Convolution, no bias.
  virtual void conv_forward(const ConvGeometry& g, const Tensor& x, const Tensor& w, Tensor& y) = 0;
  virtual void conv_backward_data(const ConvGeometry& g, const Tensor& dy, const Tensor& w,
                                  Tensor& dx) = 0;
  // dw += the filter gradient.
  virtual void conv_backward_filter(const ConvGeometry& g, const Tensor& x, const Tensor& dy,
                                    Tensor& dw) = 0;

  // Batch norm over N,H,W per channel, optionally followed by a ReLU in the same pass, in
  // phases so that SyncBatchNorm can all-reduce the per-channel sums between them (f64
  // tensors). Forward: sums [2C+1] = (sum x, sum x^2, count); then normalise with the batch
  // statistics they give, keep mean and 1/std for backward, and update the running statistics
  // as PyTorch does (unbiased running variance). Backward: sums [2C] = (sum g, sum g*xhat) with
  // g the gradient masked by the ReLU (recomputed from x, the statistics, gamma and beta);
  // dgamma and dbeta += this rank's sums, dx from the global ones over `count` values.
  virtual void batch_norm_sums(const Tensor& x, Tensor& sums) = 0;
  virtual void batch_norm_forward_from_sums(const Tensor& x, const Tensor& gamma,
                                            const Tensor& beta, const Tensor& sums, float momentum,
                                            float eps, bool relu, Tensor& y, Tensor& save_mean,
                                            Tensor& save_invstd, Tensor& running_mean,
                                            Tensor& running_var) = 0;
  virtual void batch_norm_forward_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                       const Tensor& running_mean, const Tensor& running_var,
                                       float eps, bool relu, Tensor& y) = 0;
  virtual void batch_norm_backward_sums(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                        const Tensor& beta, const Tensor& save_mean,
                                        const Tensor& save_invstd, bool relu, Tensor& sums) = 0;
  virtual void batch_norm_backward_from_sums(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                             const Tensor& beta, const Tensor& save_mean,
                                             const Tensor& save_invstd, bool relu,
                                             const Tensor& local_sums, const Tensor& global_sums,
                                             double count, Tensor& dx, Tensor& dgamma,
                                             Tensor& dbeta) = 0;
  // The end of a residual block in one pass, batch norm's affine map applied where it is used:
  // y = relu(x * scale + shift + s), with affine = [scale (C), shift (C)] of x's batch norm
  // (batch_norm_affine), and s the shortcut: r * r_scale + r_shift with r_affine (a projection's
  // batch norm), or r itself (identity) when r_affine is null.
  virtual void batch_norm_add_relu(const Tensor& x, const Tensor& affine, const Tensor& r,
                                   const Tensor* r_affine, Tensor& y) = 0;
  // The affine map [scale (C), shift (C)] that batch norm's forward applies, for
  // batch_norm_add_relu: in training from the batch's statistics, computed and kept as
  // batch_norm_forward_train does (the running statistics updated too); in evaluation from the
  // running statistics. affine is f32 on CUDA and in the parameters' dtype on the CPU.
  virtual void batch_norm_train_affine(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                       float momentum, float eps, Tensor& sums, Tensor& save_mean,
                                       Tensor& save_invstd, Tensor& running_mean,
                                       Tensor& running_var, Tensor& affine) = 0;
  virtual void batch_norm_eval_affine(const Tensor& gamma, const Tensor& beta,
                                      const Tensor& running_mean, const Tensor& running_var,
                                      float eps, Tensor& affine) = 0;
  // A training pass each way without SyncBatchNorm, the phases in one call so that a backend
  // may fuse them (CUDA: two launches each way); `sums` is the phases' f64 vector, [2C+1]
  // forward and [2C] backward. The CPU runs the phases.
  virtual void batch_norm_forward_train(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                        float momentum, float eps, bool relu, Tensor& sums,
                                        Tensor& y, Tensor& save_mean, Tensor& save_invstd,
                                        Tensor& running_mean, Tensor& running_var) {
    batch_norm_sums(x, sums);
    batch_norm_forward_from_sums(x, gamma, beta, sums, momentum, eps, relu, y, save_mean,
                                 save_invstd, running_mean, running_var);
  }
  virtual void batch_norm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                   const Tensor& beta, const Tensor& save_mean,
                                   const Tensor& save_invstd, bool relu, Tensor& sums, Tensor& dx,
                                   Tensor& dgamma, Tensor& dbeta) {
    batch_norm_backward_sums(x, dy, gamma, beta, save_mean, save_invstd, relu, sums);
    const double rows = x.dim(1) > 0 ? static_cast<double>(x.numel() / x.dim(1)) : 0.0;
    batch_norm_backward_from_sums(x, dy, gamma, beta, save_mean, save_invstd, relu, sums, sums,
                                  rows, dx, dgamma, dbeta);
  }

  // Elementwise. y may alias a; dx may alias dy.
  virtual void relu_backward(const Tensor& y, const Tensor& dy, Tensor& dx) = 0;
  virtual void add(const Tensor& a, const Tensor& b, Tensor& y) = 0;
  virtual void scale(Tensor& t, double factor) = 0;
  // y = relu(a + b): the end of every residual block.
  virtual void add_relu(const Tensor& a, const Tensor& b, Tensor& y) = 0;

  // Pooling.
  virtual void max_pool_forward(const PoolGeometry& g, const Tensor& x, Tensor& y) = 0;
  virtual void max_pool_backward(const PoolGeometry& g, const Tensor& x, const Tensor& y,
                                 const Tensor& dy, Tensor& dx) = 0;
  virtual void global_avg_pool_forward(const Tensor& x, Tensor& y) = 0;  // [N,C,H,W] -> [N,C]
  virtual void global_avg_pool_backward(const Tensor& dy, Tensor& dx) = 0;

  // Classifier: y[N,M] = x[N,K] w[M,K]^T + b[M]; backward adds to dw and db.
  virtual void linear_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) = 0;
  virtual void linear_backward(const Tensor& x, const Tensor& w, const Tensor& dy, Tensor* dx,
                               Tensor& dw, Tensor& db) = 0;

  // Mean softmax cross-entropy over the batch with label smoothing (PyTorch's definition).
  // Writes grad_scale x the gradient of the mean loss into dlogits when given. labels are i32.
  // Note: the scale (the fp16 loss scale) is applied in double before the one rounding to the
  // dtype of dlogits: scaled after that rounding, an f16 gradient (p - t) / n below 6e-5 would
  // already have lost its bits as a subnormal, and one below 6e-8 would be 0.
  virtual double softmax_cross_entropy(const Tensor& logits, const Tensor& labels, float smoothing,
                                       Tensor* dlogits, double grad_scale) = 0;
  // Number of rows whose arg-max (first maximum) equals the label.
  virtual int64_t count_correct(const Tensor& logits, const Tensor& labels) = 0;

  // Training's loss, kept on the device: record_loss computes what softmax_cross_entropy (into
  // dlogits) and count_correct do and appends the batch's values to the device's loss log,
  // without waiting for them. take_losses waits for the log once, returns its values in the
  // order recorded and empties it; a label outside [0, classes) in any batch is reported then.
  // Note: a loss read back at each step makes the host wait for the device every step: it
  // cannot queue the next step's work while the device finishes this one, and no step could be
  // captured as a CUDA graph. The trainer reads the log only when it prints a line, writes a
  // checkpoint or ends an epoch.
  virtual void record_loss(const Tensor& logits, const Tensor& labels, float smoothing,
                           Tensor& dlogits, double grad_scale) = 0;
  virtual std::vector<LossValue> take_losses() = 0;

  // Whether every element is finite (fp16 loss scaling skips a step when not).
  virtual bool all_finite(const Tensor& t) = 0;

  // One optimizer update over the flat buffers, by the rule's body (kernels/update_rules.hpp):
  // params, grads and each state tensor have the same length; grads may be in the compute dtype
  // while params and state are f32. `runs` cover params in order from 0; `run_values` holds
  // what the rule reads per run (LARS: sums of squares from sum_squares_per_run), or is empty.
  virtual void optimizer_step(const DeviceRule& rule, const std::vector<DecayRun>& runs,
                              Tensor& params, const Tensor& grads,
                              const std::vector<Tensor*>& state, const Tensor& run_values) = 0;
  // out[r] (f32, one per run) = the sum of squares of x over run r, summed piece by piece in a
  // fixed order (kernels/update.hpp), so that it is the same bits on every run.
  virtual void sum_squares_per_run(const Tensor& x, const std::vector<DecayRun>& runs,
                                   Tensor& out) = 0;
};

}  // namespace ringtrain
