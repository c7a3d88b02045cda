#include "ringtrain/nn/forward_backward.hpp"

namespace ringtrain {

namespace {

void begin_loss(ResNet& model, const Tensor& images, const Tensor& labels,
                const LossSettings& loss) {
  const Tensor& logits = model.forward(images, true);
  model.backend().begin_loss(logits, labels, loss.label_smoothing, model.logits_grad(),
                             loss.grad_scale);
}

BatchResult end_loss(ResNet& model) {
  const LossValue v = model.backend().end_loss();
  return {v.loss, v.correct};
}

}  // namespace

BatchResult forward_loss(ResNet& model, const Tensor& images, const Tensor& labels,
                         const LossSettings& loss) {
  begin_loss(model, images, labels, loss);
  return end_loss(model);
}

void backward_from_loss(ResNet& model) {
  model.backward(model.logits_grad());
}

// Note: the loss is read after backward has been queued (Ops::begin_loss): read between
// forward and backward, it would leave the device idle while the host queued backward.
BatchResult forward_backward(ResNet& model, const Tensor& images, const Tensor& labels,
                             const LossSettings& loss, StepProfiler* profiler) {
  if (profiler) profiler->start(Phase::forward);
  begin_loss(model, images, labels, loss);
  if (profiler) profiler->start(Phase::backward);
  backward_from_loss(model);
  return end_loss(model);
}

}  // namespace ringtrain
