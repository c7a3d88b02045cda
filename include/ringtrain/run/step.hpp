#pragma once
#include <vector>

#include "ringtrain/report/metrics.hpp"
#include "ringtrain/run/session.hpp"

namespace ringtrain {

// One optimizer step at learning rate `lr`: the gradients zeroed, config.accum_steps
// micro-batches from the training loader through the strategy's forward_backward (DDP
// all-reduces during the last one's backward; DataParallel runs its replicas), the fp16 loss
// scaler's finite check and the optimizer's update. The losses stay on the device: the step reads
// no value back (but fp16's finite check).
void train_step(TrainSession& s, double lr, int64_t step);

// The losses of the steps run since the last call, read from the device in one wait: each
// step's mean loss over its micro-batches and their correct predictions, in step order.
std::vector<BatchResult> take_step_losses(TrainSession& s);

// This rank's share of the test split through the model in inference mode.
EvalSums evaluate(TrainSession& s);

// A NaN or infinite loss ends the run with a DivergedError naming the likely cause: rerunning
// it would only repeat it. `which` and `when` say which loss it was: "the loss at step" 17.
void check_finite(const TrainSession& s, double loss, const char* which, int64_t when);

}  // namespace ringtrain
