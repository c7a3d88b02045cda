#pragma once
#include "ringtrain/train/metrics.hpp"
#include "ringtrain/train/session.hpp"

namespace ringtrain {

// One optimizer step at learning rate `lr`: the gradients zeroed, config.accum_steps
// micro-batches from the training loader through forward_backward (DDP all-reduces during the
// last one's backward; DataParallel runs its replicas), the fp16 loss scaler's finite check and
// the SGD update. Returns the mean loss over the micro-batches and their correct predictions.
BatchResult train_step(TrainSession& s, double lr, int64_t step);

// This rank's share of the test split through the model in inference mode.
EvalSums evaluate(TrainSession& s);

// A NaN or infinite loss ends the run with a DivergedError naming the likely cause: rerunning
// it would only repeat it. `which` and `when` say which loss it was: "the loss at step" 17.
void check_finite(const TrainSession& s, double loss, const char* which, int64_t when);

}  // namespace ringtrain
