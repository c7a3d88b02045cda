#include "ringtrain/run/step.hpp"

#include <spdlog/spdlog.h>

#include <cmath>

#include "ringtrain/evaluation/evaluation.hpp"

namespace ringtrain {

namespace {

// --cuda-graph's step (one micro-batch, no fp16 finite check): its device work is what
// StepGraph captures; the learning rate goes to the device before it (Optimizer::prepare).
void graphed_step(TrainSession& s, double lr) {
  const DeviceBatch* batch = s.train_batches->next();
  RT_CHECK(batch, "train: the loader ran out of batches in the middle of a step");
  s.optimizer->prepare(static_cast<float>(lr));
  const LossSettings loss{s.config.label_smoothing, 1.0};
  s.graph->run(*batch, *s.profiler, [&](const DeviceBatch& in, StepProfiler* profiler) {
    s.model().parameters().zero_grad(s.backend());
    s.strategy->forward_backward(in, loss, true, profiler);
    if (profiler) profiler->start(Phase::optimizer);
    s.optimizer->update();
  });
}

}  // namespace

void train_step(TrainSession& s, double lr, int64_t step) {
  if (s.graph) return graphed_step(s, lr);
  const int k = s.config.accum_steps;
  const double loss_scale = s.scaler->scale();
  // Note: each micro-batch's loss is divided by k, so the accumulated gradient is that of the
  // mean loss over the k micro-batches: a step of k micro-batches of b images is a step of one
  // batch of k*b images. The fp16 loss scale multiplies it too, and the optimizer divides it
  // back out, so that small gradients survive fp16 without changing the update.
  const LossSettings loss{s.config.label_smoothing, loss_scale / k};
  ParameterSet& params = s.model().parameters();
  params.zero_grad(s.backend());
  for (int micro = 0; micro < k; ++micro) {
    const DeviceBatch* batch = s.train_batches->next();
    RT_CHECK(batch, "train: the loader ran out of batches in the middle of a step");
    s.strategy->forward_backward(*batch, loss, micro + 1 == k, &*s.profiler);
  }
  s.profiler->start(Phase::optimizer);
  const bool finite = !s.scaler->enabled() || s.backend().all_finite(params.flat_grads());
  if (s.scaler->update(finite)) {
    s.optimizer->step(static_cast<float>(lr), static_cast<float>(1.0 / loss_scale));
  } else {
    spdlog::warn("step {}: gradients overflowed at loss scale {}; step skipped, scale now {}", step,
                 loss_scale, s.scaler->scale());
  }
}

std::vector<BatchResult> take_step_losses(TrainSession& s) {
  const std::vector<LossValue> micro = s.strategy->take_losses();
  const size_t k = static_cast<size_t>(s.config.accum_steps);
  RT_CHECK(micro.size() % k == 0, "train: the loss log holds ", micro.size(),
           " micro-batches, not whole steps of ", k);
  std::vector<BatchResult> steps(micro.size() / k);
  for (size_t i = 0; i < micro.size(); ++i) {
    steps[i / k].loss += micro[i].loss / static_cast<double>(k);
    steps[i / k].correct += micro[i].correct;
  }
  return steps;
}

EvalSums evaluate(TrainSession& s) {
  EvalSums sums;
  Backend& backend = s.backend();
  const int64_t batches = s.test_loader->batches_per_epoch();
  int64_t done = 0;
  evaluate_batches(s.model(), *s.test_batches, [&](const Tensor& logits, const Tensor& labels) {
    const int64_t n = logits.dim(0);
    sums.loss += backend.softmax_cross_entropy(logits, labels, 0.0f, nullptr, 1.0) * n;
    sums.correct += static_cast<double>(backend.count_correct(logits, labels));
    sums.count += static_cast<double>(n);
    s.report->evaluation_progress(++done, batches);
  });
  return sums;
}

void check_finite(const TrainSession& s, double loss, const char* which, int64_t when) {
  if (std::isfinite(loss)) return;
  throw DivergedError(str_cat("train: diverged: ", which, " ", when, " is ", loss, "; likely --lr ",
                              s.config.lr, " is too high (lower it or add --warmup-steps)",
                              s.scaler->enabled() ? ", or fp16 overflowed (try --amp bf16)" : ""));
}

}  // namespace ringtrain
