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

void Sgd::step(float lr, float grad_scale) {
  const SgdHyper h{lr, config_.momentum, config_.weight_decay, config_.nesterov, grad_scale};
  backend_.sgd_step(h, runs_, params_.flat_params(), params_.flat_grads(), momentum_);
  params_.refresh_weights(backend_);
}

}  // namespace ringtrain
