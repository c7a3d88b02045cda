#pragma once
// How one process trains: on one device; with DDP (its device, the gradients all-reduced with
// the other ranks during backward); or with DataParallel (replicas of the model on several
// devices of this one process). The step and the trainer call a TrainingStrategy and never ask
// which one runs.
#include <memory>
#include <string>
#include <vector>

#include "ringtrain/backend/backend.hpp"
#include "ringtrain/distributed/world.hpp"
#include "ringtrain/loader/device_prefetcher.hpp"
#include "ringtrain/nn/forward_backward.hpp"
#include "ringtrain/nn/resnet.hpp"
#include "ringtrain/prof/host_spans.hpp"
#include "ringtrain/prof/step_profiler.hpp"
#include "ringtrain/run/setup.hpp"

namespace ringtrain {

class TrainingStrategy {
 public:
  virtual ~TrainingStrategy() = default;

  // The model the optimizer updates and the checkpoints save, and its device (DataParallel's
  // replica 0).
  virtual ResNet& model() = 0;
  virtual Backend& backend() = 0;
  // Every device this process trains on, in order (DataParallel's replicas; one otherwise).
  virtual std::vector<Backend*> backends() { return {&backend()}; }
  // "cpu with 2 threads per rank (...)", "DataParallel over 2 CUDA devices, ...".
  virtual std::string device_name() { return backend().description(); }

  // One micro-batch's forward and backward, its loss recorded on the device. `last`: the step's
  // last micro-batch (DDP communicates the accumulated gradients during its backward).
  virtual void forward_backward(const DeviceBatch& batch, const LossSettings& loss, bool last,
                                StepProfiler* profiler) = 0;
  // The losses of the micro-batches since the last call, in order, read in one wait.
  virtual std::vector<LossValue> take_losses() { return backend().take_losses(); }

  // DDP: every rank continues from rank 0's parameters and buffers (at the start, after a
  // resume), and evaluates rank 0's batch-norm statistics. Nothing to share otherwise.
  virtual void share_state() {}
  virtual void share_buffers() {}
  // --profile trace: DDP's all-reduces recorded on the profiler's clock, and the record.
  virtual void trace_communication(const StepProfiler*) {}
  virtual std::vector<AllReduceSpan> traced_communication() const { return {}; }
};

// The strategy the configuration asks for: DataParallel for --mode dp (refused under mpirun),
// DDP over several ranks (NCCL on CUDA, MPI on the CPU), one device otherwise; with a model of
// `model_config` initialised from --seed. `mpi`: the job's communicator, which carries DDP's
// gradients on the CPU.
std::unique_ptr<TrainingStrategy> make_strategy(const TrainConfig& config,
                                                const ResNetConfig& model_config,
                                                const World& world, Communicator& mpi);

}  // namespace ringtrain
