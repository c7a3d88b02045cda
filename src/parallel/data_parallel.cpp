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

DataParallel::StepResult DataParallel::step(const Tensor& images, const Tensor& labels,
                                            float label_smoothing, double grad_scale,
                                            StepProfiler* profiler) {
  const int64_t n = images.dim(0), devices = static_cast<int64_t>(replicas_.size());
  RT_CHECK(n % devices == 0, "dp: batch of ", n, " does not split evenly over ", devices,
           " devices");
  const int64_t chunk = n / devices;
  const Shape image_shape = {chunk, images.dim(1), images.dim(2), images.dim(3)};
  const int64_t image_elements = shape_numel(image_shape);

  // Replicate: device 0's parameters and buffers to every other device.
  if (profiler) profiler->start(Phase::copy);
  ParameterSet& main = primary().parameters();
  for (size_t d = 1; d < replicas_.size(); ++d) {
    ParameterSet& p = replicas_[d].model->parameters();
    replicas_[d].backend->copy(main.flat_params(), p.flat_params());
    p.refresh_weights(*replicas_[d].backend);
    replicas_[d].backend->copy(main.flat_buffers(), p.flat_buffers());
  }

  // Scatter and run the replicas in parallel; each scales its loss gradient by its share.
  if (profiler) profiler->start(Phase::forward);
  std::vector<std::future<StepResult>> running;
  for (size_t d = 0; d < replicas_.size(); ++d) {
    auto replica_step = [&, d] {
      Replica& r = replicas_[d];
      const int64_t i = static_cast<int64_t>(d);
      const Tensor x = images.reshaped({images.numel()}).slice(i * image_elements, image_shape);
      const Tensor y = labels.slice(i * chunk, {chunk});
      if (!r.dlogits.defined() || r.dlogits.dim(0) != chunk)
        r.dlogits = r.backend->zeros({chunk, primary().config().classes}, DType::f32);
      const Tensor& logits = r.model->forward(x, true);
      StepResult s;
      s.loss = r.backend->softmax_cross_entropy(logits, y, label_smoothing, &r.dlogits);
      s.correct = r.backend->count_correct(logits, y);
      r.backend->scale(r.dlogits, grad_scale / static_cast<double>(devices));
      r.model->backward(r.dlogits);
      return s;
    };
    try {
      running.push_back(std::async(std::launch::async, replica_step));
    } catch (const std::system_error& e) {
      // Note: the replicas already started finish before `running` is destroyed.
      throw thread_start_error("DataParallel replica", static_cast<int>(d),
                               static_cast<int>(replicas_.size()), e);
    }
  }
  StepResult total;
  for (auto& f : running) {
    const StepResult s = f.get();
    total.loss += s.loss / static_cast<double>(devices);
    total.correct += s.correct;
  }

  // Reduce onto device 0, one device after another.
  if (profiler) profiler->start(Phase::comm);
  Tensor& grads = main.flat_grads();
  for (size_t d = 1; d < replicas_.size(); ++d)
    primary_backend().add(grads, replicas_[d].model->parameters().flat_grads(), grads);
  return total;
}

}  // namespace ringtrain
