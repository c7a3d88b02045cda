#include "ringtrain/optim/adamw.hpp"

namespace ringtrain {

AdamW::AdamW(ParameterSet& params, Backend& backend, const OptimizerConfig& config)
    : Optimizer(params, backend, OptimizerKind::adamw),
      config_(config),
      runs_(params.decay_runs(config.decay_norm_and_bias)) {
  RT_CHECK_AS(ConfigError, config.beta1 >= 0 && config.beta1 < 1,
              "adamw: --adam-beta1 must be in [0, 1), got ", config.beta1);
  RT_CHECK_AS(ConfigError, config.beta2 >= 0 && config.beta2 < 1,
              "adamw: --adam-beta2 must be in [0, 1), got ", config.beta2);
  RT_CHECK_AS(ConfigError, config.adam_eps > 0, "adamw: --adam-eps must be > 0, got ",
              config.adam_eps);
  RT_CHECK_AS(ConfigError, config.weight_decay >= 0, "adamw: --weight-decay must be >= 0, got ",
              config.weight_decay);
  RT_CHECK_AS(ConfigError, !config.nesterov,
              "adamw: --nesterov is SGD's; AdamW has no Nesterov momentum");
}

UpdateRule AdamW::rule(float lr, float grad_scale) const {
  return AdamWHyper::at(steps(), lr, config_.beta1, config_.beta2, config_.adam_eps,
                        config_.weight_decay, grad_scale);
}

void AdamW::update_parameters() {
  apply(runs_);
}

}  // namespace ringtrain
