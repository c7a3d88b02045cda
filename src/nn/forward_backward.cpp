#include "ringtrain/nn/forward_backward.hpp"

namespace ringtrain {

void record_forward_loss(ResNet& model, const Tensor& images, const Tensor& labels,
                         const LossSettings& loss) {
  const Tensor& logits = model.forward(images, true);
  model.backend().record_loss(logits, labels, loss.label_smoothing, model.logits_grad(),
                              loss.grad_scale);
}

void backward_from_loss(ResNet& model) {
  model.backward(model.logits_grad());
  model.parameters().hand_over_gradients();
}

void record_forward_backward(ResNet& model, const Tensor& images, const Tensor& labels,
                             const LossSettings& loss, StepProfiler* profiler) {
  if (profiler) profiler->start(Phase::forward);
  record_forward_loss(model, images, labels, loss);
  if (profiler) profiler->start(Phase::backward);
  backward_from_loss(model);
}

BatchResult forward_backward(ResNet& model, const Tensor& images, const Tensor& labels,
                             const LossSettings& loss, StepProfiler* profiler) {
  record_forward_backward(model, images, labels, loss, profiler);
  const std::vector<LossValue> values = model.backend().take_losses();
  RT_CHECK(values.size() == 1, "forward_backward: the loss log held ", values.size(),
           " batches' losses; take the earlier ones before (Ops::take_losses)");
  return {values[0].loss, values[0].correct};
}

}  // namespace ringtrain
