#include "ringtrain/parallel/data_parallel.hpp"

#include <spdlog/spdlog.h>

#include <future>
#include <system_error>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/backend/devices.hpp"
#include "ringtrain/core/thread_pool.hpp"

namespace ringtrain {

DataParallel::DataParallel(const ResNetConfig& config,
                           std::vector<std::unique_ptr<Backend>> backends, uint64_t seed) {
  RT_CHECK(!backends.empty(), "DataParallel: needs at least one device's backend");
  for (std::unique_ptr<Backend>& backend : backends) {
    Replica r;
    r.backend = std::move(backend);
    r.backend->bind_thread();
    r.model = std::make_unique<ResNet>(config, *r.backend, DType::f32, seed);
    replicas_.push_back(std::move(r));
  }
  primary_backend().bind_thread();
  if (replicas_.size() > 1)
    staging_ = primary_backend().zeros(primary().parameters().flat_grads().shape(),
                                       primary().parameters().flat_grads().dtype());
  connect_devices();
}

// Note: each replica's device memory is released with its device current, as its CUDA handles
// and streams were made; a device that cannot be made current any more is only warned about.
DataParallel::~DataParallel() {
  staging_ = Tensor();
  for (size_t d = replicas_.size(); d-- > 0;) {
    try {
      replicas_[d].backend->bind_thread();
    } catch (const std::exception& e) {
      spdlog::warn("DataParallel: releasing replica {}: {}", d, e.what());
    }
    replicas_[d] = Replica();
  }
}

// Peer access between device 0 and every other CUDA device, and the path each pair's copies take.
void DataParallel::connect_devices() {
  const DeviceId main = primary_backend().device_id();
  for (size_t d = 1; d < replicas_.size(); ++d) {
    const DeviceId other = replicas_[d].backend->device_id();
    if (main.kind != DeviceKind::cuda || other.kind != DeviceKind::cuda) continue;
    if (other == main) {
      spdlog::info("DataParallel: replica {} shares {} with replica 0 (--dp-share-device)", d,
                   main.str());
      continue;
    }
    const std::string path = enable_peer_access(main.index, other.index);
    spdlog::info("DataParallel: copies between {} and {} go {}", main.str(), other.str(), path);
  }
}

// Device 0's parameters and buffers to every other device; their gradients start from zero.
void DataParallel::replicate() {
  primary_backend().synchronize();  // the last update is done before other devices read it
  ParameterSet& main = primary().parameters();
  for (size_t d = 1; d < replicas_.size(); ++d) {
    Backend& backend = *replicas_[d].backend;
    ParameterSet& p = replicas_[d].model->parameters();
    backend.bind_thread();
    backend.copy(main.flat_params(), p.flat_params());
    p.refresh_weights(backend);
    backend.copy(main.flat_buffers(), p.flat_buffers());
    p.zero_grad(backend);
  }
  primary_backend().bind_thread();
}

// Chunk d of the batch on device 0 to replica d's own input tensors (device 0 reads its chunk
// in place).
void DataParallel::scatter(const Tensor& images, const Tensor& labels) {
  const int64_t n = images.dim(0), devices = static_cast<int64_t>(replicas_.size());
  RT_CHECK(n % devices == 0, "dp: batch of ", n, " does not split evenly over ", devices,
           " devices");
  const int64_t chunk = n / devices;
  const Shape image_shape = {chunk, images.dim(1), images.dim(2), images.dim(3)};
  const int64_t image_elements = shape_numel(image_shape);
  primary_backend().synchronize();  // the batch has arrived on device 0
  for (size_t d = 0; d < replicas_.size(); ++d) {
    const int64_t i = static_cast<int64_t>(d);
    const Tensor x = images.reshaped({images.numel()})
                         .slice(i * image_elements, image_shape)
                         .with_layout(images.layout());
    const Tensor y = labels.slice(i * chunk, {chunk});
    Replica& r = replicas_[d];
    if (d == 0) {
      r.images = x;
      r.labels = y;
      continue;
    }
    r.backend->bind_thread();
    if (r.images.shape() != x.shape() || r.images.dtype() != x.dtype())
      r.images = r.backend->zeros(x.shape(), x.dtype());
    if (r.labels.shape() != y.shape() || r.labels.dtype() != y.dtype())
      r.labels = r.backend->zeros(y.shape(), y.dtype());
    r.backend->copy(x, r.images);
    r.backend->copy(y, r.labels);
  }
  primary_backend().bind_thread();
}

void DataParallel::on_every_replica(const std::function<void(size_t)>& task) {
  std::vector<std::future<void>> running;
  for (size_t d = 0; d < replicas_.size(); ++d) {
    auto replica_task = [this, &task, d] {
      Backend& backend = *replicas_[d].backend;
      backend.bind_thread();
      task(d);
      backend.synchronize();
    };
    try {
      running.push_back(std::async(std::launch::async, replica_task));
    } catch (const std::system_error& e) {
      // Note: the replicas already started finish before `running` is destroyed.
      throw thread_start_error("DataParallel replica", static_cast<int>(d),
                               static_cast<int>(replicas_.size()), e);
    }
  }
  for (auto& f : running) f.get();
}

// Note: one replica after another onto device 0, as DataParallel's reduce does; the serial
// copies and adds on one device are the cost the baseline is meant to show.
void DataParallel::reduce() {
  Backend& main = primary_backend();
  Tensor& grads = primary().parameters().flat_grads();
  for (size_t d = 1; d < replicas_.size(); ++d) {
    main.copy(replicas_[d].model->parameters().flat_grads(), staging_);
    main.add(grads, staging_, grads);
  }
}

void DataParallel::step(const Tensor& images, const Tensor& labels, const LossSettings& loss,
                        StepProfiler* profiler) {
  if (profiler) profiler->start(Phase::replicate);
  replicate();
  if (profiler) profiler->start(Phase::scatter);
  scatter(images, labels);

  // Each replica scales its loss gradient by its share of the batch.
  if (profiler) profiler->start(Phase::forward);
  LossSettings share = loss;
  share.grad_scale /= static_cast<double>(replicas_.size());
  on_every_replica([&](size_t d) {
    Replica& r = replicas_[d];
    record_forward_loss(*r.model, r.images, r.labels, share);
  });
  if (profiler) profiler->start(Phase::backward);
  on_every_replica([&](size_t d) { backward_from_loss(*replicas_[d].model); });

  if (profiler) profiler->start(Phase::comm_wait);
  reduce();
}

std::vector<LossValue> DataParallel::take_losses() {
  const double devices = static_cast<double>(replicas_.size());
  std::vector<LossValue> total;
  for (size_t d = 0; d < replicas_.size(); ++d) {
    replicas_[d].backend->bind_thread();
    const std::vector<LossValue> part = replicas_[d].backend->take_losses();
    total.resize(part.size());
    for (size_t i = 0; i < part.size(); ++i) {
      total[i].loss += part[i].loss / devices;
      total[i].correct += part[i].correct;
    }
  }
  primary_backend().bind_thread();
  return total;
}

}  // namespace ringtrain
