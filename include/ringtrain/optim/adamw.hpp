#pragma once
#include <vector>

#include "ringtrain/optim/optimizer.hpp"

namespace ringtrain {

// AdamW with torch.optim.AdamW's semantics: bias-corrected first and second moments, eps added
// to the corrected square root, weight decay decoupled from the gradient (the weights shrink by
// lr x wd before the step). Batch-norm and bias parameters are decayed unless
// decay_norm_and_bias is false, as torch decays every parameter it is given. The formula is in
// backend/kernels/adamw.hpp. State: "exp_avg" and "exp_avg_sq", as torch names them; the update
// count gives the bias correction, so a checkpoint keeps it.
class AdamW : public Optimizer {
 public:
  AdamW(ParameterSet& params, Backend& backend, const OptimizerConfig& config);
  OptimizerKind kind() const override { return OptimizerKind::adamw; }

 private:
  UpdateRule rule(float lr, float grad_scale) const override;
  void update_parameters() override;

  OptimizerConfig config_;
  std::vector<DecayRun> runs_;
};

}  // namespace ringtrain
