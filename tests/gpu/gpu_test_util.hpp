#pragma once
// Helpers of the GPU tests: each CUDA op runs on inputs the CPU reference also sees (rounded to
// the compute dtype first), and the results are compared on the host in f32 NCHW.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>

#include "../support/finite_check.hpp"
#include "ringtrain/backend/cuda/cuda_backend.hpp"
#include "ringtrain/backend/devices.hpp"
#include "ringtrain/core/half.hpp"

namespace ringtrain::test {

// RINGTRAIN_REQUIRE_GPU=1: a GPU test that would skip fails.
inline bool gpu_required() {
  const char* value = std::getenv("RINGTRAIN_REQUIRE_GPU");
  return value != nullptr && std::string(value) == "1";
}

// Skips the test, saying why, where no CUDA device can be used; with RINGTRAIN_REQUIRE_GPU=1
// (the GPU check sets it) that is a failure instead: a GPU machine that skips has not tested.
#define RT_SKIP_WITHOUT_GPU()                                                                 \
  do {                                                                                        \
    const ::ringtrain::DeviceInventory inventory = ::ringtrain::probe_devices();              \
    if (inventory.cuda_devices == 0) {                                                        \
      if (::ringtrain::test::gpu_required())                                                  \
        GTEST_FAIL() << "RINGTRAIN_REQUIRE_GPU=1 but no CUDA device: " << inventory.why_none; \
      GTEST_SKIP() << "no CUDA device to test on: " << inventory.why_none;                    \
    }                                                                                         \
  } while (0)

// Note: RINGTRAIN_CONV_ALGO_CACHE names a conv algorithm cache file for the tests' backends, so
// the GPU check's test processes share cuDNN's searches instead of each running its own.
inline std::unique_ptr<Backend> gpu_backend(DType compute, bool deterministic = false) {
  CudaOptions o;
  o.compute = compute;
  o.deterministic = deterministic;
  if (const char* cache = std::getenv("RINGTRAIN_CONV_ALGO_CACHE")) o.conv_algo_cache = cache;
  return make_cuda_backend(o);
}

inline Tensor random_f32(const Shape& shape, std::mt19937_64& rng, double scale = 1.0,
                         double mean = 0.0) {
  Tensor t = Tensor::zeros(shape, DType::f32);
  std::normal_distribution<double> dist(mean, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(dist(rng));
  return t;
}

inline float round_to(DType dtype, float v) {
  if (dtype == DType::bf16) return bf16_to_float(float_to_bf16(v));
  if (dtype == DType::f16) return f16_to_float(float_to_f16(v));
  return v;
}

// The host f32 tensor with every value rounded through `dtype`: what the GPU computes on.
inline Tensor rounded(const Tensor& host, DType dtype) {
  Tensor out = Tensor::zeros(host.shape(), DType::f32);
  for (int64_t i = 0; i < host.numel(); ++i)
    out.data<float>()[i] = round_to(dtype, host.data<float>()[i]);
  return out;
}

// The host f32 tensor times k: what a gradient that accumulates holds after k passes.
inline Tensor times(const Tensor& host, float k) {
  Tensor out = Tensor::zeros(host.shape(), DType::f32);
  for (int64_t i = 0; i < host.numel(); ++i) out.data<float>()[i] = k * host.data<float>()[i];
  return out;
}

// Host f32 NCHW values into a new device tensor of `dtype` (NHWC when 4-D).
inline Tensor upload(Backend& gpu, const Tensor& host, DType dtype) {
  Tensor typed = Tensor::zeros(host.shape(), dtype);
  for (int64_t i = 0; i < host.numel(); ++i) {
    const float v = host.data<float>()[i];
    if (dtype == DType::f32) {
      typed.data<float>()[i] = v;
    } else {
      static_cast<uint16_t*>(typed.raw())[i] =
          dtype == DType::bf16 ? float_to_bf16(v) : float_to_f16(v);
    }
  }
  Tensor dev = gpu.zeros(host.shape(), dtype);
  gpu.copy(typed, dev);
  return dev;
}

// A device tensor (any float dtype and layout) as host f32 NCHW.
inline Tensor download(Backend& gpu, const Tensor& dev) {
  Tensor typed = Tensor::zeros(dev.shape(), dev.dtype());
  gpu.copy(dev, typed);
  if (dev.dtype() == DType::f32) return typed;
  Tensor out = Tensor::zeros(dev.shape(), DType::f32);
  for (int64_t i = 0; i < dev.numel(); ++i) {
    const uint16_t h = static_cast<const uint16_t*>(typed.raw())[i];
    out.data<float>()[i] = dev.dtype() == DType::bf16 ? bf16_to_float(h) : f16_to_float(h);
  }
  return out;
}

// max |got - want| relative to the largest |want| (1 when want is all zeros).
inline double max_rel_diff(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.shape(), want.shape());
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    if (!finite_or_fail(i, got.data<float>()[i], want.data<float>()[i])) return kNotFinite;
    worst = std::max(worst, double(std::abs(got.data<float>()[i] - want.data<float>()[i])));
    scale = std::max(scale, double(std::abs(want.data<float>()[i])));
  }
  return worst / (scale > 0 ? scale : 1.0);
}

// The tolerance of one op: f32 within 1e-4, 16-bit types within 1e-2 of the largest value.
inline double tolerance(DType dtype) {
  return dtype == DType::f32 ? 1e-4 : 1e-2;
}

}  // namespace ringtrain::test
