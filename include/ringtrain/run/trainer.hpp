#pragma once
#include "ringtrain/report/metrics.hpp"
#include "ringtrain/run_config/config.hpp"

namespace ringtrain {

// Trains one model in this process on the CPU or CUDA backend: data, model, SGD, schedule,
// evaluation on the test split after every epoch, and the run's report (RunReport).
TrainResult train(const TrainConfig& config);

}  // namespace ringtrain
