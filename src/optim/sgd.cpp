#include "ringtrain/optim/sgd.hpp"

namespace ringtrain {

Sgd::Sgd(ParameterSet& params, Backend& backend, const OptimizerConfig& config)
    : Optimizer(params, backend, OptimizerKind::sgd),
      config_(config),
      runs_(params.decay_runs(config.decay_norm_and_bias)) {
  RT_CHECK_AS(ConfigError, config.momentum >= 0, "sgd: --momentum must be >= 0, got ",
              config.momentum);
  RT_CHECK_AS(ConfigError, config.weight_decay >= 0, "sgd: --weight-decay must be >= 0, got ",
              config.weight_decay);
  RT_CHECK_AS(ConfigError, !config.nesterov || config.momentum > 0,
              "sgd: --nesterov needs a positive --momentum");
}

UpdateRule Sgd::rule(float lr, float grad_scale) const {
  return SgdHyper{lr, config_.momentum, config_.weight_decay, config_.nesterov, grad_scale};
}

void Sgd::update_parameters() {
  apply(runs_);
}

}  // namespace ringtrain
