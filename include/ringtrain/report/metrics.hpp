#pragma once
// What a run measures: per epoch (train loss and accuracy, test loss and accuracy, throughput,
// where the time went) and for the whole run.
#include <cstdint>
#include <string>
#include <vector>

#include "ringtrain/prof/gpu_monitor.hpp"
#include "ringtrain/prof/step_profiler.hpp"

namespace ringtrain {

struct EpochMetrics {
  int64_t epoch = 0, step = 0;
  double train_loss = 0, train_accuracy = 0;
  double test_loss = 0, test_accuracy = 0;
  double lr = 0, epoch_time_s = 0, images_per_s = 0;
  PhaseTimes phase_shares{};  // mean over ranks
  // Rank 0's GPUs (its one GPU, or every DataParallel replica's), each and all together
  // (percent; -1: not measured).
  std::vector<GpuUse> gpus;
  double gpu_util_mean = -1, gpu_util_min = -1;
};

struct TrainResult {
  std::vector<double> step_losses;
  std::vector<EpochMetrics> epochs;
  int64_t parameters = 0, macs_per_image = 0;
  double train_time_s = 0, images_per_s = 0, achieved_gflops = 0;
  int64_t steps = 0;      // where the run ended: optimizer steps done in all
  int64_t steps_run = 0;  // by this process (fewer after a resume): what rates and means count
  int ranks = 1;
  PhaseTimes phase_totals{};         // seconds, mean over ranks (zeros with --profile off)
  double peak_tflops = 0;            // of one device; 0 when unknown
  std::string device;                // what trained: backend and device name
  std::vector<std::string> devices;  // rank 0's: its GPUs' names, or the CPU model
  bool stopped = false;              // by SIGTERM or SIGUSR1, after writing a checkpoint
  std::string checkpoint;            // the last one written; empty: none
};

// One rank's sums over an epoch's steps (step losses, correct predictions, images), reduced
// over the ranks when the epoch ends with the seconds each profiler phase took since `phases`.
struct EpochTally {
  double loss = 0, correct = 0, images = 0;
  PhaseTimes phases{};    // the profiler's totals when the epoch started
  int64_t steps = 0;      // where the run ended: optimizer steps done in all
  int64_t steps_run = 0;  // by this process (fewer after a resume): what rates and means count
};

// Sums over this rank's share of the test split; reduced over the ranks by the caller.
struct EvalSums {
  double loss = 0, correct = 0, count = 0;
};

}  // namespace ringtrain
