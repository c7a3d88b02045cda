#pragma once
#include <memory>
#include <optional>

#include "ringtrain/checkpoint/checkpointer.hpp"
#include "ringtrain/distributed/mpi_communicator.hpp"
#include "ringtrain/loader/device_prefetcher.hpp"
#include "ringtrain/optim/loss_scaler.hpp"
#include "ringtrain/optim/lr_schedule.hpp"
#include "ringtrain/optim/optimizer.hpp"
#include "ringtrain/prof/gpu_monitor.hpp"
#include "ringtrain/report/run_report.hpp"
#include "ringtrain/run/setup.hpp"
#include "ringtrain/run/step_graph.hpp"
#include "ringtrain/run/strategy.hpp"

namespace ringtrain {

// How long a run is.
struct RunLength {
  int64_t steps_per_epoch = 0;  // optimizer steps of accum_steps micro-batches
  int64_t total_steps = 0;
  int64_t epochs = 0;
  int64_t global_batch = 0;  // images per step over all ranks and micro-batches
};

// Everything a training run keeps from its start to its end, built from the configuration in
// the order a run needs it: the communicator, the data, the training strategy (the model on one
// device, with DDP over several ranks, or DataParallel's replicas in this one process), the
// optimizer and loss scaler, the loaders, the profiler, the reporters and the checkpoints. It holds
// no training logic: the loop (trainer.cpp) and the step (step.cpp) act on it.
class TrainSession {
 public:
  explicit TrainSession(const TrainConfig& requested);
  TrainSession(const TrainSession&) = delete;
  TrainSession& operator=(const TrainSession&) = delete;

  ResNet& model() { return strategy->model(); }
  Backend& backend() { return strategy->backend(); }
  // "cpu with 2 threads per rank", "DataParallel over 2 CPU devices" (or CUDA devices), or the
  // CUDA device.
  std::string device_name();
  // The names of the devices this process trains on: its GPUs (DataParallel's replicas, one
  // each), or the CPU model on the CPU backend.
  std::vector<std::string> device_names();
  // Where the run stands after the checkpoint it resumed from (the start when none).
  RunPosition resume();
  // Checkpointer::before_start, after_step and at_end on this run's state.
  bool stop_before_start(const RunPosition& start);
  bool checkpoint_after_step(const RunPosition& at);
  void checkpoint_at_end(const RunPosition& end);

  World& world;
  MpiCommunicator comm;
  CheckpointFolderClaim checkpoint_claim;  // rank 0's, held while the run lives
  TrainConfig config;                      // per rank; --workers auto resolved
  Dataset data;
  ResNetConfig model_config;                   // in_channels and classes taken from the data
  std::unique_ptr<TrainingStrategy> strategy;  // one device, DDP or DataParallel
  std::unique_ptr<Optimizer> optimizer;
  std::optional<LossScaler> scaler;
  TrainSource train_source;
  RunLength length;
  LrSchedule schedule;
  std::optional<ImageTransform> test_transform;
  std::optional<Loader> test_loader;
  std::optional<StepProfiler> profiler;
  std::optional<DevicePrefetcher> train_batches, test_batches;
  std::optional<StepGraph> graph;  // --cuda-graph
  std::optional<GpuMonitor> gpu_monitor;
  std::optional<RunReport> report;
  std::optional<Checkpointer> checkpoints;

 private:
  void build_model();
  void build_loaders();
  // --profile trace: the training loader's threads and DDP's buckets record on the profiler's
  // host clock, for the trace's rows besides the phases.
  void trace_host_spans();
  void build_length();
  // The PCI bus ids of the GPUs this process drives, each once.
  std::vector<std::string> gpus_in_use();
  void log_start();
};

}  // namespace ringtrain
