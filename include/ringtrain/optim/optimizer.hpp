#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ringtrain/backend/backend.hpp"
#include "ringtrain/core/names.hpp"
#include "ringtrain/nn/parameters.hpp"

namespace ringtrain {

// The optimizers, as --optimizer names them (the names and constructors: make_optimizer.cpp).
enum class OptimizerKind { sgd, lars, adamw };
template <>
const NameTable<OptimizerKind>& names_of<OptimizerKind>();

// The names of the state tensors an optimizer of `kind` keeps, one per parameter element each:
// what a checkpoint of that optimizer must hold under /optimizer/.
const std::vector<std::string>& state_names(OptimizerKind kind);

// Every optimizer's settings, as the configuration gives them; each optimizer reads its own.
struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::sgd;
  float momentum = 0.9f;
  float weight_decay = 5e-4f;
  bool nesterov = false;
  bool decay_norm_and_bias = true;  // PyTorch's default decays every parameter
  float lars_eta = 0.001f;          // LARS's trust coefficient
  float lars_epsilon = 0.0f;        // added to LARS's trust ratio denominator
  float beta1 = 0.9f;               // AdamW's moment decay rates, as torch's betas
  float beta2 = 0.999f;
  float adam_eps = 1e-8f;  // AdamW's eps, added to the corrected square root of the second moment
};

// One state tensor of an optimizer, of the flat parameter buffer's shape and dtype (f32): one
// value per parameter element. Checkpoints store it parameter by parameter under
// /optimizer/<name>/<parameter name>.
struct OptimizerState {
  std::string name;  // "momentum", "exp_avg"
  Tensor flat;
};

// An optimizer over the flat parameter buffer: its state is a list of named tensors, which the
// checkpoint stores and restores without knowing the rule, and a count of updates. A rule is a
// subclass that says its hyper-parameters for an update (rule()) and runs the update on the
// device (update_parameters(): one Backend::optimizer_step, after what a layer-wise rule
// computes per run first).
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update at learning rate lr, gradients multiplied by grad_scale first (1 / the fp16
  // loss scale); then the compute-dtype copy of the weights is refreshed: prepare, then update.
  // Note: the update adds to the f32 master weights, because lr x gradient is often below the
  // resolution of a bf16 or fp16 weight and would be lost there. The loss scale is divided out
  // inside the update rather than in a pass over the gradients first: one read of the gradient
  // buffer instead of two.
  void step(float lr, float grad_scale = 1.0f);
  // The host half of step: counts the update and writes its hyper-parameters to the device.
  void prepare(float lr, float grad_scale = 1.0f);
  // The device half of step: the update with the hyper-parameters prepare() last wrote, and the
  // refresh. It reads no host value, so a CUDA graph may capture it once and replay it.
  void update();

  virtual OptimizerKind kind() const = 0;
  std::vector<OptimizerState>& state() { return state_; }
  const std::vector<OptimizerState>& state() const { return state_; }
  // The state tensor called `name`; throws naming the optimizer when it has none.
  Tensor& state(const std::string& name);
  // Updates done: the next one is number steps() + 1 (AdamW's bias correction counts them).
  int64_t steps() const { return steps_; }
  void set_steps(int64_t steps);

 protected:
  // The state tensors of `kind` (state_names), zero.
  Optimizer(ParameterSet& params, Backend& backend, OptimizerKind kind);
  // The hyper-parameters of update number steps() (already counted).
  virtual UpdateRule rule(float lr, float grad_scale) const = 0;
  // The update on the device, by apply().
  virtual void update_parameters() = 0;
  // Backend::optimizer_step of the prepared rule over the parameters, their gradients and the
  // state.
  void apply(const std::vector<DecayRun>& runs, const Tensor& run_values = Tensor());

  ParameterSet& params_;
  Backend& backend_;

 private:
  std::vector<OptimizerState> state_;
  int64_t steps_ = 0;
  Tensor hyper_;     // the prepared rule's struct, on the device (DeviceRule)
  size_t kind_ = 0;  // its UpdateRule alternative
  bool prepared_ = false;
};

}  // namespace ringtrain
