#include "ringtrain/parallel/data_parallel.hpp"

#include <future>
#include <system_error>

#include "ringtrain/core/thread_pool.hpp"

namespace ringtrain {

DataParallel::DataParallel(const ResNetConfig& config, int devices, int threads_per_device,
                           uint64_t seed) {
  RT_CHECK(devices > 0, "dp: --devices must be positive, got ", devices);
  for (int d = 0; d < devices; ++d) {
    Replica r;
    r.backend = std::make_unique<CpuBackend>(threads_per_device);
    r.model = std::make_unique<ResNet>(config, *r.backend, DType::f32, seed);
    replicas_.push_back(std::move(r));
  }
}

// Device 0's parameters and buffers to every other device; their gradients start from zero.
void DataParallel::replicate() {
  ParameterSet& main = primary().parameters();
  for (size_t d = 1; d < replicas_.size(); ++d) {
    Backend& backend = *replicas_[d].backend;
    ParameterSet& p = replicas_[d].model->parameters();
    backend.copy(main.flat_params(), p.flat_params());
    p.refresh_weights(backend);
    backend.copy(main.flat_buffers(), p.flat_buffers());
    p.zero_grad(backend);
  }
}

BatchResult DataParallel::step(const Tensor& images, const Tensor& labels, const LossSettings& loss,
                               StepProfiler* profiler) {
  const int64_t n = images.dim(0), devices = static_cast<int64_t>(replicas_.size());
  RT_CHECK(n % devices == 0, "dp: batch of ", n, " does not split evenly over ", devices,
           " devices");
  const int64_t chunk = n / devices;
  const Shape image_shape = {chunk, images.dim(1), images.dim(2), images.dim(3)};
  const int64_t image_elements = shape_numel(image_shape);
  if (profiler) profiler->start(Phase::copy);
  replicate();

  // Scatter and run the replicas in parallel; each scales its loss gradient by its share.
  if (profiler) profiler->start(Phase::forward);
  LossSettings share = loss;
  share.grad_scale /= static_cast<double>(devices);
  std::vector<std::future<BatchResult>> running;
  for (size_t d = 0; d < replicas_.size(); ++d) {
    auto replica_step = [&, d] {
      const int64_t i = static_cast<int64_t>(d);
      const Tensor x = images.reshaped({images.numel()}).slice(i * image_elements, image_shape);
      const Tensor y = labels.slice(i * chunk, {chunk});
      return forward_backward(*replicas_[d].model, x, y, share);
    };
    try {
      running.push_back(std::async(std::launch::async, replica_step));
    } catch (const std::system_error& e) {
      // Note: the replicas already started finish before `running` is destroyed.
      throw thread_start_error("DataParallel replica", static_cast<int>(d),
                               static_cast<int>(replicas_.size()), e);
    }
  }
  BatchResult total;
  for (auto& f : running) {
    const BatchResult s = f.get();
    total.loss += s.loss / static_cast<double>(devices);
    total.correct += s.correct;
  }

  // Reduce onto device 0, one device after another.
  if (profiler) profiler->start(Phase::comm);
  Tensor& grads = primary().parameters().flat_grads();
  for (size_t d = 1; d < replicas_.size(); ++d)
    primary_backend().add(grads, replicas_[d].model->parameters().flat_grads(), grads);
  return total;
}

}  // namespace ringtrain
