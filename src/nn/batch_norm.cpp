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

void BatchNorm2d::init(Backend& backend, bool zero_weight) const {
  Tensor w = params_->param(weight_), b = params_->param(bias_);
  Tensor mean = params_->buffer(running_mean_), var = params_->buffer(running_var_);
  backend.fill(w, zero_weight ? 0.0 : 1.0);
  backend.fill(b, 0.0);
  backend.fill(mean, 0.0);
  backend.fill(var, 1.0);
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
    save_mean_ = backend.zeros({channels_}, x.dtype());
    save_invstd_ = backend.zeros({channels_}, x.dtype());
  }
  backend.batch_norm_forward_train(x, params_->param(weight_), params_->param(bias_), kMomentum,
                                   kEps, relu_, y, save_mean_, save_invstd_, mean, var);
}

void BatchNorm2d::backward(Backend& backend, const Tensor& x, const Tensor& dy, Tensor& dx) const {
  RT_CHECK(save_mean_.defined(), "BatchNorm2d::backward: no training forward before backward");
  Tensor dw = params_->grad(weight_), db = params_->grad(bias_);
  backend.batch_norm_backward(x, dy, params_->param(weight_), params_->param(bias_), save_mean_,
                              save_invstd_, relu_, dx, dw, db);
  params_->gradient_written(bias_);
  params_->gradient_written(weight_);
}

}  // namespace ringtrain
