#include "ringtrain/nn/linear.hpp"

#include <cmath>

#include "ringtrain/nn/init.hpp"

namespace ringtrain {

Linear::Linear(ParameterSet& params, const std::string& name, int in_features, int out_features)
    : params_(&params),
      in_(in_features),
      out_(out_features),
      weight_(params.add(name + ".weight", {out_features, in_features}, ParamKind::linear_weight)),
      bias_(params.add(name + ".bias", {out_features}, ParamKind::linear_bias)) {}

void Linear::init(Device& device, std::mt19937_64& rng) const {
  const double bound = 1.0 / std::sqrt(static_cast<double>(in_));
  init_uniform(device, params_->param(weight_), bound, rng);
  init_uniform(device, params_->param(bias_), bound, rng);
}

void Linear::forward(Backend& backend, const Tensor& x, Tensor& y) const {
  backend.linear_forward(x, params_->weight(weight_), params_->weight(bias_), y);
}

void Linear::backward(Backend& backend, const Tensor& x, const Tensor& dy, Tensor* dx) const {
  Tensor dw = params_->backward_grad(weight_), db = params_->backward_grad(bias_);
  backend.linear_backward(x, params_->weight(weight_), dy, dx, dw, db);
  params_->gradient_written(bias_);
  params_->gradient_written(weight_);
}

}  // namespace ringtrain
