#pragma once
// Helpers shared by the unit tests: random tensors and central finite differences.
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>

#include "../support/finite_check.hpp"
#include "ringtrain/core/error.hpp"
#include "ringtrain/core/tensor.hpp"

namespace ringtrain::test {

// A path for a test's file in this test process's temporary folder (two checkouts' tests may run
// at once on one machine); each test names its own files.
// Note: the folder is made new by mkdtemp, not named by the process id alone: a folder left by a
// killed run whose id is reused would hold files that a test expects not to exist.
inline std::string temp_path(const std::string& name) {
  static const std::filesystem::path dir = [] {
    std::string pattern = (std::filesystem::temp_directory_path() /
                           ("ringtrain_unit_tests_" + std::to_string(::getpid()) + "_XXXXXX"))
                              .string();
    RT_CHECK(::mkdtemp(pattern.data()), "temp_path: mkdtemp ", pattern, ": ", std::strerror(errno));
    return std::filesystem::path(pattern);
  }();
  return (dir / name).string();
}

// The message of the Error that f throws ("" when it throws none).
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

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
    if (!finite_or_fail(i, double(analytic.data<T>()[i]), numeric)) return kNotFinite;
    const double err =
        std::abs(double(analytic.data<T>()[i]) - numeric) / std::max(1.0, std::abs(numeric));
    worst = std::max(worst, err);
  }
  return worst;
}

}  // namespace ringtrain::test

namespace ringtrain::test {

template <class To, class From>
Tensor cast(const Tensor& src) {
  Tensor out = Tensor::zeros(src.shape(), dtype_of<To>());
  for (int64_t i = 0; i < src.numel(); ++i)
    out.data<To>()[i] = static_cast<To>(src.data<From>()[i]);
  return out;
}

// Largest |a - b| / max(scale, |b|) with a in f32, b the f64 reference.
inline double max_rel_diff(const Tensor& a32, const Tensor& b64, double scale = 1.0) {
  double worst = 0;
  for (int64_t i = 0; i < b64.numel(); ++i) {
    const double b = b64.data<double>()[i];
    if (!finite_or_fail(i, a32.data<float>()[i], b)) return kNotFinite;
    worst = std::max(worst, std::abs(a32.data<float>()[i] - b) / std::max(scale, std::abs(b)));
  }
  return worst;
}

// ||a - b|| / ||b|| over two host tensors, each f32 or f64.
inline double relative_l2(const Tensor& a, const Tensor& b) {
  const auto in_f64 = [](const Tensor& t) {
    return t.dtype() == DType::f64 ? t : cast<double, float>(t);
  };
  const Tensor x = in_f64(a), y = in_f64(b);
  const double *p = x.data<double>(), *q = y.data<double>();
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    if (!finite_or_fail(i, p[i], q[i])) return kNotFinite;
    diff += (p[i] - q[i]) * (p[i] - q[i]);
    norm += q[i] * q[i];
  }
  return std::sqrt(diff / norm);
}

}  // namespace ringtrain::test
