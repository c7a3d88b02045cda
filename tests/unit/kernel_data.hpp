#pragma once
// Test data of the kernel-body tests: values that bf16 holds exactly (so a bf16 body and the CPU
// backend's f32 op read the same numbers), and f32 tensors of them for the CPU backend.
#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "ringtrain/core/half.hpp"
#include "ringtrain/core/tensor.hpp"

namespace ringtrain::test {

// n values in [-2, 2], a quarter of them exactly 0, each representable in bf16.
inline std::vector<float> bf16_exact_values(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-2.f, 2.f);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = rng() % 4 == 0 ? 0.f : bf16_to_float(float_to_bf16(dist(rng)));
  return v;
}

// n multiples of 1/8 in [-2, 2]: bf16 holds them exactly, and f32 every sum of up to 2^18 of
// them, whatever the order of the additions.
inline std::vector<float> eighths(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = static_cast<float>(static_cast<int>(rng() % 33) - 16) / 8.f;
  return v;
}

inline std::vector<float> rounded_to_bf16(std::vector<float> v) {
  for (float& x : v) x = bf16_to_float(float_to_bf16(x));
  return v;
}

// An f32 host tensor of `shape` holding v.
inline Tensor f32_tensor(const std::vector<float>& v, const Shape& shape) {
  Tensor t = Tensor::zeros(shape, DType::f32);
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

inline std::vector<float> values_of(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

}  // namespace ringtrain::test
