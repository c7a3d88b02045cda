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

void BatchNorm2d::forward(Backend& backend, const Tensor& x, Tensor& y, bool training) {
  RT_CHECK(x.rank() == 4 && x.dim(1) == channels_, "BatchNorm2d: expected input [N,", channels_,
           ",H,W], got ", x.describe());
  Tensor mean = params_->buffer(running_mean_), var = params_->buffer(running_var_);
  if (!training) {
    backend.batch_norm_forward_eval(x, params_->param(weight_), params_->param(bias_), mean, var,
                                    kEps, relu_, y);
    return;
  }
  if (!save_mean_.defined()) {
    // Per-channel statistics stay in the parameters' dtype (f32 under mixed precision).
    const DType stats = params_->param(weight_).dtype();
    save_mean_ = backend.zeros({channels_}, stats);
    save_invstd_ = backend.zeros({channels_}, stats);
    sums_ = backend.zeros({2 * channels_ + 1}, DType::f64);
    grad_sums_ = backend.zeros({2 * channels_}, DType::f64);
    global_grad_sums_ = backend.zeros({2 * channels_}, DType::f64);
  }
  backend.batch_norm_sums(x, sums_);
  if (sync_) sync_->wait(sync_->all_reduce_async(sums_, 0, sums_.numel(), ReduceOp::sum));
  count_ = static_cast<double>(x.numel() / channels_) * (sync_ ? sync_->size() : 1);
  backend.batch_norm_forward_from_sums(x, params_->param(weight_), params_->param(bias_), sums_,
                                       kMomentum, kEps, relu_, y, save_mean_, save_invstd_, mean,
                                       var);
}

// With SyncBatchNorm dx needs the gradient sums of every rank; dgamma and dbeta stay this rank's
// (DDP averages them with the other gradients).
void BatchNorm2d::backward(Backend& backend, const Tensor& x, const Tensor& dy, Tensor& dx) {
  RT_CHECK(save_mean_.defined(), "BatchNorm2d::backward: no training forward before backward");
  const Tensor gamma = params_->param(weight_), beta = params_->param(bias_);
  backend.batch_norm_backward_sums(x, dy, gamma, beta, save_mean_, save_invstd_, relu_, grad_sums_);
  if (sync_) {
    backend.copy(grad_sums_, global_grad_sums_);
    sync_->wait(
        sync_->all_reduce_async(global_grad_sums_, 0, global_grad_sums_.numel(), ReduceOp::sum));
  }
  Tensor dw = params_->grad(weight_), db = params_->grad(bias_);
  backend.batch_norm_backward_from_sums(x, dy, gamma, beta, save_mean_, save_invstd_, relu_,
                                        grad_sums_, sync_ ? global_grad_sums_ : grad_sums_, count_,
                                        dx, dw, db);
  params_->gradient_written(bias_);
  params_->gradient_written(weight_);
}

}  // namespace ringtrain
