#pragma once
#include "ringtrain/nn/resnet.hpp"
#include "ringtrain/prof/step_profiler.hpp"

namespace ringtrain {

struct LossSettings {
  float label_smoothing = 0.0f;
  // The loss gradient is multiplied by this before backward: the fp16 loss scale, divided by
  // the micro-batches of a step and the replicas that share a batch.
  double grad_scale = 1.0;
};

struct BatchResult {
  double loss = 0;  // mean softmax cross-entropy over the batch
  int64_t correct = 0;
};

// The one training computation that every caller shares (the trainer, DataParallel's replicas,
// the probes, the benchmarks): forward on a batch, the loss, and backward, which adds the
// gradient of grad_scale x the batch-mean loss to the model's parameter gradients. Whoever
// listens to the parameters' gradients (DDP's buckets) hears each one as backward writes it.
// With a profiler, forward (with the loss) and backward are timed as their phases.
// record_forward_backward leaves the batch's loss in the device's loss log (Ops::record_loss:
// nothing is read back; model.backend().take_losses() reads it); forward_backward reads it at
// once, and the log must hold nothing else.
void record_forward_backward(ResNet& model, const Tensor& images, const Tensor& labels,
                             const LossSettings& loss, StepProfiler* profiler = nullptr);
BatchResult forward_backward(ResNet& model, const Tensor& images, const Tensor& labels,
                             const LossSettings& loss, StepProfiler* profiler = nullptr);

// record_forward_backward's two halves, for callers that wait between them (DataParallel joins
// its replicas after each): record_forward_loss runs forward, records the loss and leaves
// grad_scale x the loss gradient in model.logits_grad(); backward_from_loss runs backward from
// it.
void record_forward_loss(ResNet& model, const Tensor& images, const Tensor& labels,
                         const LossSettings& loss);
void backward_from_loss(ResNet& model);

}  // namespace ringtrain
