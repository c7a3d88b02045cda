#pragma once
// Helpers shared by the unit tests: random tensors and central finite differences.
#include <functional>
#include <random>

#include "ringtrain/core/tensor.hpp"

namespace ringtrain::test {

template <class T>
Tensor random_tensor(const Shape& shape, std::mt19937_64& rng, double scale = 1.0) {
  Tensor t = Tensor::zeros(shape, dtype_of<T>());
  std::normal_distribution<double> dist(0.0, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = static_cast<T>(dist(rng));
  return t;
}

// sum(y * weights): the scalar whose gradient at y is `weights`.
template <class T>
double weighted_sum(const Tensor& y, const Tensor& weights) {
  double s = 0;
  for (int64_t i = 0; i < y.numel(); ++i) s += double(y.data<T>()[i]) * weights.data<T>()[i];
  return s;
}

// Largest |analytic - numeric| / max(1, |numeric|) over every element of `x`, where numeric is
// the central difference of loss() with step h.
template <class T>
double max_grad_error(Tensor& x, const Tensor& analytic, const std::function<double()>& loss,
                      double h) {
  double worst = 0;
  T* p = x.data<T>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    const T saved = p[i];
    p[i] = static_cast<T>(saved + h);
    const double up = loss();
    p[i] = static_cast<T>(saved - h);
    const double down = loss();
    p[i] = saved;
    const double numeric = (up - down) / (2 * h);
    const double err = std::abs(double(analytic.data<T>()[i]) - numeric) /
                       std::max(1.0, std::abs(numeric));
    worst = std::max(worst, err);
  }
  return worst;
}

}  // namespace ringtrain::test
