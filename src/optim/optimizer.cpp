#include "ringtrain/optim/optimizer.hpp"

namespace ringtrain {

const std::vector<std::string>& state_names(OptimizerKind kind) {
  static const std::vector<std::string> momentum = {"momentum"};
  static const std::vector<std::string> moments = {"exp_avg", "exp_avg_sq"};
  return kind == OptimizerKind::adamw ? moments : momentum;
}

Optimizer::Optimizer(ParameterSet& params, Backend& backend, OptimizerKind kind)
    : params_(params), backend_(backend), hyper_(backend.zeros({hyper_bytes()}, DType::u8)) {
  const Tensor& flat = params.flat_params();
  for (const std::string& name : state_names(kind))
    state_.push_back({name, backend.zeros(flat.shape(), flat.dtype())});
}

void Optimizer::step(float lr, float grad_scale) {
  prepare(lr, grad_scale);
  update();
}

void Optimizer::prepare(float lr, float grad_scale) {
  ++steps_;
  kind_ = write_rule(backend_, rule(lr, grad_scale), hyper_).kind;
  prepared_ = true;
}

void Optimizer::update() {
  RT_CHECK(prepared_, "optimizer ", to_string(kind()), ": update() before any prepare()");
  update_parameters();
  params_.refresh_weights(backend_);
}

Tensor& Optimizer::state(const std::string& name) {
  for (OptimizerState& s : state_)
    if (s.name == name) return s.flat;
  throw Error(str_cat("optimizer ", to_string(kind()), " keeps no state called '", name, "'"));
}

void Optimizer::set_steps(int64_t steps) {
  RT_CHECK(steps >= 0, "optimizer ", to_string(kind()), ": step count must be >= 0, got ", steps);
  steps_ = steps;
}

void Optimizer::apply(const std::vector<DecayRun>& runs, const Tensor& run_values) {
  std::vector<Tensor*> tensors;
  for (OptimizerState& s : state_) tensors.push_back(&s.flat);
  backend_.optimizer_step(DeviceRule{kind_, hyper_}, runs, params_.flat_params(),
                          params_.flat_grads(), tensors, run_values);
}

}  // namespace ringtrain
