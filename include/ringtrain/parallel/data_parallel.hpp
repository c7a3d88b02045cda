#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "ringtrain/backend/backend.hpp"
#include "ringtrain/nn/forward_backward.hpp"

namespace ringtrain {

// torch.nn.DataParallel: one process, one model replica per device, each with its own backend
// (CPU backends, or one CUDA backend per GPU) and its own host thread. Every step replicates
// device 0's parameters and buffers to the others, scatters the batch (on device 0, where the
// loader puts it) in equal chunks to the replicas' own input tensors, runs forward with the
// loss on every replica in parallel and joins, runs backward in parallel and joins, and reduces
// the gradients onto device 0 one replica after another (copied there and added to device 0's
// gradients, as every backward adds). The update is left to the caller, on device 0's
// parameters. The replicate and the serial reduce onto one device are DataParallel's cost
// structure, kept on purpose: it is the baseline DDP is measured against. BN running
// statistics are those of device 0's chunk, as DataParallel keeps them.
class DataParallel {
 public:
  // backends[0] is device 0. Between calls, the calling thread is bound to device 0.
  DataParallel(const ResNetConfig& config, std::vector<std::unique_ptr<Backend>> backends,
               uint64_t seed);
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  int devices() const { return static_cast<int>(replicas_.size()); }
  ResNet& primary() { return *replicas_.front().model; }
  Backend& primary_backend() { return *replicas_.front().backend; }
  Backend& backend(int device) { return *replicas_.at(static_cast<size_t>(device)).backend; }

  // record_forward_backward over the whole batch, each replica on its chunk: the gradient of
  // the batch-mean loss, times loss.grad_scale, is added to device 0's gradients, and each
  // replica records its chunk's loss. With a profiler (on device 0) the phases are replicate,
  // scatter, forward (with the loss), backward and comm (the reduce).
  void step(const Tensor& images, const Tensor& labels, const LossSettings& loss,
            StepProfiler* profiler = nullptr);
  // The losses of the batches stepped since the last call, in order: the mean of the replicas'
  // chunk losses (equal chunks) and the sum of their correct counts.
  std::vector<LossValue> take_losses();

 private:
  struct Replica {
    std::unique_ptr<Backend> backend;
    std::unique_ptr<ResNet> model;
    Tensor images, labels;  // its chunk of the batch (views into the batch on device 0)
  };
  void connect_devices();
  void replicate();
  void scatter(const Tensor& images, const Tensor& labels);
  // Runs task(d) for every replica d in a thread of its own bound to d's device, and waits for
  // each device to finish.
  void on_every_replica(const std::function<void(size_t)>& task);
  void reduce();

  std::vector<Replica> replicas_;
  Tensor staging_;  // on device 0: one replica's gradients on their way into the sum
};

}  // namespace ringtrain
