#pragma once
#include <vector>

#include "ringtrain/train/config.hpp"

namespace ringtrain {

struct EpochMetrics {
  int64_t epoch = 0, step = 0;
  double train_loss = 0, train_accuracy = 0;
  double test_loss = 0, test_accuracy = 0;
  double lr = 0, epoch_time_s = 0, images_per_s = 0;
};

struct TrainResult {
  std::vector<double> step_losses;
  std::vector<EpochMetrics> epochs;
  int64_t parameters = 0, macs_per_image = 0;
  double train_time_s = 0, images_per_s = 0, achieved_gflops = 0;
};

// Trains one model in this process on the CPU or CUDA backend: data, model, SGD, schedule, evaluation
// on the test split after every epoch, progress lines and per-epoch JSON lines.
TrainResult train(const TrainConfig& config);

}  // namespace ringtrain
