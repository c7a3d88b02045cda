#pragma once
// Short measurements of one part of a training step at a time, on this rank: the loader alone,
// compute alone, one all-reduce of the gradients. `ringtrain diagnose` reports them; --workers
// auto picks a thread count from the first two.
#include <memory>

#include "ringtrain/backend/backend.hpp"
#include "ringtrain/data/dataset.hpp"
#include "ringtrain/distributed/communicator.hpp"
#include "ringtrain/distributed/world.hpp"
#include "ringtrain/nn/resnet.hpp"
#include "ringtrain/run_config/config.hpp"

namespace ringtrain {

// Images/s of the loader alone: batches assembled and handed over, nothing computed.
double loader_probe(const TrainConfig& c, const Dataset& data, const World& world,
                    Backend& backend);

struct ComputeProbe {
  double images_per_s = 0, backward_s = 0;
  std::unique_ptr<ResNet> model;  // what was trained: its gradients feed the all-reduce probe
};
// Training steps on one batch already on the device, on a model of its own.
ComputeProbe compute_probe(const TrainConfig& c, const Dataset& data, const World& world,
                           Backend& backend);

// Seconds of one averaging all-reduce of `grads`, median of a few (NCCL on CUDA, else `mpi`).
double allreduce_probe(const TrainConfig& c, const World& world, Backend& backend,
                       Communicator& mpi, Tensor& grads);

// --workers auto: the fewest loader threads (1, 2, 4, ... up to the hardware threads) whose
// loader outruns this rank's compute by 25%, or the fastest count when none does.
int choose_workers(const TrainConfig& config, const Dataset& data, const World& world,
                   Backend& backend);

}  // namespace ringtrain
