#pragma once
#include <memory>
#include <vector>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/nn/forward_backward.hpp"

namespace ringtrain {

// torch.nn.DataParallel on CPU "devices": one process, one model replica per device, each with
// its own backend and threads. Every step replicates device 0's parameters and buffers to the
// others, scatters the batch in equal chunks, runs the replicas in parallel threads, reduces
// the gradients onto device 0 one replica after another (adding them to device 0's gradients,
// as every backward does), and leaves the update to the caller on device 0's parameters. The
// replicate and the serial reduce onto one device are DataParallel's cost structure, kept on
// purpose: it is the baseline DDP is measured against. BN running statistics are those of device
// 0's chunk, as DataParallel keeps them.
class DataParallel {
 public:
  DataParallel(const ResNetConfig& config, int devices, int threads_per_device, uint64_t seed);

  ResNet& primary() { return *replicas_.front().model; }
  Backend& primary_backend() { return *replicas_.front().backend; }

  // forward_backward over the whole batch, each replica on its chunk: the gradient of the
  // batch-mean loss, times loss.grad_scale, is added to device 0's gradients.
  // With a profiler: replicate and scatter are timed as Phase::copy, the replicas' forward and
  // backward (in parallel) as Phase::forward, the reduce onto device 0 as Phase::comm.
  BatchResult step(const Tensor& images, const Tensor& labels, const LossSettings& loss,
                   StepProfiler* profiler = nullptr);

 private:
  struct Replica {
    std::unique_ptr<CpuBackend> backend;
    std::unique_ptr<ResNet> model;
  };
  void replicate();
  std::vector<Replica> replicas_;
};

}  // namespace ringtrain
