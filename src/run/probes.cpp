#include "ringtrain/run/probes.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "ringtrain/core/clock.hpp"
#include "ringtrain/loader/device_prefetcher.hpp"
#include "ringtrain/nn/forward_backward.hpp"
#include "ringtrain/optim/make_optimizer.hpp"
#include "ringtrain/run/setup.hpp"

namespace ringtrain {
namespace {

constexpr int kLoaderBatches = 24, kComputeSteps = 4, kAllReduces = 3;
constexpr double kLoaderSeconds = 3;  // the loader probe stops early past this

}  // namespace

double loader_probe(const TrainConfig& c, const Dataset& data, const World& world,
                    Backend& backend) {
  TrainSource source = make_train_source(c, data.train, world, backend);
  source.batches->start_epoch(0);
  int64_t images = 0;
  const auto t0 = Clock::now();
  for (int b = 0; b < kLoaderBatches && (b < 2 || seconds_since(t0) < kLoaderSeconds); ++b) {
    const HostBatch* batch = source.batches->next();
    if (!batch) break;
    images += batch->images.dim(0);
  }
  return images / seconds_since(t0);
}

ComputeProbe compute_probe(const TrainConfig& c, const Dataset& data, const World& world,
                           Backend& backend) {
  ComputeProbe p;
  p.model = std::make_unique<ResNet>(model_config(c, data), backend, DType::f32, c.seed);
  ParameterSet& params = p.model->parameters();
  const std::unique_ptr<Optimizer> optimizer = make_optimizer(c.optim, params, backend);
  TrainConfig one_batch = c;
  one_batch.workers = 0;
  TrainSource source = make_train_source(one_batch, data.train, world, backend);
  DevicePrefetcher prefetcher(*source.batches, backend, nullptr, source.augment);
  prefetcher.start_epoch(0);
  const DeviceBatch* batch = prefetcher.next();
  RT_CHECK(batch, "diagnose: the training split gives no batch");
  StepProfiler prof(backend, ProfileMode::summary);
  auto step = [&] {
    params.zero_grad(backend);
    forward_backward(*p.model, batch->images, batch->labels, LossSettings{}, &prof);
    prof.start(Phase::optimizer);
    optimizer->step(0.01f);
    prof.end_step();
  };
  step();  // first-step costs: allocations, algorithm searches
  const PhaseTimes before = prof.totals();
  const auto t0 = Clock::now();
  for (int i = 0; i < kComputeSteps; ++i) step();
  backend.synchronize();
  const int backward = static_cast<int>(Phase::backward);
  p.images_per_s = kComputeSteps * double(batch->images.dim(0)) / seconds_since(t0);
  p.backward_s = (prof.totals()[backward] - before[backward]) / kComputeSteps;
  return p;
}

double allreduce_probe(const TrainConfig& c, const World& world, Backend& backend,
                       Communicator& mpi, Tensor& grads) {
  GradientCommunicator gradients(c, world, backend, mpi);
  Communicator& comm = gradients.get();
  std::vector<double> times;
  for (int i = 0; i < kAllReduces; ++i) {
    comm.barrier();
    const auto t0 = Clock::now();
    comm.wait(comm.all_reduce_async(grads, 0, grads.numel(), ReduceOp::average));
    backend.synchronize();
    times.push_back(seconds_since(t0));
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

int choose_workers(const TrainConfig& config, const Dataset& data, const World& world,
                   Backend& backend) {
  const double compute = compute_probe(config, data, world, backend).images_per_s;
  // Note: the bound is this rank's share of its node's cores (its affinity mask divided among
  // the local ranks that share it), not the machine's cores: under mpirun without binding, or
  // Slurm's --cpus-per-task, more threads than that only take turns.
  const int most = node_cpu_share(world).cores;
  spdlog::info("--workers auto: trying 1 to {} loader thread(s), this rank's share of its cores",
               most);
  int best = 1;
  double best_rate = 0;
  for (int w = 1; w <= most; w *= 2) {
    TrainConfig c = config;
    c.workers = w;
    const double loader = loader_probe(c, data, world, backend);
    spdlog::info("--workers auto: {} worker(s) give {:.0f} img/s, compute consumes {:.0f}", w,
                 loader, compute);
    if (loader > best_rate) {
      best = w;
      best_rate = loader;
    }
    if (loader >= 1.25 * compute) return w;
  }
  return best;
}

}  // namespace ringtrain
