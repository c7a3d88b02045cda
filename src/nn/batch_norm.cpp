#include "ringtrain/nn/batch_norm.hpp"

namespace ringtrain {

BatchNorm2d::BatchNorm2d(ParameterSet& params, const std::string& name, int channels, bool relu)
    : params_(&params),
      channels_(channels),
      relu_(relu),
      weight_(params.add(name + ".weight", {channels}, ParamKind::norm_weight)),
      bias_(params.add(name + ".bias", {channels}, ParamKind::norm_bias)),
      running_mean_(params.add_buffer(name + ".running_mean", {channels})),
      running_var_(params.add_buffer(name + ".running_var", {channels})) {}

void BatchNorm2d::init(Device& device, bool zero_weight) const {
  Tensor w = params_->param(weight_), b = params_->param(bias_);
  Tensor mean = params_->buffer(running_mean_), var = params_->buffer(running_var_);
  device.fill(w, zero_weight ? 0.0 : 1.0);
  device.fill(b, 0.0);
  device.fill(mean, 0.0);
  device.fill(var, 1.0);
}

void BatchNorm2d::allocate_statistics(Device& device) {
  if (save_mean_.defined()) return;
  // Note: unlike the convolutions, batch norm reads the f32 master gamma and beta (param, not
  // weight) and keeps its statistics in f32 under mixed precision: they are per channel, so f32
  // costs nothing, while a bf16 gamma (8 significant bits) would round every channel's scale.
  const DType stats = params_->param(weight_).dtype();
  save_mean_ = device.zeros({channels_}, stats);
  save_invstd_ = device.zeros({channels_}, stats);
  sums_ = device.zeros({2 * channels_ + 1}, DType::f64);
  grad_sums_ = device.zeros({2 * channels_}, DType::f64);
  global_grad_sums_ = device.zeros({2 * channels_}, DType::f64);
}

void BatchNorm2d::forward(Backend& backend, const Tensor& x, Tensor& y, bool training) {
  RT_CHECK(x.rank() == 4 && x.dim(1) == channels_, "BatchNorm2d: expected input [N,", channels_,
           ",H,W], got ", x.describe());
  Tensor mean = params_->buffer(running_mean_), var = params_->buffer(running_var_);
  if (!training) {
    backend.batch_norm_forward_eval(x, params_->param(weight_), params_->param(bias_), mean, var,
                                    kEps, relu_, y);
    return;
  }
  allocate_statistics(backend);
  // Note: SyncBatchNorm normalises with the global batch's statistics, so the forward is split
  // where the other ranks are needed: per-channel sums of x and x^2 and the count go into one
  // f64 vector (one all-reduce per layer), and every rank normalises from the global sums. f64
  // because the variance, E[x^2] - E[x]^2, cancels badly in f32 over a large batch.
  count_ = static_cast<double>(x.numel() / channels_) * (sync_ ? sync_->size() : 1);
  const Tensor gamma = params_->param(weight_), beta = params_->param(bias_);
  if (!sync_) {
    backend.batch_norm_forward_train(x, gamma, beta, kMomentum, kEps, relu_, sums_, y, save_mean_,
                                     save_invstd_, mean, var);
    return;
  }
  backend.batch_norm_sums(x, sums_);
  sync_->wait_on_device(sync_->all_reduce_async(sums_, 0, sums_.numel(), ReduceOp::sum));
  backend.batch_norm_forward_from_sums(x, gamma, beta, sums_, kMomentum, kEps, relu_, y, save_mean_,
                                       save_invstd_, mean, var);
}

const Tensor& BatchNorm2d::forward_affine(Backend& backend, const Tensor& x, bool training) {
  RT_CHECK(fuses_forward(), "BatchNorm2d::forward_affine: not with SyncBatchNorm or a fused ReLU");
  RT_CHECK(x.rank() == 4 && x.dim(1) == channels_, "BatchNorm2d: expected input [N,", channels_,
           ",H,W], got ", x.describe());
  const Tensor gamma = params_->param(weight_), beta = params_->param(bias_);
  Tensor mean = params_->buffer(running_mean_), var = params_->buffer(running_var_);
  if (!affine_.defined()) affine_ = backend.zeros({2 * channels_}, gamma.dtype());
  if (!training) {
    backend.batch_norm_eval_affine(gamma, beta, mean, var, kEps, affine_);
    return affine_;
  }
  allocate_statistics(backend);
  count_ = static_cast<double>(x.numel() / channels_);
  backend.batch_norm_train_affine(x, gamma, beta, kMomentum, kEps, sums_, save_mean_, save_invstd_,
                                  mean, var, affine_);
  return affine_;
}

// Note: with SyncBatchNorm, dx needs the gradient sums of every rank (the global mean and
// variance depend on every rank's x), while dgamma and dbeta are this rank's sums: DDP averages
// them like any other gradient, and summing them here as well would count the other ranks
// twice. Hence the copy: the all-reduce is in place and the local sums are still needed.
void BatchNorm2d::backward(Backend& backend, const Tensor& x, const Tensor& dy, Tensor& dx) {
  RT_CHECK(save_mean_.defined(), "BatchNorm2d::backward: no training forward before backward");
  const Tensor gamma = params_->param(weight_), beta = params_->param(bias_);
  Tensor dw = params_->backward_grad(weight_), db = params_->backward_grad(bias_);
  if (!sync_) {
    backend.batch_norm_backward(x, dy, gamma, beta, save_mean_, save_invstd_, relu_, grad_sums_, dx,
                                dw, db);
  } else {
    backend.batch_norm_backward_sums(x, dy, gamma, beta, save_mean_, save_invstd_, relu_,
                                     grad_sums_);
    backend.copy(grad_sums_, global_grad_sums_);
    sync_->wait_on_device(
        sync_->all_reduce_async(global_grad_sums_, 0, global_grad_sums_.numel(), ReduceOp::sum));
    backend.batch_norm_backward_from_sums(x, dy, gamma, beta, save_mean_, save_invstd_, relu_,
                                          grad_sums_, global_grad_sums_, count_, dx, dw, db);
  }
  params_->gradient_written(bias_);
  params_->gradient_written(weight_);
}

}  // namespace ringtrain
