#include "ringtrain/run/strategy.hpp"

#include "ringtrain/parallel/data_parallel.hpp"
#include "ringtrain/parallel/ddp.hpp"

namespace ringtrain {
namespace {

// One process on one device.
class OneDevice : public TrainingStrategy {
 public:
  OneDevice(const TrainConfig& c, const ResNetConfig& mc, const World& world)
      : backend_(make_backend(device_request(c), &world)),
        model_(std::make_unique<ResNet>(mc, *backend_, DType::f32, c.seed)) {}
  ResNet& model() override { return *model_; }
  Backend& backend() override { return *backend_; }
  void forward_backward(const DeviceBatch& batch, const LossSettings& loss, bool,
                        StepProfiler* profiler) override {
    record_forward_backward(*model_, batch.images, batch.labels, loss, profiler);
  }

 private:
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<ResNet> model_;
};

// One device per rank; the gradients all-reduced in buckets while backward runs.
class Distributed : public OneDevice {
 public:
  Distributed(const TrainConfig& c, const ResNetConfig& mc, const World& world, Communicator& mpi)
      : OneDevice(c, mc, world), gradients_(c, world, backend(), mpi) {
    if (c.sync_bn) model().set_sync_batch_norm(&gradients_.get());
    ddp_ = std::make_unique<DistributedDataParallel>(
        model().parameters(), gradients_.get(), backend(),
        DdpConfig{c.bucket_cap_mb, 1.0, c.overlap, c.grad_comm == GradComm::bf16});
  }
  void forward_backward(const DeviceBatch& batch, const LossSettings& loss, bool last,
                        StepProfiler* profiler) override {
    ddp_->set_sync(last);
    OneDevice::forward_backward(batch, loss, last, profiler);
    if (profiler) profiler->start(Phase::comm_wait);  // what is left of the all-reduces
    ddp_->finish_gradients();
  }
  void share_state() override { ddp_->broadcast_state(); }
  void share_buffers() override { ddp_->broadcast_buffers(); }
  void trace_communication(const StepProfiler* profiler) override { ddp_->trace_buckets(profiler); }
  std::vector<AllReduceSpan> traced_communication() const override { return ddp_->traced(); }

 private:
  GradientCommunicator gradients_;
  std::unique_ptr<DistributedDataParallel> ddp_;
};

// Replicas of the model on several devices of this process.
class Replicated : public TrainingStrategy {
 public:
  Replicated(const TrainConfig& c, const ResNetConfig& mc, const World& world)
      : dp_(mc, make_backends(device_request(c), &world), c.seed),
        cuda_(c.device == DeviceKind::cuda),
        share_device_(c.dp_share_device) {}
  ResNet& model() override { return dp_.primary(); }
  Backend& backend() override { return dp_.primary_backend(); }
  std::vector<Backend*> backends() override {
    std::vector<Backend*> all;
    for (int d = 0; d < dp_.devices(); ++d) all.push_back(&dp_.backend(d));
    return all;
  }
  std::string device_name() override {
    if (!cuda_) return str_cat("DataParallel over ", dp_.devices(), " CPU devices");
    return str_cat("DataParallel over ", dp_.devices(), " CUDA devices",
                   share_device_ ? " all on cuda:0 (--dp-share-device, a test aid)" : "",
                   ", device 0 ", backend().name());
  }
  void forward_backward(const DeviceBatch& batch, const LossSettings& loss, bool,
                        StepProfiler* profiler) override {
    dp_.step(batch.images, batch.labels, loss, profiler);
  }
  std::vector<LossValue> take_losses() override { return dp_.take_losses(); }

 private:
  DataParallel dp_;
  bool cuda_, share_device_;
};

}  // namespace

std::unique_ptr<TrainingStrategy> make_strategy(const TrainConfig& c, const ResNetConfig& mc,
                                                const World& world, Communicator& mpi) {
  if (c.mode == Mode::dp) {
    RT_CHECK_AS(ConfigError, world.size() == 1,
                "train: --mode dp drives every device from one process; run it without mpirun "
                "(this job has ",
                world.size(), " ranks)");
    return std::make_unique<Replicated>(c, mc, world);
  }
  if (world.size() > 1) return std::make_unique<Distributed>(c, mc, world, mpi);
  return std::make_unique<OneDevice>(c, mc, world);
}

}  // namespace ringtrain
