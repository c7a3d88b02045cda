#include "ringtrain/nn/forward_backward.hpp"

namespace ringtrain {

BatchResult forward_backward(ResNet& model, const Tensor& images, const Tensor& labels,
                             const LossSettings& loss, StepProfiler* profiler) {
  Backend& backend = model.backend();
  if (profiler) profiler->start(Phase::forward);
  const Tensor& logits = model.forward(images, true);
  Tensor& dlogits = model.logits_grad();
  BatchResult r;
  r.loss = backend.softmax_cross_entropy(logits, labels, loss.label_smoothing, &dlogits);
  r.correct = backend.count_correct(logits, labels);
  if (loss.grad_scale != 1.0) backend.scale(dlogits, loss.grad_scale);
  if (profiler) profiler->start(Phase::backward);
  model.backward(dlogits);
  return r;
}

}  // namespace ringtrain
