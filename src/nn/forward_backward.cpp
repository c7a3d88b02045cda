#include "ringtrain/nn/forward_backward.hpp"

namespace ringtrain {

BatchResult forward_loss(ResNet& model, const Tensor& images, const Tensor& labels,
                         const LossSettings& loss) {
  Backend& backend = model.backend();
  const Tensor& logits = model.forward(images, true);
  Tensor& dlogits = model.logits_grad();
  BatchResult r;
  r.loss = backend.softmax_cross_entropy(logits, labels, loss.label_smoothing, &dlogits,
                                         loss.grad_scale);
  r.correct = backend.count_correct(logits, labels);
  return r;
}

void backward_from_loss(ResNet& model) {
  model.backward(model.logits_grad());
}

BatchResult forward_backward(ResNet& model, const Tensor& images, const Tensor& labels,
                             const LossSettings& loss, StepProfiler* profiler) {
  if (profiler) profiler->start(Phase::forward);
  const BatchResult r = forward_loss(model, images, labels, loss);
  if (profiler) profiler->start(Phase::backward);
  backward_from_loss(model);
  return r;
}

}  // namespace ringtrain
