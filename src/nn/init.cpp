#include "ringtrain/nn/init.hpp"

#include <vector>

namespace ringtrain {
namespace {

template <class Dist>
void init_from(Device& device, Tensor& t, Dist dist, std::mt19937_64& rng) {
  std::vector<double> values(static_cast<size_t>(t.numel()));
  for (double& v : values) v = dist(rng);
  Tensor host = Tensor::zeros(t.shape(), t.dtype());
  if (t.dtype() == DType::f64) {
    std::copy(values.begin(), values.end(), host.data<double>());
  } else {
    RT_CHECK(t.dtype() == DType::f32, "init: parameters are f32 or f64, got ", t.describe());
    std::copy(values.begin(), values.end(), host.data<float>());
  }
  device.copy(host, t);
}

}  // namespace

void init_normal(Device& device, Tensor t, double stddev, std::mt19937_64& rng) {
  init_from(device, t, std::normal_distribution<double>(0.0, stddev), rng);
}

void init_uniform(Device& device, Tensor t, double bound, std::mt19937_64& rng) {
  init_from(device, t, std::uniform_real_distribution<double>(-bound, bound), rng);
}

}  // namespace ringtrain
