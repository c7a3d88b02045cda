#include "ringtrain/optim/lars.hpp"

namespace ringtrain {

Lars::Lars(ParameterSet& params, Backend& backend, const OptimizerConfig& config)
    : Optimizer(params, backend, OptimizerKind::lars),
      config_(config),
      runs_(params.parameter_runs(false)),
      run_values_(backend.zeros({2 * static_cast<int64_t>(runs_.size())}, DType::f32)) {
  RT_CHECK_AS(ConfigError, config.momentum >= 0, "lars: --momentum must be >= 0, got ",
              config.momentum);
  RT_CHECK_AS(ConfigError, config.weight_decay >= 0, "lars: --weight-decay must be >= 0, got ",
              config.weight_decay);
  RT_CHECK_AS(ConfigError, config.lars_eta > 0, "lars: --lars-eta must be > 0, got ",
              config.lars_eta);
  RT_CHECK_AS(ConfigError, !config.nesterov,
              "lars: --nesterov is SGD's; LARS takes TensorFlow's plain momentum");
  RT_CHECK_AS(ConfigError, config.lars_epsilon >= 0, "lars: --lars-epsilon must be >= 0, got ",
              config.lars_epsilon);
}

UpdateRule Lars::rule(float lr, float grad_scale) const {
  return LarsHyper{
      lr,        config_.momentum, config_.weight_decay, config_.lars_eta, config_.lars_epsilon,
      grad_scale};
}

void Lars::update_parameters() {
  const auto runs = static_cast<int64_t>(runs_.size());
  Tensor weight_sums = run_values_.slice(0, {runs});
  Tensor grad_sums = run_values_.slice(runs, {runs});
  backend_.sum_squares_per_run(params_.flat_params(), runs_, weight_sums);
  backend_.sum_squares_per_run(params_.flat_grads(), runs_, grad_sums);
  apply(runs_, run_values_);
}

}  // namespace ringtrain
