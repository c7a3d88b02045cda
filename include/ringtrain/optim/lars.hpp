#pragma once
#include <vector>

#include "ringtrain/optim/optimizer.hpp"

namespace ringtrain {

// LARS, the optimizer MLPerf's ResNet-50 reference trains large global batches with: momentum
// with a learning rate scaled per parameter by the trust ratio eta |w| / (|g| + wd |w| + eps),
// weight decay added to the gradient; batch-norm parameters and biases are neither scaled nor
// decayed. The formulation, and its source, are in backend/kernels/lars.hpp. State: "momentum".
// Each update computes every parameter's sums of squares of weights and gradients first
// (Backend::sum_squares_per_run, one run per parameter), then updates every element in one pass.
class Lars : public Optimizer {
 public:
  Lars(ParameterSet& params, Backend& backend, const OptimizerConfig& config);
  OptimizerKind kind() const override { return OptimizerKind::lars; }

 private:
  UpdateRule rule(float lr, float grad_scale) const override;
  void update_parameters() override;

  OptimizerConfig config_;
  std::vector<DecayRun> runs_;  // one per parameter; decay: adapted and decayed
  Tensor run_values_;           // per run: the sums of squares of w, then those of the gradients
};

}  // namespace ringtrain
