#pragma once
#include <vector>

#include "ringtrain/backend/backend.hpp"
#include "ringtrain/nn/parameters.hpp"

namespace ringtrain {

struct SgdConfig {
  float momentum = 0.9f;
  float weight_decay = 5e-4f;
  bool nesterov = false;
  bool decay_norm_and_bias = true;  // PyTorch's default decays every parameter
};

// SGD with momentum over the flat parameter buffer, one backend call per step.
class Sgd {
 public:
  Sgd(ParameterSet& params, Backend& backend, const SgdConfig& config);
  // Gradients are multiplied by grad_scale first (1 / the fp16 loss scale).
  void step(float lr, float grad_scale = 1.0f);
  Tensor& momentum_buffer() { return momentum_; }

 private:
  ParameterSet& params_;
  Backend& backend_;
  SgdConfig config_;
  std::vector<DecayRun> runs_;
  Tensor momentum_;
};

}  // namespace ringtrain
