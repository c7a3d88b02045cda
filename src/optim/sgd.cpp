#include "ringtrain/optim/sgd.hpp"

namespace ringtrain {

Sgd::Sgd(ParameterSet& params, Backend& backend, const SgdConfig& config)
    : params_(params),
      backend_(backend),
      config_(config),
      runs_(params.decay_runs(config.decay_norm_and_bias)),
      momentum_(backend.zeros(params.flat_params().shape(), params.flat_params().dtype())) {
  RT_CHECK(config.momentum >= 0, "Sgd: momentum must be >= 0, got ", config.momentum);
  RT_CHECK(config.weight_decay >= 0, "Sgd: weight decay must be >= 0, got ", config.weight_decay);
  RT_CHECK(!config.nesterov || config.momentum > 0, "Sgd: Nesterov needs a positive momentum");
}

// Note: the update adds to the f32 master weights, because lr x gradient is often below the
// resolution of a bf16 or fp16 weight and would be lost there; the ops then read a fresh
// compute-dtype copy. The loss scale is divided out inside the update (grad_scale) rather than
// in a pass over the gradients first: one read of the gradient buffer instead of two.
void Sgd::step(float lr, float grad_scale) {
  const SgdHyper h{lr, config_.momentum, config_.weight_decay, config_.nesterov, grad_scale};
  backend_.sgd_step(h, runs_, params_.flat_params(), params_.flat_grads(), momentum_);
  params_.refresh_weights(backend_);
}

}  // namespace ringtrain
