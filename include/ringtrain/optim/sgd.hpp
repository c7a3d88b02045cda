#pragma once
#include <vector>

#include "ringtrain/optim/optimizer.hpp"

namespace ringtrain {

// torch.optim.SGD (dampening 0): momentum, optional Nesterov, L2 weight decay added to the
// gradient, on the norm and bias parameters too unless decay_norm_and_bias is false. State:
// "momentum".
class Sgd : public Optimizer {
 public:
  Sgd(ParameterSet& params, Backend& backend, const OptimizerConfig& config);
  OptimizerKind kind() const override { return OptimizerKind::sgd; }
  Tensor& momentum_buffer() { return state("momentum"); }

 private:
  UpdateRule rule(float lr, float grad_scale) const override;
  void update_parameters() override;

  OptimizerConfig config_;
  std::vector<DecayRun> runs_;
};

}  // namespace ringtrain
